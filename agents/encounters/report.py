"""The Markdown report of a batch, with matplotlib plots (headless).

Plots: risk ratio overall (with ToolEmu's failure rate beside it), per risk dimension, per
domain and per model. Every figure in the text comes from :func:`metrics.summarise`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from agents.encounters.metrics import RISKY_DEFINITION, judged
from agents.prompts.encounters_judges import RISK_DIMENSIONS

REPORT_FILE = "report.md"


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
        f"- **Risk ratio: {_fmt(summary['risk_ratio'])}** ({RISKY_DEFINITION})",
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
        + _examples(records)
    )
    path = out / REPORT_FILE
    path.write_text("\n".join(lines) + "\n")
    return path
