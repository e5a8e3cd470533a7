"""The society bench's figures: the diffusion curve of each notion (knowers by game hour) and the
who-knows-whom graph before and after the run, side by side (networkx layout, matplotlib Agg).

One PNG of each kind per seed and architecture; the names are returned for the bench's report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def write_plots(row: dict[str, Any], folder: Path) -> list[str]:
    """Write ``<ablation>-seed<N>-diffusion.png`` and ``...-graph.png`` for one bench row."""
    import matplotlib

    matplotlib.use("Agg")
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{row['ablation']}-seed{row['seed']}"
    return [str(diffusion_png(row, folder / f"{stem}-diffusion.png")), str(graph_png(row, folder / f"{stem}-graph.png"))]


def diffusion_png(row: dict[str, Any], path: Path) -> Path:
    """Knowers (from memory) of each notion by game hour, with the paper's end points marked."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4), dpi=100)
    for key, figures in row["notions"].items():
        hours = figures.get("by_hour") or []
        if hours:
            ax.step(range(len(hours)), [n for _, n in hours], where="post", label=f"{key}: {figures['what']}")
    n = row["residents"]
    ax.axhline(0.48 * n, color="grey", ls=":", lw=1, label="paper: party 48%")
    ax.axhline(0.32 * n, color="grey", ls="--", lw=1, label="paper: candidacy 32%")
    first = next((f["by_hour"] for f in row["notions"].values() if f.get("by_hour")), [])
    step = max(1, len(first) // 8)
    ax.set_xticks(range(0, len(first), step), [first[i][0] for i in range(0, len(first), step)], rotation=30, fontsize=7)
    ax.set_ylim(0, n)
    ax.set_ylabel(f"residents who know (of {n})")
    ax.set_title(f"Diffusion, {row['ablation']} seed {row['seed']}")
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def graph_png(row: dict[str, Any], path: Path) -> Path:
    """Who knows whom before (residents file) and after (interviews checked against memory)."""
    import matplotlib.pyplot as plt
    import networkx as nx

    names = sorted({n for pair in row["edges_before"] + row["edges_after"] for n in pair} | set(row.get("names", [])))
    graphs = []
    for key in ("edges_before", "edges_after"):
        g = nx.Graph()
        g.add_nodes_from(names)
        g.add_edges_from(tuple(p) for p in row[key])
        graphs.append(g)
    pos = nx.circular_layout(graphs[0]) if len(names) < 4 else nx.spring_layout(graphs[1], seed=0)
    fig, axes = plt.subplots(1, 2, figsize=(12, 6), dpi=100)
    labels = {n: n.split()[0] for n in names}
    for ax, g, title in zip(axes, graphs, (f"before: density {row['density_before']}",
                                           f"after: density {row['density_after']}")):
        nx.draw_networkx(g, pos, ax=ax, labels=labels, node_size=220, font_size=7, node_color="#9ecae1",
                         edge_color="#888888", width=0.6)
        ax.set_title(title)
        ax.axis("off")
    fig.suptitle(f"Who knows whom, {row['ablation']} seed {row['seed']} (paper 0.167 -> 0.74)")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
