"""Gatherings a resident knows of: learned from its own notions, whispers, announcements and
lines heard; passed on in conversation as the fact, attributed; decided on by the model; given
their slot in the day.

- :func:`learn` parses a text (events.parse_event) and keeps a new event in ``mind.state.events``
  with who told it; the fact is remembered as "<teller> told me that <fact>." (never the
  teller's line quoted), the host becomes someone the resident has heard of, and an ``event``
  record says so. A gathering that names no town place or a past time is refused and recorded.
- :func:`settle` asks the model (purpose ``attend``) whether to go to each event not decided
  yet, and re-plans today when one is today; :func:`choose` keeps the model's go-or-skip only
  when it holds with the options named in either order.
- :func:`goal_topic` is a conversation's goal with a partner: invite them (the host), pass the
  news on and ask them to come along (a guest), or pass a candidacy on.
- :func:`with_events` cuts the day's blocks to give each event the resident goes to its slot
  (the host an hour before, to prepare the venue); :func:`event_steps` are the steps of that
  slot, at the venue, with no model call.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING


from agents.minds.cognition.events import (describe, event_words, find_invitees, parse_event, people_named, refers_to,
                                          spoken_time, town_places)
from agents.minds.state import Block, Gathering, KnownEvent, Step
from agents.minds.cognition.planning import make_step
from agents.llm.task import Prompt
from agents.roles.attend import ORDERS, AttendAnswer, agreed, attend_fallback, attend_prompt
from maps.contracts import EventPayload, Record
from memory.store import MemoryRecord

if TYPE_CHECKING:
    from agents.minds.generative import Resident

HOST_LEAD_MIN = 60  # the host is at the venue this long before the start, preparing it
GUEST_LEAD_MIN = 10  # a guest sets off this long before the start
EARLY_MIN = 30  # setting off to a gathering sooner than this before it starts is too early (the bench's wrong time)
TOLD_IMPORTANCE = 7




def _places(mind: "Resident") -> dict[str, list[str]]:
    """{sector: [arena, ...]} of the whole town (built once per mind: the town does not change)."""
    places = mind.__dict__.get("_town_places")
    if places is None:
        places = mind.__dict__["_town_places"] = town_places(list(mind.options.places))
    return places


def known_names(mind: "Resident", *extra: str) -> list[str]:
    """Residents this mind can put a full name to: its ties, and whoever is named in ``extra``."""
    return list(dict.fromkeys([*mind.social.ties, *(n for n in extra if n)]))


def _record(mind: "Resident", status: str, event: Gathering | None, **data) -> None:
    fields = {"key": event.key(), **event.model_dump()} if event is not None else {}
    payload = EventPayload(status=status, **fields, **data)  # type: ignore[arg-type]
    mind._records.append(Record(kind="event", resident=mind.name, data=payload.model_dump(mode="json")))


def _refuse(mind: "Resident", text: str, what: str, source: str, problem: str) -> None:
    """Record a gathering ``text`` names as refused, once per text."""
    if text not in mind.state.events_refused:
        mind.state.events_refused.append(text)
        _record(mind, "refused", None, what=what, source=source, text=text[:300], problem=problem)


def learn(mind: "Resident", text: str, source: str, speaker: str = "", nearby: tuple[str, ...] = (),
          line: str = "") -> KnownEvent | None:
    """Take in a gathering ``text`` names (said by ``speaker``; ``source`` told it); the new
    KnownEvent, or None when it names none, is known already, or is refused. ``line``: the words
    said, when ``text`` is the fact they passed on (Intent.news): whether I am asked to come is
    in the words ('Would you like to come?'), not in the fact."""
    names = known_names(mind, speaker, *nearby)
    parsed = parse_event(text, mind.state.now, _places(mind), speaker=speaker, listener=mind.name,
                         names=names)
    if parsed is None:
        return None
    if parsed.event is None:
        _refuse(mind, text, parsed.what, source, parsed.problem)
        return None
    event = parsed.event
    if line and line != text and mind.name in find_invitees(line, speaker, mind.name, names):
        event = event.model_copy(update={"invitees": [*event.invitees, mind.name]})
    key = event.key()
    known = mind.state.events.get(key) or same_slot(mind, event)
    if known is not None:
        if source and source not in known.told:
            known.told.append(source)  # they know it: no need to tell them
        known.invited = known.invited or mind.name in event.invitees
        return None
    if event.host == mind.name and source and source not in ("whisper", "announcement"):
        # told by another of a gathering or news of mine I never had: SmolLM2's residents told Maria
        # that 'Maria Alvarez is hosting ...' in words that made it another party, and Ben that he
        # is running for mayor (society bench, 2026-11-28); hearsay gives no one a party to host
        _refuse(mind, text, event.what, source, "names the hearer as its host, who holds no such thing")
        return None
    known = KnownEvent(event=event, source=source, learned=mind.state.now, invited=mind.name in event.invitees,
                       going=True if event.host == mind.name else None, told=[source] if source else [])
    mind.state.events[key] = known
    _take_in(mind, known, source)
    return known


def same_slot(mind: "Resident", event: Gathering) -> KnownEvent | None:
    """A gathering I know at the same building and start, whatever it is called: the one event
    told in other words. SmolLM2's Sophie Bell, invited to Maria's party, answered that she would
    'celebrate my friend Sophie Bell's upcoming wedding at Willow Cafe on Saturday February 14 from
    5pm to 7pm', and Maria learned of a wedding at her own party (society bench, 2026-11-28)."""
    if event.news or event.start is None or not event.place:
        return None
    building = event.place.split(":")[0].lower()
    return next((k for k in mind.state.events.values() if not k.event.news and k.event.start == event.start
                 and k.event.place.split(":")[0].lower() == building), None)


def heard_event(mind: "Resident", text: str, speaker: str) -> Gathering | None:
    """The gathering a line names, known before or not (for the talk's summary: what was talked
    about, as the fact), or None."""
    parsed = parse_event(text, mind.state.now, _places(mind), speaker=speaker, listener=mind.name,
                         names=known_names(mind, speaker))
    return parsed.event if parsed is not None else None


def _take_in(mind: "Resident", known: KnownEvent, source: str) -> None:
    """The memory, the tie to the host and the record of a newly learned event."""
    event, fact = known.event, describe(known.event)
    if source and source not in ("whisper", "announcement"):
        mind.remember_fixed("chat", f"{source} told me that {fact}.", TOLD_IMPORTANCE)
    if event.place:
        mind.learn_places_from(event.place.split(":")[0])
    if event.host and event.host != mind.name:
        mind.social.heard_of(event.host, mind.state.tick, fact)
    _record(mind, "learned", event, source=source, going=known.going, text=fact)


def hear_of_people(mind: "Resident", text: str, speaker: str) -> list[str]:
    """Someone named in a line heard, with something about them, is someone I now know of
    (a 'heard of' tie: the paper's who-knows-whom counts a name and one fact learned by being
    told); a tie already there is kept as it is. The sentences that told me of someone new, to
    be kept in the talk's summary (so memory, not only the graph, holds the name and the fact)."""
    told = []
    for person in people_named(text, _places(mind), exclude=(mind.name, speaker)):
        sentence = next((s for s in text.replace("!", ".").replace("?", ".").split(".") if person in s), text).strip()
        if mind.social.heard_of(person, mind.state.tick, f"{speaker} told me: {sentence}"[:200]) is not None \
                and not re.fullmatch(rf"{re.escape(person)} told me", sentence):  # who told them is no news
            told.append(sentence)
    return told


def not_now_words(mind: "Resident", now: datetime,
                  until: datetime | None = None) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(venue building, words) of the gatherings I know whose time it is not: more than half an
    hour before the start (the host: its lead) or over; with ``until``, at no moment of
    [now, until) (a block's steps). A reaction or a step setting off to one of them, or
    joining it, is refused (roles.checks.goes_out_of_time)."""
    out = []
    for known in mind.state.events.values():
        event = known.event
        if event.news or event.start is None or event.end is None or not event.place:
            continue
        opens = event.start - timedelta(minutes=HOST_LEAD_MIN if event.host == mind.name else EARLY_MIN)
        on = opens <= now < event.end if until is None else opens < until and now < event.end  # a moment, or overlap
        if not on:
            out.append((event.place.split(":")[0], tuple(sorted(event_words(event)))))
    return tuple(sorted(out))


def undecided(mind: "Resident") -> bool:
    return any(k.going is None for k in mind.state.events.values())


async def choose(mind: "Resident", prompt_for: Callable[[tuple[str, str]], Prompt],
                 fallback: AttendAnswer) -> tuple[bool, str]:
    """(going, chosen_by): go-or-skip asked with the options in each order of roles.attend.ORDERS;
    the model's choice ('model') when its answers agree, else the rule's ``fallback`` ('rule').
    Why: a tiny model names the option said last (SmolLM2: 39 of 48 prompts, 38 of 48 reversed),
    so its one answer measured the wording; a model that chooses answers the same both ways."""
    answers: list[str | None] = []
    for options in ORDERS:
        answer = await mind.caller.ask("attend", prompt_for(options), AttendAnswer, fallback, max_tokens=20)
        answers.append(None if mind.caller.last_fell_back else answer.decision)
        if answers[-1] is None:
            break
    decision = agreed(answers)
    return (decision or fallback.decision) == "go", "model" if decision else "rule"


async def settle(mind: "Resident") -> None:
    """One ``attend`` call per event not decided on yet; an event today is given its slot now."""
    for key, known in list(mind.state.events.items()):
        if known.going is not None:
            continue
        event = known.event
        if event.news or event.end is None or event.end <= mind.state.now:
            known.going = False
            continue
        tie = mind.social.tie(event.host) if event.host else None
        closeness = tie.closeness if tie is not None and tie.relation != "heard of" else 0.0
        traits = ", ".join(mind.persona.traits)
        relation = mind.social.describe(event.host) if event.host else "no host named"
        known.going, chosen_by = await choose(
            mind,
            lambda options: attend_prompt(mind.summary, mind.name, describe(event), known.source, relation,
                                          closeness, traits, mind.state.day_plan, known.invited, options),
            attend_fallback(traits, closeness, known.invited),
        )
        _record(mind, "decided", event, source=known.source, going=known.going, text=describe(event),
                chosen_by=chosen_by)
        if known.going:
            # a plan, not news: a talk retold 'I will go to ... on Saturday' without its hour (refused)
            mind.remember_fixed("plan", f"My plan: go to {event.what} at {event.place.replace(':', ' ')} on "
                                        f"{event.start:%A} at {spoken_time(event.start)}.", 6)
            replan_today(mind, key)


def slots(mind: "Resident", day: date, wake: datetime, bed: datetime) -> list[tuple[datetime, datetime, str, str]]:
    """(start, end, activity, key) of each event this resident goes to on the planning ``day``,
    clipped to its waking hours [wake, bed)."""
    out = []
    for key, known in sorted(mind.state.events.items(), key=lambda kv: kv[1].event.start or wake):
        event = known.event
        if not known.going or event.start is None or event.end is None:
            continue
        host = event.host == mind.name
        start = event.start - timedelta(minutes=HOST_LEAD_MIN if host else GUEST_LEAD_MIN)
        start, end = max(start, wake), min(event.end, bed)
        if end - start < timedelta(minutes=15) or not (wake <= event.start < bed) or event.end <= mind.state.now:
            continue
        where = event.place.replace(":", " ")
        activity = f"host {event.what} at {where}" if host else f"go to {event.what} at {where}"
        out.append((start, end, activity[:200], key))
    return out


def with_events(blocks: list[Block], event_slots: list[tuple[datetime, datetime, str, str]]) -> list[Block]:
    """The blocks cut so that each slot is a block of its own (the rest of the day unchanged)."""
    for start, end, activity, key in event_slots:
        out: list[Block] = []
        for block in blocks:
            if block.end <= start or block.start >= end:
                out.append(block)
                continue
            if block.start < start:
                out.append(block.model_copy(update={"minutes": int((start - block.start).total_seconds() // 60)}))
            if block.end > end:
                out.append(block.model_copy(update={"start": end, "minutes": int((block.end - end).total_seconds() // 60)}))
        out.append(Block(start=start, minutes=int((end - start).total_seconds() // 60), activity=activity, event=key))
        blocks = sorted(out, key=lambda b: b.start)
    return blocks


def replan_today(mind: "Resident", key: str) -> None:
    """A decision taken today for today: the day's blocks make room for the event now, and steps
    planned over its slot are dropped (the event's own are built when its time comes)."""
    if not mind.state.blocks or mind.state.day is None:
        return
    bed = mind.state.blocks[-1].end
    wake = mind.state.blocks[0].start
    mine = [s for s in slots(mind, mind.state.day, wake, bed) if s[3] == key]
    if not mine or any(b.event == key for b in mind.state.blocks):
        return
    mind.state.blocks = with_events(mind.state.blocks, mine)
    start = mine[0][0]
    if mind.state.steps and mind.state.steps[-1].end > start:
        mind.state.steps = [s for s in mind.state.steps if s.start < start]
        if mind.state.steps and mind.state.steps[-1].end > start:
            last = mind.state.steps[-1]
            minutes = int((start - last.start).total_seconds() // 60)
            mind.state.steps[-1] = last.model_copy(update={"minutes": max(1, minutes)})
    mind.emit_plan("hourly", [f"{b.start:%H:%M} {b.activity} ({b.minutes} min)" for b in mind.state.blocks])


def plan_line(mind: "Resident", day: date) -> list[str]:
    """The day plan's lines for the events of ``day`` ('17:00 go to a party at Willow Cafe')."""
    return [f"{b.start:%H:%M} {b.activity}" for b in mind.state.blocks if b.event and b.start.date() == day]


def event_steps(mind: "Resident", block: Block, start: datetime) -> list[Step]:
    """The steps of an event's slot from ``start``: the host prepares the venue (an object there
    is set up for it) until the start, then hosts; a guest goes there and stays to the end."""
    known = mind.state.events.get(block.event)
    if known is None:
        return [make_step(mind, start, max(1, int((block.end - start).total_seconds() // 60)), block.activity,
                          mind.home_arena())]
    event = known.event
    arena = event.place if event.place in mind.spatial.arenas() or ":" in event.place else mind.home_arena()
    steps: list[Step] = []
    at = start
    if event.host == mind.name and event.start is not None and at < event.start:
        minutes = int((event.start - at).total_seconds() // 60)
        steps.append(make_step(mind, at, minutes, f"setting up {_prop(mind, arena)} for {event.what}", arena,
                               "🎈", object_state=f"set up for {event.what}"[:80]))
        at = event.start
    doing = f"hosting {event.what}" if event.host == mind.name else f"attending {event.what}"
    minutes = int((block.end - at).total_seconds() // 60)
    if minutes >= 1:
        steps.append(make_step(mind, at, minutes, doing, arena, "🎉"))
    return steps


def _prop(mind: "Resident", arena: str) -> str:
    """What the host sets up at the venue: a table there if there is one, else another object
    there, else the room (its name in the step's words picks the object: planning.make_step)."""
    names = [o.split(":")[-1] for o in mind.spatial.objects_in(arena)]
    chosen = next((n for n in names if "table" in n.lower()), names[0] if names else arena.split(":")[-1])
    return f"the {chosen}"


def goal_topic(mind: "Resident", partner: str) -> tuple[str, str]:
    """(what to bring up, event key): this conversation's goal with ``partner``. The host invites;
    one who knows of a gathering passes it on, attributed, and asks them along when going; a
    candidacy or other news is passed on too. ('', '') when there is nothing they do not know from me."""
    best: tuple[int, str, str] | None = None
    here_for = at_gathering(mind)
    for key, known in mind.state.events.items():
        event = known.event
        if partner in known.told or partner == event.host or (event.end is not None and event.end <= mind.state.now):
            continue
        if key == here_for:
            continue  # no news to someone at the gathering itself
        when = f" on {event.start:%A} {event.start:%B} {event.start.day} from {spoken_time(event.start)} to " \
               f"{spoken_time(event.end)}" if event.start and event.end else ""
        if event.host == mind.name and event.news:  # my own news, in my words: no 'Did you hear? <me> is ...'
            rank, text = 2, f"I'm {event.what}."
        elif event.host == mind.name:
            rank, text = 0, f"I'm hosting {event.what} at {event.place.replace(':', ' ')}{when}. Would you like to come?"
        else:
            told = f" {known.source} told me." if known.source and known.source not in ("whisper", "announcement") else ""
            along = " Would you like to go together?" if known.going and not event.news else ""
            rank, text = (2 if event.news else 1), f"{describe(event)}.{told}{along}"
        if best is None or rank < best[0]:
            best = (rank, text, key)
    return (best[1], best[2]) if best else ("", "")


def at_gathering(mind: "Resident") -> str:
    """The key of the gathering whose slot the resident is in now ('' when none)."""
    for block in mind.state.blocks:
        if block.event and block.start <= mind.state.now < block.end:
            return block.event
    return ""


def no_longer_news(mind: "Resident", memory: MemoryRecord) -> bool:
    """A memory made before a gathering I know began that speaks of it (its invitation, my plan
    for it, news of it): once it has begun, that is no news to bring up in a talk. The scripted
    host told a guest at her own party, and after it, 'I am planning a Valentine's Day party at
    the Hobbs Cafe' (2026-12-07), from her seed memory."""
    now = mind.state.now
    return any(k.event.start is not None and memory.created < k.event.start <= now and refers_to(memory.text, k.event)
               for k in mind.state.events.values())


def at_the_venue(arenas: list[str], venue: str) -> list[str]:
    """The known places in a gathering's building: where a reaction may take someone in its slot.
    SmolLM2's host, at her party at 16:59, chose to set up 'the corner table' at her home, which
    would have walked her out of her own party (a fork of the society bench, 2026-12-07)."""
    building = venue.split(":")[0]
    return [a for a in arenas if a.split(":")[0] == building]


def spoken_of(mind: "Resident", text: str) -> KnownEvent | None:
    """The one event still ahead that I know and my line speaks of, if exactly one: SmolLM2's Maria,
    telling Tom (who knew it) of her own party, said '7pm to 9pm', and Tom learned a second party
    (society bench, 2026-11-27). Ended events and two at once (which one?) give None."""
    now = mind.state.now
    ahead = [k for k in mind.state.events.values() if k.event.end is None or k.event.end > now]
    spoken = [k for k in ahead if refers_to(text, k.event)]
    return spoken[0] if len(spoken) == 1 else None


def mark_told(mind: "Resident", key: str, partner: str) -> None:
    """The partner knows the event from me (my line spoke of it: conversation._say)."""
    known = mind.state.events.get(key)
    if known is not None and partner not in known.told:
        known.told.append(partner)


def unmark_told(mind: "Resident", news: str, partner: str) -> None:
    """The line that told the partner ``news`` was not said (Perception.unsaid): they do not
    know it from me, and I will tell them again."""
    for known in mind.state.events.values():
        if partner in known.told and describe(known.event) == news:
            known.told.remove(partner)
