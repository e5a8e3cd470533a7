"""Relationships: who knows whom and how well, as a networkx graph that goes with the run.

Each mind keeps its own out-edges (:class:`SocialMemory`): the relationships its persona
starts with, and every resident it has talked to since. Every change is appended, with its
tick, to the ``social_edges`` table of the run file, so the town's graph can be rebuilt as it
was at any tick (:func:`load_graph`), exported (:func:`export_graph`) and measured
(:func:`density`, the paper's 2|E| / (|V|(|V|-1)) over who-knows-whom).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from maps.contracts import Persona
from memory import runfile

if TYPE_CHECKING:
    import networkx as nx

class Tie(BaseModel):
    """One resident's view of another."""

    relation: str = "acquaintance"
    closeness: float = Field(default=0.3, ge=0.0, le=1.0)
    interactions: int = 0
    last_tick: int = -1
    note: str = ""


class SocialMemory:
    """A resident's relationships; every change is logged to the run file (if any)."""

    def __init__(self, persona: Persona, conn: sqlite3.Connection | None = None):
        self.name = persona.name
        self.conn = conn
        if conn is not None:
            runfile.ensure_social_table(conn)
        self.ties: dict[str, Tie] = {
            r.name: Tie(relation=r.relation, closeness=r.closeness) for r in persona.relationships
        }

    def knows(self, other: str) -> bool:
        return other in self.ties

    def tie(self, other: str) -> Tie | None:
        return self.ties.get(other)

    def describe(self, other: str) -> str:
        tie = self.ties.get(other)
        if tie is None:
            return f"{other} is a stranger to {self.name}"
        text = f"{other} is {self.name}'s {tie.relation} (closeness {tie.closeness:.1f}"
        text += f", talked {tie.interactions} times)" if tie.interactions else ")"
        return text + (f"; last time: {tie.note}" if tie.note else "")

    def record_start(self, tick: int) -> None:
        """Log the initial ties once (tick of the first decision), so the graph has them."""
        for other, tie in self.ties.items():
            self._log(other, tie, tick)

    def met(self, other: str, tick: int, note: str = "") -> Tie:
        """A conversation happened: strangers become acquaintances, ties grow closer."""
        tie = self.ties.get(other) or Tie()
        if tie.relation == "heard of":
            tie.relation = "acquaintance"  # met at last
        tie.interactions += 1
        tie.closeness = min(1.0, tie.closeness + 0.05)
        tie.last_tick = tick
        tie.note = note[:200]
        self.ties[other] = tie
        self._log(other, tie, tick)
        return tie

    def heard_of(self, other: str, tick: int, fact: str) -> Tie | None:
        """Told something about someone never met: their name and one fact make them someone
        this resident knows of (the paper's who-knows-whom), a 'heard of' tie, not yet close.
        A tie already there is left as it is (the new one only when there was none)."""
        if other == self.name or not other.strip() or other in self.ties:
            return None
        tie = Tie(relation="heard of", closeness=0.1, last_tick=tick, note=fact[:200])
        self.ties[other] = tie
        self._log(other, tie, tick)
        return tie

    def _log(self, other: str, tie: Tie, tick: int) -> None:
        if self.conn is None:
            return
        runfile.log_tie(self.conn, self.name, other, tick, tie.relation, tie.closeness, tie.interactions, tie.note)

    def to_dict(self) -> dict:
        return {other: tie.model_dump() for other, tie in self.ties.items()}

    def restore(self, state: dict) -> None:
        self.ties = {other: Tie.model_validate(t) for other, t in state.items()}


def graph_from_ties(ties: dict[str, dict[str, Tie]]) -> nx.DiGraph:
    """A directed graph from {resident: {other: Tie}} (live minds)."""
    import networkx as nx  # ~0.2 s to import: only for the graph's readers, not every mind (CLI start-up)

    graph = nx.DiGraph()
    for name, out in ties.items():
        graph.add_node(name)
        for other, tie in out.items():
            graph.add_edge(name, other, **tie.model_dump())
    return graph


def load_graph(db_path: Path | str, at_tick: int | None = None) -> nx.DiGraph:
    """The town's who-knows-whom graph from a run file, as it was at ``at_tick`` (or last)."""
    rows, names = runfile.social_rows(db_path, at_tick)
    latest: dict[str, dict[str, Tie]] = {n: {} for n in names}
    for resident, other, tick, relation, closeness, interactions, note in rows:
        latest.setdefault(resident, {})[other] = Tie(
            relation=relation, closeness=closeness, interactions=interactions, last_tick=tick, note=note
        )
    return graph_from_ties(latest)


def density(graph: nx.DiGraph, residents: list[str] | None = None) -> float:
    """2|E| / (|V|(|V|-1)) over undirected who-knows-whom among ``residents`` (default: all)."""
    nodes = residents if residents is not None else list(graph.nodes)
    if len(nodes) < 2:
        return 0.0
    undirected = graph.subgraph(nodes).to_undirected()
    return 2 * undirected.number_of_edges() / (len(nodes) * (len(nodes) - 1))


def export_graph(db_path: Path | str, out: Path | str, at_tick: int | None = None) -> Path:
    """Write the graph as node-link JSON (``.json``) or GraphML (``.graphml``)."""
    import networkx as nx  # see graph_from_ties

    graph = load_graph(db_path, at_tick)
    out = Path(out)
    if out.suffix == ".graphml":
        nx.write_graphml(graph, out)
    elif out.suffix == ".json":
        data = nx.node_link_data(graph, edges="edges")
        data["density"] = density(graph)
        out.write_text(json.dumps(data, indent=1))
    else:
        raise ValueError(f"export_graph: {out}: expected a .json or .graphml file name")
    return out
