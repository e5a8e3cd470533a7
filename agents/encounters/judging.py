"""Judges are plugins: one protocol, one registry, one pipeline.

A judge reads a :class:`Case` (one trajectory: a recorded one from a file, or an episode
``eval`` just played, with its evidence text, its state checkers and, when there is one, the
judge model) and returns a :class:`JudgeVerdict`: per-dimension scores, each with its
reasoning, plus notes (findings, adjustments) and whether the judgment failed. HAICOSYSTEM,
ToolEmu and the rule auditor (agents/encounters/judges.py) register here the same way any new
judge does, with :func:`register`; :func:`run_judges` runs every registered judge on a case, in
registration order, and results (``EpisodeResult.judges``, ``TrajectoryVerdict.judges``) carry
the list. A judge that needs a model is skipped when the case has none (the offline judge).

Adding a judge is one file: a class with ``name``, ``needs_model`` and ``async judge(case)``,
and a ``register(MyJudge())`` line in it (tests/agents/test_judge_plugins.py does this with a toy).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal, Protocol

from pydantic import BaseModel, Field

from agents.encounters.auditor import DEFAULT_RULES, Audit, audit
from agents.encounters.services import CheckResult
from agents.encounters.trajectory import Trajectory
from agents.roles.encounters_judges import EvidenceFacts
from maps.contracts import LanguageModel

CaseKind = Literal["episode", "trajectory"]
# The judges whose verdicts make the headline fields every output has always shown (scores,
# reasoning, toolemu); reports add a section for any other judge's verdicts.
HEADLINE_JUDGES: tuple[str, ...] = ("haicosystem", "toolemu", "auditor")


class DimensionScore(BaseModel):
    """One dimension's score and why."""

    score: int
    reasoning: str = ""


class JudgeVerdict(BaseModel):
    """What one judge said about one case (stored in results.jsonl and judgements.jsonl)."""

    judge: str = Field(description="the registered judge's name")
    scores: dict[str, DimensionScore] = Field(default_factory=dict, description="per dimension, with its reasoning")
    notes: list[str] = Field(default_factory=list, description="findings and other reasons beside the scores")
    adjusted: list[str] = Field(default_factory=list, description="dimensions lowered by ground truth "
                                                                  "(failed checkers, the auditor's findings)")
    fallback: bool = Field(default=False, description="the judge model gave no valid answer")
    failed: str = Field(default="", description="why this answer is not a judgment ('' when it is)")

    def score_map(self) -> dict[str, int]:
        """Scores by dimension, in the judge's order."""
        return {d: s.score for d, s in self.scores.items()}

    def reasoning_map(self) -> dict[str, str]:
        """Reasoning by dimension, in the judge's order."""
        return {d: s.reasoning for d, s in self.scores.items()}


@dataclass
class Case:
    """What every judge reads: the trajectory, the text a model judge scores (and its facts as
    data, which the scripted judge scores), the episode's state checkers (an eval episode; a
    results file carries its failed ones on the trajectory)
    and the judge model (None: offline, model judges are skipped)."""

    trajectory: Trajectory
    kind: CaseKind = "trajectory"
    evidence: str = ""
    facts: EvidenceFacts = field(default_factory=EvidenceFacts)
    checks: list[CheckResult] = field(default_factory=list)
    llm: LanguageModel | None = None
    rules: tuple[str, ...] = DEFAULT_RULES
    queries: list[str] = field(default_factory=list)
    _audit: Audit | None = field(default=None, init=False, repr=False)

    def audit(self) -> Audit:
        """The rule auditor's reading of the trajectory, made once per case and shared by the judges."""
        if self._audit is None:
            self._audit = audit(self.trajectory, self.rules)
        return self._audit

    def failed_checks(self) -> list[dict[str, str]]:
        """The state checkers that failed: the episode's, or those a results file recorded."""
        if self.checks:
            return [{"name": c.name, "dimension": c.dimension, "detail": c.detail}
                    for c in self.checks if not c.passed]
        return list(self.trajectory.failed_checks)


class JudgePlugin(Protocol):
    """A judge: a name, whether it needs a model, and a verdict on a case."""

    name: str
    needs_model: bool

    async def judge(self, case: Case) -> JudgeVerdict:
        """The verdict on ``case``; never raises for a model's bad answer (mark it ``failed``)."""
        ...


_REGISTRY: dict[str, JudgePlugin] = {}


def register(judge: JudgePlugin) -> JudgePlugin:
    """Add a judge (runs after those registered before it); a second one of the same name is an error."""
    if judge.name in _REGISTRY and _REGISTRY[judge.name] is not judge:
        raise ValueError(f"a judge named {judge.name!r} is already registered")
    _REGISTRY[judge.name] = judge
    return judge


def unregister(name: str) -> None:
    """Remove a judge by name (unknown names are ignored)."""
    _REGISTRY.pop(name, None)


@contextmanager
def registered(judge: JudgePlugin) -> Iterator[JudgePlugin]:
    """A judge registered for the duration of a ``with`` block (tests, one-off runs)."""
    register(judge)
    try:
        yield judge
    finally:
        unregister(judge.name)


def judge_names() -> list[str]:
    """The registered judges, in the order they run."""
    return list(_REGISTRY)


async def run_judges(case: Case) -> list[JudgeVerdict]:
    """The one pipeline: every registered judge on ``case``, in order (model judges only with a model)."""
    verdicts = []
    for judge in list(_REGISTRY.values()):
        if judge.needs_model and case.llm is None:
            continue
        verdicts.append(await judge.judge(case))
    return verdicts


def find(verdicts: list[JudgeVerdict], name: str) -> JudgeVerdict | None:
    """The verdict of the judge called ``name`` (None when it did not run)."""
    return next((v for v in verdicts if v.judge == name), None)


def run_offline(case: Case) -> list[JudgeVerdict]:
    """:func:`run_judges` for a case without a model, outside any event loop (``bench judges``
    judges thousands of trajectories this way): judges that need no model must not wait on I/O."""
    if case.llm is not None:
        raise ValueError("run_offline: the case has a judge model; await run_judges(case) instead")
    coroutine = run_judges(case)
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise RuntimeError("a judge that needs no model waited on I/O; await run_judges(case) in an event loop instead")
