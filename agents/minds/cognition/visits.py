"""Going out to tell people: a host (or a candidate) plans an hour where people are.

In the paper a resident with a gathering goes out and invites; one who lives alone and works
where nobody comes meets no one otherwise. On planning a day, for each event the resident hosts
that is still ahead (or its own news, such as a candidacy) and that there is someone to tell —
a tie not told yet, or anyone at all when it is open to everyone — :func:`plan_visit` picks,
with no model call,

- a free hour of the day's skeleton before the event (the lunch break, or after work), and
- a public place of the town the resident knows (spatial memory) that is neither its home nor
  its workplace, where people spend free time (a cafe before a park before a pub ...),

then asks the model (purpose ``attend``: go or skip, the same choice as going to a gathering)
whether to spend that hour there. The block carries the place (``Block.visit``): its one step
walks there (no teleport) and stays; conversations there have the event as their goal
(gatherings.goal_topic).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from agents.minds.cognition.events import describe, venue
from agents.minds.cognition.gatherings import HOST_LEAD_MIN, _places, choose, with_events
from agents.minds.state import Block, KnownEvent, Step
from agents.minds.cognition.planning import make_step, waking_hours
from agents.roles.attend import attend_fallback, attend_prompt
from agents.roles.planning import day_skeleton, skeleton_kinds
from memory.spatial import split_address

if TYPE_CHECKING:
    from agents.minds.generative import Resident

# where people are in their free time, most likely first (a word of the place's name)
GATHERING_PLACES = ("cafe", "café", "coffee", "park", "pub", "bar", "bakery", "market", "plaza", "square",
                    "library", "store", "shop", "grocer")
FREE_KINDS = ("lunch", "evening")  # skeleton parts a resident may spend out (not work, sleep, waking up)
VISIT_MIN = 60
VISIT_VERB = "go to"


def visit_steps(mind: "Resident", block: Block, start: datetime) -> list[Step]:
    """The one step of an hour out from ``start``: walk to the place and stay, telling people
    (no decomposition: a re-plan after a talk there keeps it too)."""
    minutes = max(1, int((block.end - start).total_seconds() // 60))
    doing = "telling people at " + block.activity.removeprefix(VISIT_VERB + " ").replace(" to tell people", "", 1)
    return [make_step(mind, start, minutes, doing, block.visit, "📣")]


def to_tell(mind: "Resident", known: KnownEvent) -> list[str]:
    """Ties the resident has not told of the event (nor heard it from), the host aside."""
    return [n for n in mind.social.ties if n not in known.told and n != known.event.host and n != mind.name]


def spreads(mind: "Resident", known: KnownEvent) -> bool:
    """An event of the resident's own still ahead, with someone to tell: a tie not told yet,
    or anyone when it is open to everyone (a candidacy is news for every voter)."""
    event = known.event
    if event.host != mind.name or (event.end is not None and event.end <= mind.state.now):
        return False
    public = event.news or any(i.lower() == "everyone" for i in event.invitees)
    return public or bool(to_tell(mind, known))


def visit_place(mind: "Resident") -> str:
    """The 'sector:arena' of the known public place where people most likely are, neither home
    nor work; '' when the resident knows none."""
    own = {split_address(mind.persona.home)[0], split_address(mind.persona.workplace)[0]}
    sectors = sorted({a.split(":")[0] for a in mind.spatial.arenas()} - own)
    ranked = [(next(i for i, w in enumerate(GATHERING_PLACES) if w in s.lower()), s) for s in sectors
              if any(w in s.lower() for w in GATHERING_PLACES)]
    if not ranked:
        return ""
    sector = min(ranked)[1]
    return venue(sector, _places(mind).get(sector, []))


def free_hours(mind: "Resident", start: datetime) -> list[datetime]:
    """The starts of the free hours (lunch break, after work) of the day that begins at ``start``."""
    p = mind.persona
    hours = waking_hours(p.wake_hour, p.sleep_hour)
    kinds = skeleton_kinds(day_skeleton(p.wake_hour, p.sleep_hour, mind.home_arena(), mind.work_arena()), hours)
    return [start + timedelta(hours=i) for i, h in enumerate(hours) if kinds.get(h) in FREE_KINDS]


def visit_slot(mind: "Resident", blocks: list[Block], known: KnownEvent) -> datetime | None:
    """The first free hour of the planned day still ahead, ending before the host must be at
    the venue, and clear of any gathering's slot."""
    event, now = known.event, mind.state.now
    latest = event.start - timedelta(minutes=HOST_LEAD_MIN) if event.start is not None else blocks[-1].end
    for at in free_hours(mind, blocks[0].start):
        end = at + timedelta(minutes=VISIT_MIN)
        if at < now or end > latest or end > blocks[-1].end:
            continue
        if any(b.event and b.start < end and at < b.end for b in blocks):
            continue
        return at
    return None


async def plan_visit(mind: "Resident", blocks: list[Block]) -> list[Block]:
    """The day's blocks with one hour out to tell people of an event of the resident's own (the
    first that has someone to tell and a free hour before it), when the model chooses to go."""
    place = visit_place(mind) if blocks and mind.state.events else ""
    if not place:
        return blocks
    for known in sorted(mind.state.events.values(), key=lambda k: (k.event.news, k.event.start or blocks[0].start)):
        at = visit_slot(mind, blocks, known) if spreads(mind, known) else None
        if at is None:
            continue
        where = place.replace(":", " ")
        activity = f"{VISIT_VERB} {where} to tell people about {known.event.what}"[:200]
        if not await _wants_to(mind, known, at, where):
            return blocks
        out = with_events(blocks, [(at, at + timedelta(minutes=VISIT_MIN), activity, "")])
        for block in out:
            if block.start == at and block.activity == activity:
                block.visit = place
        mind.remember_fixed("plan", f"My plan: at {at:%H:%M} go to {where} to tell people about {known.event.what}.", 5)
        return out
    return blocks


async def _wants_to(mind: "Resident", known: KnownEvent, at: datetime, where: str) -> bool:
    """The model's go-or-skip (purpose ``attend``) on spending the hour out; scripted by the
    attend rule, to which one's own news is as close as can be."""
    traits = ", ".join(mind.persona.traits)
    fact = f"an hour at {where} from {at:%H:%M} to tell people there that {describe(known.event)}"
    going, _by = await choose(
        mind,
        lambda options: attend_prompt(mind.summary, mind.name, fact, "my own idea", "it is my own news", 1.0,
                                      traits, mind.state.day_plan, True, options),
        attend_fallback(traits, 1.0, True),
    )
    return going
