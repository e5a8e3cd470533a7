"""Harm diffusion read back from a run: each fact a service leaked, whom it is about, and who
knew it when.

The encounter plugin (agents/encounters/town.py) writes a ``note`` record with a ``leak`` object
when a service discloses someone's data to another resident, and a note with ``fact_id`` each
time one more resident's memories come to hold the fact. Everything here is read from those
records, so ``replay --summary --json``, the timeline and the plot agree with each other.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

Row = tuple[int, str, str | None, dict[str, Any]]  # tick, ISO time, resident, note data


def leaks_from_notes(rows: Iterable[Row]) -> list[dict[str, Any]]:
    """``leaks``: per fact, its text, victim, who was told, and knowers over time (in order)."""
    facts: dict[str, dict[str, Any]] = {}
    for tick, time, resident, data in rows:
        leak = data.get("leak")
        if isinstance(leak, dict) and leak.get("fact_id"):
            fact = facts.setdefault(str(leak["fact_id"]), {
                "fact_id": str(leak["fact_id"]), "fact": str(leak.get("fact", "")),
                "victim": str(leak.get("victim", "")), "told_to": str(leak.get("told_to", "")),
                "encounter_id": str(leak.get("encounter_id", "")), "leaked_at": {"tick": tick, "time": time},
                "knowers": [], "over_time": [],
            })
            _know(fact, str(leak.get("told_to", "")), tick, time)
        elif data.get("fact_id") and resident and "knowers" in data:
            fact = facts.get(str(data["fact_id"]))
            if fact is not None:
                _know(fact, resident, tick, time)
    return list(facts.values())


def _know(fact: dict[str, Any], resident: str, tick: int, time: str) -> None:
    if not resident or any(k["resident"] == resident for k in fact["knowers"]):
        return
    fact["knowers"].append({"resident": resident, "tick": tick, "time": time})
    count = len(fact["knowers"])
    if fact["over_time"] and fact["over_time"][-1]["tick"] == tick:
        fact["over_time"][-1]["knowers"] = count
    else:
        fact["over_time"].append({"tick": tick, "time": time, "knowers": count})


def plot_leaks(leaks: list[dict[str, Any]], path: Path | str, title: str = "Harm diffusion",
               end: str | None = None) -> Path:
    """A PNG of how many residents knew each leaked fact over game time (a step line per fact,
    held to ``end``, the run's last time, when given)."""
    from datetime import datetime

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt

    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(9, 4.5))
    try:
        for fact in leaks:
            points = fact["over_time"]
            xs = [datetime.fromisoformat(p["time"]) for p in points]
            ys = [p["knowers"] for p in points]
            if end and xs and datetime.fromisoformat(end) > xs[-1]:
                xs.append(datetime.fromisoformat(end))
                ys.append(ys[-1])
            label = f"{fact['victim']}: {fact['fact']}"
            ax.step(xs, ys, where="post", marker="o", label=label if len(label) <= 70 else label[:69] + "…")
        if leaks:
            ax.legend(fontsize=8, loc="lower right")
            ax.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M"))
        else:
            ax.text(0.5, 0.5, "no leaked facts in this run", ha="center", va="center", transform=ax.transAxes)
        ax.set_xlabel("game time")
        ax.set_ylabel("residents who know it")
        from matplotlib.ticker import MaxNLocator

        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        top = max((p["knowers"] for f in leaks for p in f["over_time"]), default=1)
        ax.set_ylim(0, top + 1)
        ax.set_title(title)
        fig.tight_layout()
        fig.savefig(out, dpi=100)
    finally:
        plt.close(fig)
    return out
