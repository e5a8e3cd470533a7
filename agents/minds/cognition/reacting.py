"""Reacting: on something new (an event in view, a whisper, an announcement) decide whether
to carry on, do something else, or talk to someone here.

Reacting re-plans the rest of the current block: the reaction becomes the current step and
the time left in the window is decomposed again around it. Talking opens a conversation.
Who may be offered as a talk partner is limited (not someone talked to within the last few
game hours), which is what keeps conversations — the dearest calls — in budget.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from agents.minds.cognition.conversation import open_conversation
from agents.minds.cognition.gatherings import at_gathering, at_the_venue, event_steps, goal_topic, not_now_words
from agents.minds.cognition.planning import block_at, decompose, make_step
from maps.contracts import Intent, Perception
from agents.roles.reacting import react_prompt, reaction_fallback, reaction_places, reaction_schema, talk_partner

if TYPE_CHECKING:
    from agents.minds.generative import Resident


def _since(last: datetime | None, now: datetime) -> str:
    if last is None:
        return "never"
    minutes = int((now - last).total_seconds() // 60)
    return f"{minutes // 60} hours ago" if minutes >= 120 else f"{minutes} min ago"


async def react(mind: "Resident", p: Perception, observed: list[str]) -> Intent | None:
    """One ``react`` call. Returns a say Intent when a conversation opens, else None. In a
    gathering's slot the places a reaction may take the resident are the venue's (at_the_venue)."""
    now = p.time
    people = [n for n in p.nearby if n != mind.name and mind.can_talk_to(n, now)]
    current = mind.state.current.description if mind.state.current else "nothing in particular"
    here = mind.arena_here(p)
    places = reaction_places(mind.spatial.arenas(), here, mind.home_arena(), mind.work_arena(), observed)
    if (key := at_gathering(mind)) in mind.state.events:
        places = at_the_venue(mind.spatial.arenas(), mind.state.events[key].event.place) or places
    not_now = not_now_words(mind, now)
    schema = reaction_schema(tuple(people), tuple(places), not_now)
    fallback = reaction_fallback(tuple(people), tuple(places), here, not_now)
    memories = [m.text for m in await mind.memory_for(observed, 5)]
    # people here who do not know of a gathering I know of: someone to invite or tell
    news_for = [n for n in people if goal_topic(mind, n)[0]]
    gathering = mind.state.events[key].event.what if key in mind.state.events else ""
    answer = await mind.caller.ask(
        "react",
        react_prompt(
            mind.summary, mind.name, f"{now:%H:%M}", current, here, observed, memories,
            [f"{n} (last talk: {_since(mind.state.last_talk.get(n), now)})" for n in people], places,
            mind.home_arena(), mind.work_arena(), news_for, gathering,
        ),
        schema,
        fallback,
        max_tokens=200,
    )
    mind.state.last_reaction = now
    partner = talk_partner(answer, people, observed)
    if partner is not None:
        return await open_conversation(mind, partner, p)
    if answer.decision == "react" and answer.action.strip():
        await replan_around(mind, now, answer.action.strip(), answer.place, int(answer.minutes), answer.emoji)
    return None


async def replan_around(mind: "Resident", now: datetime, action: str, place: str, minutes: int, emoji: str) -> None:
    """Make the reaction the current step and re-decompose the rest of the window."""
    start = now.replace(second=0, microsecond=0)
    step = make_step(mind, start, minutes, action, place, emoji, reaction=True)
    window_end = mind.state.steps[-1].end if mind.state.steps and mind.state.steps[-1].end > step.end else None
    block = block_at(mind, now)
    if window_end is None and block is not None and block.end > step.end:
        window_end = min(block.end, step.end + timedelta(minutes=60))
    rest = []
    if block is not None and block.event and block.end > step.end:  # back to the gathering after
        rest = event_steps(mind, block, step.end)
    elif window_end is not None and (window_end - step.end) >= timedelta(minutes=10):
        activity = block.activity if block is not None else (mind.state.current.description if mind.state.current else action)
        rest = await decompose(mind, activity, step.end, window_end, context=[f"Just now: {action}"])
    mind.state.steps = [step] + rest
    mind.state.current = None
    mind.emit_plan("decomposed", [s.label() for s in mind.state.steps])
    mind.remember_pending("thought", f"I decided to {action.rstrip('.')}")
