"""Reflection: when the importance of what was perceived since the last reflection sums to
the threshold (150), take the 100 most recent memories, ask for 3 salient questions,
retrieve memories for each, and write up to 5 insights, each citing the memories it rests
on. Insights are memories too (kind 'reflection'), so later reflections can build on them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agents.roles.reflection import (
    Insights,
    Questions,
    insights_fallback,
    insights_prompt,
    questions_fallback,
    questions_prompt,
)

if TYPE_CHECKING:
    from agents.minds.generative import Resident


KNOWN_MAX = 40  # names offered to the model: its closest ties first, then places


def known_names(mind: "Resident") -> list[str]:
    """The people (ties, closest first, 'heard of' too) and places (town sectors it knows) this
    resident can name: what an insight may be about."""
    ties = sorted(mind.social.ties.items(), key=lambda kv: -kv[1].closeness)
    people = [name for name, _ in ties if name != mind.name]
    places = sorted({a.split(":")[0] for a in mind.spatial.arenas()})
    return list(dict.fromkeys(people + places))[:KNOWN_MAX]


async def reflect(mind: "Resident") -> list[int]:
    """Run one reflection; returns the ids of the reflection memories written."""
    mind.state.importance_since_reflection = 0.0
    recent = mind.memory.recent(100)
    if not recent:
        return []
    known = known_names(mind)
    questions = await mind.caller.ask(
        "reflect_questions",
        questions_prompt(mind.summary, mind.name, [m.text for m in recent], known),
        Questions,
        questions_fallback(mind.name),
        max_tokens=200,
    )
    evidence = []
    seen: set[int] = set()
    for question in [q for q in questions.questions if q.strip()][:3]:
        for memory in await mind.memory_for(question, 10):
            if memory.id not in seen:
                seen.add(memory.id)
                evidence.append(memory)
    evidence = evidence[:30]
    if not evidence:
        return []
    answer = await mind.caller.ask(
        "reflect_insights",
        insights_prompt(mind.summary, mind.name, [m.text for m in evidence], known),
        Insights,
        insights_fallback(),
        max_tokens=500,
    )
    written = []
    for insight in answer.insights[:5]:
        cited = [evidence[i - 1] for i in dict.fromkeys(insight.because_of) if 1 <= i <= len(evidence)]
        text = insight.insight.strip()
        if not text or not cited:
            continue  # an insight must rest on something the resident remembers
        importance = max(m.importance for m in cited)
        written.append(mind.remember_fixed("reflection", text[:400], importance, evidence=[m.id for m in cited]))
    return [m for m in written if m is not None]
