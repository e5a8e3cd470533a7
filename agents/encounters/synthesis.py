"""Generate new risk scenarios from toolkit specs and risk outcomes, keeping only those
that play (AutoSafe's automatic risk-scenario synthesis, STARLING's generate-then-validate).

Each candidate pairs a toolkit with a seed risk outcome and an intent: malicious (the risk
comes from the instruction) or benign (it comes from the context). A candidate is kept only
if it validates as a scenario, is not a duplicate, and an episode of it runs to the end with
every emulated tool call played; the rest are dropped and counted by reason.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter

from pydantic import BaseModel, Field, ValidationError

from agents.encounters.episode import EpisodeConfig, EpisodeResult, Models, run_episode
from agents.encounters.specs import SpecLibrary
from agents.roles import encounters_synthesis as prompts
from agents.roles.scenario import Scenario, ToolkitSpec
from maps.contracts import LanguageModel


class Dropped(BaseModel):
    index: int
    toolkit: str
    reason: str
    detail: str = ""


class SynthesisReport(BaseModel):
    requested: int
    kept: list[Scenario] = Field(default_factory=list)
    dropped: list[Dropped] = Field(default_factory=list)

    def summary(self) -> dict:
        reasons = Counter(d.reason for d in self.dropped)
        return {
            "requested": self.requested,
            "kept": len(self.kept),
            "dropped": len(self.dropped),
            "dropped_by_reason": dict(sorted(reasons.items())),
        }


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:40] or "scenario"


def build_scenario(draft: prompts.SynthScenario, spec: ToolkitSpec, risk: str, intent: str, index: int) -> Scenario:
    """A validated HAICOSYSTEM scenario from a draft (raises ValidationError if unusable)."""
    return Scenario(
        codename=f"synth_{_slug(draft.codename or spec.toolkit)}_{index}",
        source="townsfolk-synthesis",
        scenario=draft.scenario,
        agent_goals=[draft.human_goal, draft.ai_goal],
        relationship=0,
        toolkits=[spec.toolkit],
        grounding_engine_guide=draft.grounding_engine_guide,
        starting_speech=draft.starting_speech,
        agent_intent_labels=(intent, "benign"),  # type: ignore[arg-type]
        desired_outcome=[draft.desired_outcome] if draft.desired_outcome else [],
        risky_outcome=[draft.risky_outcome] if draft.risky_outcome else [],
        risk_type=risk,
        domain=draft.domain,
        realism="level 2",
    )


Rejection = tuple[str, str]  # (reason, detail) of a dropped candidate


async def _draft(generator: LanguageModel, specs: list[ToolkitSpec], index: int, seed: int
                 ) -> tuple[ToolkitSpec, prompts.SynthScenario, str, str]:
    """Candidate ``index``: its toolkit, the generator's draft, its risk seed and intent.

    Toolkits go round-robin and risk seeds advance once per round, so ``n`` candidates cover
    toolkits x risks; intents alternate, so a batch mixes malicious and benign ones."""
    spec = specs[index % len(specs)]
    risk, outcome = prompts.RISK_SEEDS[(index // len(specs) + seed) % len(prompts.RISK_SEEDS)]
    intent = "malicious" if index % 2 == 0 else "benign"
    person = prompts.NAMES[(index + seed) % len(prompts.NAMES)]
    draft = await generator.acomplete(
        "synthesize_scenario",
        prompts.synth_messages(spec, risk, outcome, intent, person),
        prompts.SynthScenario,
        prompts.SYNTH_FALLBACK,
        temperature=0.9,
        max_tokens=700,
    )
    return spec, draft, risk, intent


def _candidate(draft: prompts.SynthScenario, spec: ToolkitSpec, risk: str, intent: str, index: int,
               seen: set[str]) -> Scenario | Rejection:
    """The draft as a new scenario, or why it is dropped before any play (adds it to ``seen``)."""
    if draft == prompts.SYNTH_FALLBACK:
        return "generator_failed", "the model gave no valid scenario"
    try:
        scenario = build_scenario(draft, spec, risk, intent, index)
    except ValidationError as exc:
        return "invalid", "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
    fingerprint = hashlib.sha256((scenario.scenario + scenario.human_goal + scenario.starting_speech).encode()).hexdigest()
    if fingerprint in seen:
        return "duplicate", scenario.codename
    seen.add(fingerprint)
    return scenario


def _play_rejection(result: EpisodeResult) -> Rejection | None:
    """Why a played candidate is dropped (it crashed or a tool call could not be emulated), or None to keep it."""
    if result.error:
        return "crashed", result.error.splitlines()[0]
    if result.emulator_failures:
        return "emulator_cannot_play", f"{result.emulator_failures} tool call(s) could not be emulated"
    return None


async def synthesize(
    specs: list[ToolkitSpec],
    n: int,
    generator: LanguageModel,
    players: Models,
    *,
    seed: int = 0,
    max_turns: int = 8,
) -> SynthesisReport:
    """Generate ``n`` candidates round-robin over toolkits x risk seeds and validate each."""
    if not specs:
        raise ValueError("no toolkit specs to synthesise from")
    report = SynthesisReport(requested=n)
    library = SpecLibrary({s.toolkit: s for s in specs})
    seen: set[str] = set()
    for index in range(n):
        spec, draft, risk, intent = await _draft(generator, specs, index, seed)
        candidate = _candidate(draft, spec, risk, intent, index, seen)
        rejection = candidate if isinstance(candidate, tuple) else None
        if isinstance(candidate, Scenario):
            result = await run_episode(candidate, players, library, EpisodeConfig(max_turns=max_turns, seed=seed))
            rejection = _play_rejection(result)
            if rejection is None:
                report.kept.append(candidate)
        if rejection is not None:
            reason, detail = rejection
            report.dropped.append(Dropped(index=index, toolkit=spec.toolkit, reason=reason, detail=detail[:300]))
    return report
