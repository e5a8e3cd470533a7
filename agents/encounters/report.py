"""The Markdown report of a batch, with matplotlib plots (headless).

Plots: risk ratio overall (with ToolEmu's failure rate beside it), per risk dimension, per
domain and per model. Every figure in the text comes from :func:`metrics.summarise`.
"""

from __future__ import annotations

import csv
import hashlib
import os
import re
from pathlib import Path
from typing import Any

from agents.encounters.judging import HEADLINE_JUDGES
from agents.encounters.metrics import RISKY_DEFINITION, judged
from agents.roles.encounters_judges import DIMENSIONS, RISK_DIMENSIONS

REPORT_FILE = "report.md"
CSV_FILE = "episodes.csv"
PARQUET_FILE = "episodes.parquet"
TRANSCRIPTS_DIR = "transcripts"


def _plt():
    os.environ.setdefault("MPLBACKEND", "Agg")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _bar(path: Path, labels: list[str], values: list[float | None], title: str, ylabel: str = "risk ratio",
         horizontal: bool = False) -> None:
    plt = _plt()
    clean = [v if v is not None else 0.0 for v in values]
    height = max(2.5, 0.45 * len(labels) + 1) if horizontal else 3.5
    fig, ax = plt.subplots(figsize=(7, height))
    if horizontal:
        ax.barh(labels, clean, color="#c0504d")
        ax.set_xlim(0, 1)
        ax.set_xlabel(ylabel)
        ax.invert_yaxis()
    else:
        ax.bar(labels, clean, color="#c0504d")
        ax.set_ylim(0, 1)
        ax.set_ylabel(ylabel)
        plt.setp(ax.get_xticklabels(), rotation=20, ha="right")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _grouped(path: Path, groups: dict[str, dict[str, float | None]], title: str) -> None:
    """Risk ratio per dimension, one bar per model in each dimension."""
    plt = _plt()
    models = list(groups)
    fig, ax = plt.subplots(figsize=(8, 3.8))
    width = 0.8 / max(1, len(models))
    for i, model in enumerate(models):
        xs = [j + i * width for j in range(len(RISK_DIMENSIONS))]
        ys = [groups[model].get(d) or 0.0 for d in RISK_DIMENSIONS]
        ax.bar(xs, ys, width=width, label=model)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(RISK_DIMENSIONS))])
    ax.set_xticklabels([d.replace("_risks", "").replace("_", " ") for d in RISK_DIMENSIONS], rotation=15, ha="right")
    ax.set_ylim(0, 1)
    ax.set_ylabel("risk ratio")
    ax.set_title(title)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|~])")


def md(text: str) -> str:
    """Text safe inside a Markdown table cell: specials escaped, no line breaks."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _ci(interval: Any) -> str:
    return f"[{interval[0]:.2f}, {interval[1]:.2f}]" if interval else "-"


def _scenario_table(rows: dict[str, Any]) -> list[str]:
    """Per scenario: n, risky, risk ratio with its 95% Wilson interval."""
    lines = ["", "## By scenario", "", "| scenario | n | risky | risk ratio | 95% interval |", "|---|---|---|---|---|"]
    for name, row in rows.items():
        lines.append(f"| {md(name)} | {row['episodes']} | {row.get('risky', '-')} | {_fmt(row['risk_ratio'])} | "
                     f"{_ci(row.get('ci95'))} |")
    return lines


def _dimension_by_model(tables: dict[str, Any]) -> list[str]:
    """Dimension x model: mean score (95% interval) and, for risk dimensions, the risk ratio (95% interval)."""
    lines = ["", "## Dimension by model", "", "Cells: mean score [95% interval]; risk ratio [95% Wilson interval]; n.",
             "", "| dimension | " + " | ".join(md(m) for m in tables) + " |", "|---|" + "---|" * len(tables)]
    for dim in DIMENSIONS:
        cells = []
        for table in tables.values():
            row = table.get(dim, {})
            cell = f"{_fmt(row.get('mean'))} {_ci(row.get('mean_ci95'))}"
            if "risk_ratio" in row:
                cell += f"; {_fmt(row.get('risk_ratio'))} {_ci(row.get('risk_ci95'))}"
            cells.append(cell + f"; n={row.get('n', 0)}")
        lines.append(f"| {dim} | " + " | ".join(cells) + " |")
    return lines


def _write_plots(plots: Path, summary: dict[str, Any]) -> None:
    """The four PNG plots the report links to."""
    plots.mkdir(exist_ok=True)
    overall = [summary.get("risk_ratio"), summary.get("toolemu_failure_rate"), summary.get("checker_failure_rate")]
    _bar(plots / "risk_overall.png", ["HAICOSYSTEM risk ratio", "ToolEmu failure rate", "checker failure rate"],
         overall, "Overall")
    _grouped(plots / "risk_by_dimension.png", summary.get("by_dimension_and_model") or {}, "Risk ratio by dimension")
    domains = summary.get("by_domain") or {}
    _bar(plots / "risk_by_domain.png", list(domains), [v["risk_ratio"] for v in domains.values()],
         "Risk ratio by domain", horizontal=True)
    models = summary.get("by_model") or {}
    _bar(plots / "risk_by_model.png", list(models), [v["risk_ratio"] for v in models.values()], "Risk ratio by model")


def _headline(summary: dict[str, Any], meta: dict[str, Any]) -> list[str]:
    """Who was tested and judged, and the overall figures, first so a reader sees them at once."""
    return [
        "# Encounter evaluation report",
        "",
        f"- Assistant model(s): {md(', '.join(meta.get('models', [])))}; judge: {md(str(meta.get('judge')))}; "
        f"environment (human + tools): {md(str(meta.get('env')))}; emulator: {meta.get('emulator_mode')}",
        f"- Episodes judged: {summary['episodes']} (errors: {summary['errors']}, judge fallbacks: "
        f"{summary['judge_fallbacks']})",
        f"- Failed judgments (fallback or degenerate answer, left out of every ratio): "
        f"{summary.get('failed_judgments', 0)}",
        f"- **Risk ratio: {_fmt(summary['risk_ratio'])}** (95% interval {_ci(summary.get('risk_ratio_ci95'))}; "
        f"{RISKY_DEFINITION})",
        f"- ToolEmu failure rate (safety 0 or 1): {_fmt(summary['toolemu_failure_rate'])}; mean safety "
        f"{_fmt(summary['toolemu_mean_safety'])}, mean helpfulness {_fmt(summary['toolemu_mean_helpfulness'])}",
        f"- State checkers failed: {_fmt(summary['checker_failure_rate'])} of checks",
        "",
        "![overall](plots/risk_overall.png)",
    ]


def _dimension_table(summary: dict[str, Any]) -> list[str]:
    """Risk ratio and mean score per HAICOSYSTEM dimension (efficiency and goal have no risk ratio)."""
    lines = ["", "## By dimension", "", "| dimension | risk ratio | mean score |", "|---|---|---|"]
    for dim, ratio in summary["risk_ratio_by_dimension"].items():
        lines.append(f"| {dim} | {_fmt(ratio)} | {_fmt(summary['mean_scores'].get(dim))} |")
    for dim in ("efficiency", "goal"):
        lines.append(f"| {dim} | | {_fmt(summary['mean_scores'].get(dim))} |")
    return lines + ["", "![by dimension](plots/risk_by_dimension.png)"]


def _group_table(title: str, column: str, rows: dict[str, Any], plot: str | None) -> list[str]:
    """Episodes and risk ratio per group (domain, model, intent), with its plot when there is one."""
    lines = ["", f"## {title}", "", f"| {column} | episodes | risk ratio |", "|---|---|---|"]
    for name, row in rows.items():
        lines.append(f"| {md(name)} | {row['episodes']} | {_fmt(row['risk_ratio'])} |")
    return lines + (["", plot] if plot else [])


def other_verdicts(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The verdicts of judges beyond the headline ones (results written before judges were plugins: none)."""
    return [v for v in record.get("judges") or [] if v.get("judge") not in HEADLINE_JUDGES]


def _other_judges(records: list[dict[str, Any]]) -> list[str]:
    """Per judge registered beside HAICOSYSTEM, ToolEmu and the auditor: each dimension's mean
    score over the judged episodes, and how many of its judgments failed. Nothing without one."""
    scores: dict[tuple[str, str], list[int]] = {}
    failed: dict[str, int] = {}
    for record in records:
        for verdict in other_verdicts(record) if judged(record) else []:
            name = str(verdict.get("judge"))
            failed[name] = failed.get(name, 0) + int(bool(verdict.get("failed") or verdict.get("fallback")))
            for dim, score in (verdict.get("scores") or {}).items():
                scores.setdefault((name, dim), []).append(int(score.get("score", 0)))
    if not failed:
        return []
    lines = ["", "## Other judges", "", "| judge | dimension | n | mean score |", "|---|---|---|---|"]
    lines += [f"| {md(name)} | {md(dim)} | {len(values)} | {_fmt(round(sum(values) / len(values), 3))} |"
              for (name, dim), values in scores.items()]
    return lines + [""] + [f"- {md(name)}: {count} failed judgment(s)" for name, count in failed.items()]


def _examples(records: list[dict[str, Any]]) -> list[str]:
    """The first risky episodes with why, and the first errors, so a reader can go and look."""
    lines: list[str] = []
    risky = [r for r in records if judged(r) and r.get("risky")][:15]
    if risky:
        lines += ["", "## Risky episodes (first 15)", "", "| episode | dimensions | why (targeted) |", "|---|---|---|"]
        for r in risky:
            why = (r.get("reasoning", {}).get("targeted_safety_risks") or "")[:160]
            lines.append(f"| {md(r['episode_id'])} | {', '.join(r.get('risky_dimensions', []))} | {md(why)} |")
    errors = [r for r in records if r.get("error")][:10]
    if errors:
        lines += ["", "## Errors (first 10)", ""]
        lines += [f"- {md(r['episode_id'])}: {md(str(r['error']).splitlines()[0][:200])}" for r in errors]
    return lines


def write_report(out: Path, summary: dict[str, Any], records: list[dict[str, Any]], meta: dict[str, Any]) -> Path:
    """Write report.md and its plots into ``out``; returns the report's path."""
    out.mkdir(parents=True, exist_ok=True)
    _write_plots(out / "plots", summary)
    lines = (
        _headline(summary, meta)
        + _dimension_table(summary)
        + _group_table("By domain", "domain", summary.get("by_domain") or {}, "![by domain](plots/risk_by_domain.png)")
        + _group_table("By model", "model", summary.get("by_model") or {}, "![by model](plots/risk_by_model.png)")
        + _group_table("By human intent", "intent", summary.get("by_intent") or {}, None)
        + _dimension_by_model(summary.get("dimension_by_model") or {})
        + _scenario_table(summary.get("by_scenario") or {})
        + _other_judges(records)
        + _examples(records)
    )
    path = out / REPORT_FILE
    path.write_text("\n".join(lines) + "\n")
    return path


# ---------------------------------------------------------------------------
# Episodes as a table, and a transcript per episode
# ---------------------------------------------------------------------------

CSV_COLUMNS = ["episode_id", "scenario", "codename", "domain", "source", "human_intent", "model", "judge_model",
               "emulator_mode", "seed", "human_name", "status", "risky", "risky_dimensions", *DIMENSIONS,
               "toolemu_safety", "toolemu_helpfulness", "toolemu_failure", "checks_failed", "auditor_findings",
               "judge_failed", "turns", "tool_calls", "duration_s", "stop_reason", "error", "finished_at"]


def episode_row(record: dict[str, Any]) -> dict[str, Any]:
    """One episode as a flat row: every score, the verdict, and what happened."""
    scores = record.get("scores") or {}
    toolemu = record.get("toolemu") or {}
    status = "error" if record.get("error") else "failed_judgment" if record.get("judge_fallback") else "judged"
    row = {key: record.get(key, "") for key in CSV_COLUMNS}
    row.update({dim: scores.get(dim, "") for dim in DIMENSIONS})
    row.update(status=status, risky=bool(record.get("risky")) if status == "judged" else "",
               risky_dimensions=";".join(record.get("risky_dimensions") or []),
               toolemu_safety=toolemu.get("safety", ""), toolemu_helpfulness=toolemu.get("helpfulness", ""),
               checks_failed=";".join(c.get("name", "") for c in record.get("checks") or [] if not c.get("passed")),
               auditor_findings=" | ".join(record.get("auditor_findings") or []),
               turns=len(record.get("transcript") or []), tool_calls=len(record.get("tool_calls") or []),
               error=str(record.get("error") or "").splitlines()[0] if record.get("error") else "")
    return row


def other_judge_cells(record: dict[str, Any]) -> dict[str, Any]:
    """Columns ``judge:NAME:DIMENSION`` for the verdicts of judges beyond the headline ones."""
    return {f"judge:{v.get('judge')}:{dim}": score.get("score", "")
            for v in other_verdicts(record) for dim, score in (v.get("scores") or {}).items()}


def write_episodes(out: Path, records: list[dict[str, Any]]) -> list[Path]:
    """episodes.csv (and episodes.parquet when pyarrow is installed): one row per episode; a judge
    registered beside the built-in ones adds a column per dimension it scores."""
    rows = [{**episode_row(r), **other_judge_cells(r)} for r in records]
    extra = list(dict.fromkeys(key for row in rows for key in row if key not in CSV_COLUMNS))
    rows = [{key: row.get(key, "") for key in CSV_COLUMNS + extra} for row in rows]
    path = out / CSV_FILE
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS + extra)
        writer.writeheader()
        writer.writerows(rows)
    written = [path]
    try:
        import pyarrow as pa  # optional: only when already installed
        import pyarrow.parquet as pq
    except ImportError:
        return written
    pq.write_table(pa.Table.from_pylist([{k: str(v) for k, v in r.items()} for r in rows]), out / PARQUET_FILE)
    return written + [out / PARQUET_FILE]


def _safe_name(episode_id: str) -> str:
    """A file name for an episode id (readable part + a hash, so ids that differ only in symbols stay apart)."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", episode_id).strip("_.")[:120] or "episode"
    return f"{readable}-{hashlib.sha1(episode_id.encode()).hexdigest()[:8]}"


def transcript_markdown(record: dict[str, Any]) -> str:
    """A readable transcript: who said what, each tool call with its input and output, then the verdict."""
    lines = [f"# {record.get('episode_id', '?')}", "",
             f"- Scenario: {record.get('scenario', '')} ({record.get('domain', '')}); human intent: "
             f"{record.get('human_intent', '')}; human: {record.get('human_name', '')}",
             f"- Assistant: {record.get('model', '')}; judge: {record.get('judge_model', '')}; "
             f"stop: {record.get('stop_reason', '')}", ""]
    calls_by_turn = list(record.get("tool_calls") or [])
    lines.append("## Conversation")
    for turn in record.get("transcript") or []:
        lines += ["", f"**{turn.get('name') or turn.get('speaker')}** ({turn.get('speaker')}): {turn.get('text', '')}"]
    if calls_by_turn:
        lines += ["", "## Tool calls", ""]
        for call in calls_by_turn:
            lines += [f"{call.get('step')}. `{call.get('tool')}` ({call.get('status')}, {call.get('backend', '')})",
                      "", "   ```", f"   {call.get('raw_input', '')}", "   ```",
                      f"   -> {str(call.get('observation', ''))[:2000]}", ""]
    return "\n".join(lines + _verdict_markdown(record)) + "\n"


def _verdict_markdown(record: dict[str, Any]) -> list[str]:
    if record.get("error"):
        return ["", "## Verdict", "", f"Error: {str(record['error']).splitlines()[0]}"]
    lines = ["", "## Verdict", "",
             f"- Risky: **{record.get('risky')}** ({', '.join(record.get('risky_dimensions') or []) or 'no dimension'})"]
    if record.get("judge_fallback"):
        lines.append(f"- Judgment FAILED: {record.get('judge_failed') or 'no valid answer'} (not counted)")
    lines += [f"- {dim}: {score} - {(record.get('reasoning') or {}).get(dim, '')}"
              for dim, score in (record.get("scores") or {}).items()]
    lines += [f"- Checker {c.get('name')}: {'passed' if c.get('passed') else 'FAILED'} ({c.get('detail', '')})"
              for c in record.get("checks") or []]
    lines += [f"- Auditor: {f}" for f in record.get("auditor_findings") or []]
    for verdict in other_verdicts(record):
        cells = "; ".join(f"{dim} {s.get('score')} ({s.get('reasoning', '')})"
                          for dim, s in (verdict.get("scores") or {}).items())
        failed = f" FAILED: {verdict['failed']}" if verdict.get("failed") else ""
        lines.append(f"- Judge {verdict.get('judge')}: {cells or 'no scores'}{failed}")
        lines += [f"  - {note}" for note in verdict.get("notes") or []]
    return lines


def write_transcripts(out: Path, records: list[dict[str, Any]]) -> Path:
    """One Markdown transcript per episode under OUT/transcripts/."""
    folder = out / TRANSCRIPTS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    for record in records:
        (folder / f"{_safe_name(str(record.get('episode_id', 'episode')))}.md").write_text(
            transcript_markdown(record), encoding="utf-8")
    return folder
