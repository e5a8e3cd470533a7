"""Society, read from what a run recorded: who came to know each seeded notion and when, who told
whom, who was at a gathering's place inside its window, who went together, who knows whom.

The paper's two-day evaluation (Park et al. 2023, REFERENCE.md), measured from the record stream
(memory records with their kind and time, chat lines, positions, actions, injected commands),
never from the minds' own bookkeeping: a resident knows a notion when one of its memories carries
the notion's words (replays.notions.mentions), and was at a gathering when its position records
put it at the place for at least MIN_STAY inside the window. Interview answers are scored here
too (:func:`score_notion_answer`, :func:`score_person_answer`): an answer that claims to know
without a memory behind it is a hallucination. Pure functions over :class:`RunFacts`; the bench
(world/cli/bench_society.py) asks the questions.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, Field

from maps.contracts import Persona, TickRecords
from memory.denials import denies
from replays.notions import Notion, content_terms, mentions, names_in, parse_notion, tokens

MIN_STAY = timedelta(minutes=15)  # at the place this long inside the window to count as there
TOGETHER = timedelta(minutes=10)  # arrivals this close, from the same place, are "went together"
TOLD_WITHIN = timedelta(minutes=30)  # a line heard this long before the memory can be its source
_GO = re.compile(r"\b(?:go|goes|going|went|attend|attending|join|joining|head|heading|arrive|arriving|walk|walking)\b", re.I)
_BEING_THERE = re.compile(r"\b(?:celebrat\w*|enjoy\w*|danc\w*|mingl\w*|partying)\b", re.I)
_ASK_TOGETHER = re.compile(r"\b(?:together|come with|go with|join me|with me|come along|go along)\b", re.I)


@dataclass
class RunFacts:
    """What one pass over the record stream keeps for the society measures (times are game time)."""

    memories: list[tuple[datetime, str, str, str]] = field(default_factory=list)  # time, who, kind, text
    chats: list[tuple[datetime, str, str, str]] = field(default_factory=list)  # time, speaker, listener, text
    moves: dict[str, list[tuple[datetime, str]]] = field(default_factory=dict)  # who -> (time, address)
    actions: list[tuple[datetime, str, str]] = field(default_factory=list)  # time, who, description
    injects: list[tuple[datetime, str, str, str]] = field(default_factory=list)  # time, kind, resident, text
    events: list[tuple[datetime, str, dict[str, Any]]] = field(default_factory=list)  # an `event` record kind
    first: datetime | None = None
    last: datetime | None = None

    def read(self, tr: TickRecords) -> None:
        """Take one committed tick's records in."""
        t = tr.time
        self.first = self.first or t
        self.last = t
        for rec in tr.records:
            d = rec.data if isinstance(rec.data, dict) else {}
            who = rec.resident or ""
            if rec.kind == "memory" and d.get("text"):
                self.memories.append((t, who, str(d.get("kind", "")), str(d["text"])))
            elif rec.kind == "chat":
                self.chats.append((t, str(d.get("speaker") or who), str(d.get("listener", "")), str(d.get("text", ""))))
            elif rec.kind == "move" and who:
                self.moves.setdefault(who, []).append((t, str(d.get("address", ""))))
            elif rec.kind == "action" and d.get("description"):
                self.actions.append((t, who, str(d["description"])))
            elif rec.kind == "inject" and d.get("accepted"):
                cmd = d.get("command") if isinstance(d.get("command"), dict) else {}
                text = str(cmd.get("text") or cmd.get("message") or "")
                self.injects.append((t, str(cmd.get("kind", "")), str(cmd.get("resident") or who or ""), text))
            elif rec.kind == "event":
                self.events.append((t, who, d))


# the kinds of record RunFacts.read takes in; moves are nine in ten of a day's records
FACT_KINDS = ("memory", "chat", "move", "action", "inject", "event")


def collect(ticks: Iterable[TickRecords], facts: RunFacts | None = None) -> RunFacts:
    """The facts of ``ticks`` (added to ``facts`` when given: a second pass over other kinds)."""
    facts = facts if facts is not None else RunFacts()
    for tr in ticks:
        facts.read(tr)
    return facts


def sector(address: str) -> str:
    return address.split(":", 1)[0].strip()


# -- which notions a run holds -------------------------------------------------------------------

def seeded_texts(facts: RunFacts) -> list[tuple[str, str]]:
    """(host, words) a run seeded: each resident's first thoughts (seed memories, written at the
    resident's first tick), whispers (the host is the one whispered to) and announcements (no host)."""
    first_tick: dict[str, datetime] = {}
    out: list[tuple[str, str]] = []
    for t, who, kind, text in facts.memories:
        first_tick.setdefault(who, t)
        if kind == "thought" and t == first_tick[who]:
            out.append((who, text))
    for _t, kind, resident, text in facts.injects:
        if kind == "whisper" and text:
            out.append((resident, text))
        elif kind == "announce" and text:
            out.append(("", text))
    return out


def run_notions(facts: RunFacts, places: Iterable[str]) -> list[Notion]:
    """The gatherings a run holds: seeded words that name a place of the town and a day (news
    such as 'I am proud of Lucy' is no event; only the bench knows which news it seeded), then
    those of an ``event`` record, when the engine writes one, that are not already found."""
    places = sorted({*places, *(sector(a) for moves in facts.moves.values() for _, a in moves if a)})
    now = facts.first or datetime(2000, 1, 1)
    found: list[Notion] = []
    for host, text in seeded_texts(facts):
        try:
            notion = parse_notion(text, host, f"event-{len(found) + 1}", places, now)
        except ValueError:
            continue
        if notion.kind == "gathering" and notion.place and notion.start:
            found.append(notion)
    for _t, who, data in facts.events:
        if data.get("status") not in (None, "learned"):
            continue
        notion = notion_of_record(data, who, f"event-{len(found) + 1}")
        if notion and not any(n.place == notion.place and n.start == notion.start for n in found):
            found.append(notion)
    return found


def notion_of_record(data: dict[str, Any], who: str, key: str) -> Notion | None:
    """A gathering from an ``event`` record's payload (what/title, host, place/address, start, end),
    or None when it lacks a what, a place or a start."""
    what = str(data.get("what") or data.get("title") or data.get("name") or "").strip()
    place = sector(str(data.get("place") or data.get("address") or ""))
    try:
        start = datetime.fromisoformat(str(data["start"])) if data.get("start") else None
        end = datetime.fromisoformat(str(data["end"])) if data.get("end") else None
    except ValueError:
        return None
    terms = content_terms(what)  # not 'the': any line with 'the' and 'party' carried 'the Valentine's Day party'
    if not what or not place or start is None or not terms:
        return None
    words = re.findall(r"[a-z]+", what.lower().replace("'s", ""))
    head = next((t for t in reversed([tokens(w).pop() for w in words if tokens(w)]) if t in terms), terms[0])
    # no host named: nobody's (the resident who learned it first is no host, and knew it from no seed)
    return Notion(key=key, host=str(data.get("host") or ""), text=what, kind="gathering", what=what, seeded=False,
                  question=f"Did you know there is {what}?", terms=terms, head=head, place=place, start=start,
                  end=end or start + timedelta(hours=2))


# -- knowledge and its spread ----------------------------------------------------------------------

class Knowing(BaseModel):
    """How one resident came to know a notion: when, through what, from whom (when a line says)."""

    time: datetime
    via: str  # seed | conversation | whisper | announcement | the memory's kind
    teller: str | None = None
    text: str = ""


def knowers(facts: RunFacts, notion: Notion, names: list[str], by_place: tuple[str, ...] = ()) -> dict[str, Knowing]:
    """Each resident whose memory carries the notion, at its first such memory, with its source:
    the speaker of a line heard just before that carried it, else a knower the memory names.
    ``by_place``: the places of other gatherings of the run called as this one is (:func:`carries`)."""
    known: dict[str, Knowing] = {}
    if notion.host in names:
        known[notion.host] = Knowing(time=_first_time(facts, notion.host), via="seed", text=notion.text)
    for t, who, kind, text in sorted(facts.memories, key=lambda m: m[0]):
        if who in known or who not in names or not carries(text, notion, names, by_place):
            continue
        teller = _heard_from(facts, notion, who, t, names, by_place)
        via = "conversation" if teller else ("announcement" if text.startswith("Announcement") else kind)
        if teller is None:
            teller = next((k for k in known if k != who and names_in(text, k, names)), None)
        known[who] = Knowing(time=t, via=via, teller=teller, text=text[:300])
    return known


def learners(facts: RunFacts, notion: Notion) -> dict[str, Knowing]:
    """Who learned a gathering the engine alone found, from its ``learned`` records (when, from whom):
    read by its words in memory, SmolLM2's 'a 25th wedding' at the cafe, learned by one resident,
    was 'known' by four who had heard of some wedding there."""
    known: dict[str, Knowing] = {}
    for t, who, data in facts.events:
        if data.get("status") == "learned" and who not in known and same_event(data, notion):
            source = str(data.get("source") or "")
            via = source if source in ("whisper", "announcement") else ("conversation" if source else "thought")
            known[who] = Knowing(time=t, via=via, teller=source if via == "conversation" else None,
                                 text=str(data.get("text") or "")[:300])
    return known


def _first_time(facts: RunFacts, name: str) -> datetime:
    return next((t for t, who, _k, _x in facts.memories if who == name), facts.first or datetime(2000, 1, 1))


def _heard_from(facts: RunFacts, notion: Notion, who: str, t: datetime, names: list[str],
                by_place: tuple[str, ...] = ()) -> str | None:
    """The speaker of the last line said to ``who`` up to ``t`` (within TOLD_WITHIN) that carried it."""
    best = None
    for when, speaker, listener, text in facts.chats:
        if when > t:
            break
        if listener == who and speaker != who and when >= t - TOLD_WITHIN and carries(text, notion, names, by_place):
            best = speaker
    return best


def carries(text: str, notion: Notion, names: list[str], by_place: tuple[str, ...] = ()) -> bool:
    """:func:`mentions`; and where other gatherings of the run are called the same (``by_place``,
    their places), the words of this one's place, or, for one with a host, at least no other's."""
    if not mentions(text, notion, names):
        return False
    if not by_place or not notion.place:
        return True
    words = set(tokens(text))
    if set(tokens(notion.place)) <= words:
        return True
    return bool(notion.host) and not any(set(tokens(p)) <= words for p in by_place)


def spread_by_hour(known: dict[str, Knowing], first: datetime, last: datetime) -> list[tuple[str, int]]:
    """('Fri 13 07:00', knowers by then) for each game hour of the run, the curve of the paper's figure."""
    hour = first.replace(minute=0, second=0, microsecond=0)
    out = []
    while hour <= last + timedelta(hours=1):
        out.append((f"{hour:%a %d %H:%M}", sum(1 for k in known.values() if k.time < hour + timedelta(hours=1))))
        hour += timedelta(hours=1)
    return out


def diffusion_edges(known: dict[str, Knowing]) -> list[tuple[str, str, str]]:
    """(teller, hearer, when) of the diffusion tree, in the order the news travelled."""
    return [(k.teller, name, f"{k.time:%a %H:%M}") for name, k in sorted(known.items(), key=lambda kv: kv[1].time)
            if k.teller]


# -- the gathering -------------------------------------------------------------------------------

def presence(facts: RunFacts, place: str, start: datetime, end: datetime) -> dict[str, tuple[datetime, timedelta]]:
    """Residents at ``place`` for at least MIN_STAY inside [start, end): name -> (arrival, time there).
    Arrival is when they entered (it may be before the start; the stay counted is inside only)."""
    out: dict[str, tuple[datetime, timedelta]] = {}
    for who, moves in facts.moves.items():
        stay, arrival = timedelta(0), None
        for i, (t, address) in enumerate(moves):
            # the last place holds to the run's last tick, never beyond: a stay after the record
            # ends is not known (a run ending Saturday night counted a Sunday meeting attended)
            until = moves[i + 1][0] if i + 1 < len(moves) else (facts.last or end)
            if sector(address).lower() != place.lower():
                continue
            inside = min(until, end) - max(t, start)
            if inside > timedelta(0):
                stay += inside
                if arrival is None:
                    arrival = _entered(moves, i, place)
        if arrival is not None and stay >= MIN_STAY:
            out[who] = (arrival, stay)
    return out


def _entered(moves: list[tuple[datetime, str]], i: int, place: str) -> datetime:
    while i > 0 and sector(moves[i - 1][1]).lower() == place.lower():
        i -= 1
    return moves[i][0]


def came_from(facts: RunFacts, who: str, arrival: datetime, place: str) -> str:
    """The place ``who`` was at before arriving at ``place`` (the last other sector, '' if none)."""
    for t, address in reversed(facts.moves.get(who, [])):
        if t < arrival and sector(address) and sector(address).lower() != place.lower():
            return sector(address)
    return ""


def went_together(facts: RunFacts, present: dict[str, tuple[datetime, timedelta]], place: str) -> list[tuple[str, str]]:
    """Pairs who arrived within TOGETHER of each other coming from the same place."""
    names = sorted(present)
    pairs = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            close = abs(present[a][0] - present[b][0]) <= TOGETHER
            origin = came_from(facts, a, present[a][0], place)
            if close and origin and origin == came_from(facts, b, present[b][0], place):
                pairs.append((a, b))
    return pairs


def asked_together(facts: RunFacts, notion: Notion, names: list[str]) -> list[tuple[str, str]]:
    """Pairs where one asked the other, in a line about the notion, to go together."""
    pairs = {tuple(sorted((s, lis))) for _t, s, lis, text in facts.chats
             if lis in names and s in names and _ASK_TOGETHER.search(text) and mentions(text, notion, names)}
    return sorted(pairs)  # type: ignore[arg-type]


def wrong_time(facts: RunFacts, notion: Notion) -> list[tuple[str, str]]:
    """(resident, time) of actions set on going to the gathering, or on being at it, outside its
    window (the day before, after it ended): the head noun with a verb of going or of being there
    ('celebrating at the party', 'chatting at the Valentine's Day party'), more than 30 minutes
    before the start or after the end. 'Telling Tom about the party at the cafe' is neither."""
    if notion.start is None or notion.end is None:
        return []
    early = notion.start - timedelta(minutes=30)
    at_it = re.compile(rf"\bat (?:the |a |an )?(?:[\w'-]+ ){{0,3}}{re.escape(notion.head)}\b", re.I)
    out = []
    for t, who, desc in facts.actions:
        if who != notion.host and (t < early or t >= notion.end) and notion.head in tokens(desc) and (
                _GO.search(desc) or _BEING_THERE.search(desc) or at_it.search(desc)):
            out.append((who, f"{t:%a %d %H:%M}"))
    return out


# -- who knows whom ------------------------------------------------------------------------------

def pairs_of(edges: Iterable[tuple[str, str]], names: list[str]) -> set[frozenset[str]]:
    """Undirected pairs among ``names`` from directed "a knows b" edges (either way is one pair)."""
    keep = set(names)
    return {frozenset((a, b)) for a, b in edges if a != b and a in keep and b in keep}


def density(pairs: set[frozenset[str]], n: int) -> float:
    """The paper's 2|E| / (|V|(|V|-1)) over undirected who-knows-whom."""
    return 0.0 if n < 2 else 2 * len(pairs) / (n * (n - 1))


def persona_edges(personas: list[Persona]) -> list[tuple[str, str]]:
    """Who knows whom as the residents file says (the graph before the run)."""
    return [(p.name, r.name) for p in personas for r in p.relationships]


def memory_edges(facts: RunFacts, names: list[str]) -> list[tuple[str, str]]:
    """(a, b) where one of a's memories names b: a name and a fact learned by meeting or being told.

    Linear in the memories: only the names with a form that could start at a word of a's memories
    are tried (:func:`_name_patterns`), each with replays.notions.names_in's whole-word test."""
    seen: set[tuple[str, str]] = set()
    by_who: dict[str, list[str]] = {}
    for _t, who, _kind, text in facts.memories:
        by_who.setdefault(who, []).append(text.lower())
    by_lead, always = _name_patterns(names)
    for who, texts in by_who.items():
        blob = "\n".join(texts)
        words = set(_LETTERS.findall(blob))
        tried = [(name, pat) for w in words for name, pat, runs in by_lead.get(w, ()) if runs <= words] + always
        for other, pattern in tried:
            if other != who and pattern.search(blob):
                seen.add((who, other))
    return sorted(seen)


_LETTERS = re.compile(r"[a-z]+")


_Named = tuple[str, re.Pattern[str]]


def _name_patterns(names: list[str]) -> tuple[dict[str, list[tuple[str, re.Pattern[str], frozenset[str]]]], list[_Named]]:
    """Each name's forms (replays.notions.name_forms, counted once for all names) as names_in's
    pattern, filed under the form's leading letters with all its runs of letters: a form matches
    only where no letter comes before or after it, so each of its runs of letters must be a whole
    word of the text, its first where the match starts. Forms not led by a letter are always tried."""
    firsts = Counter(n.split()[0] for n in names)
    count = Counter(names)
    by_lead: dict[str, list[tuple[str, re.Pattern[str], frozenset[str]]]] = {}
    always: list[_Named] = []
    for name in names:
        first = name.split()[0]
        shared = firsts[first] - count[name] > 0  # another resident's first name is the same
        for form in [name] + ([first] if not shared and first != name else []):
            pattern = re.compile(rf"(?<![a-z]){re.escape(form.lower())}(?![a-z])")
            lead = _LETTERS.match(form.lower())
            if lead:
                by_lead.setdefault(lead.group(0), []).append((name, pattern, frozenset(_LETTERS.findall(form.lower()))))
            else:
                always.append((name, pattern))
    return by_lead, always


def remembers(facts: RunFacts, who: str) -> list[str]:
    return [text for _t, w, _k, text in facts.memories if w == who]


# -- interview answers ---------------------------------------------------------------------------

class Scored(BaseModel):
    """One interview answer scored against the resident's memory."""

    resident: str
    about: str  # a notion's key, or the other resident's name
    answer: str
    claims: bool  # the answer says it knows (yes, or shows the information)
    shows: bool  # the answer carries the information itself
    supported: bool  # a memory (or the residents file) backs it
    knows: bool  # counted as knowing: claims, shows and supported
    hallucinated: bool  # claims without support
    from_fallback: bool = False  # the engine's answer from memories, after the model's were refused


def score_notion_answer(resident: str, answer: str, notion: Notion, memory: list[str], names: list[str],
                        verdict: bool | None = None) -> Scored:
    """Knowing a notion needs an answer that shows it (a gathering's words; news's host named) and a
    memory that carries it; ``verdict`` is a judge model's yes/no in place of the denial words."""
    if notion.kind == "gathering":
        shows = notion.head in tokens(answer)
    elif resident == notion.host:  # the host answers 'I am running for mayor': its words, no name needed
        shows = any(t in tokens(answer) for t in notion.terms)
    else:
        shows = mentions(answer, notion, names)
    claims = (not denies(answer) and shows) if verdict is None else verdict
    supported = resident == notion.host or any(mentions(m, notion, names) for m in memory)
    return Scored(resident=resident, about=notion.key, answer=answer, claims=claims, shows=shows,
                  supported=supported, knows=claims and shows and supported, hallucinated=claims and not supported)


def score_person_answer(resident: str, answer: str, other: str, memory: list[str], persona: Persona | None,
                        names: list[str], verdict: bool | None = None) -> Scored:
    """'Do you know <other>?': a yes is an answer that names them (or says yes) and does not deny;
    it is backed when the residents file relates them or a memory names them."""
    shows = names_in(answer, other, names)
    said_yes = bool(re.match(r"^\s*(yes|yeah|of course|sure|i do\b)", answer, re.I))
    claims = ((shows or said_yes) and not denies(answer)) if verdict is None else verdict
    related = persona is not None and any(r.name == other for r in persona.relationships)
    supported = related or any(names_in(m, other, names) for m in memory)
    return Scored(resident=resident, about=other, answer=answer, claims=claims, shows=shows, supported=supported,
                  knows=claims and supported, hallucinated=claims and not supported)


# -- the run summary's block and the timeline's section -------------------------------------------

class EventSeen(BaseModel):
    """One gathering as a run shows it: who knew when, who was there."""

    notion: Notion
    known: dict[str, Knowing]
    invited: list[str]
    present: dict[str, tuple[datetime, timedelta]]
    together: list[tuple[str, str]]
    going: dict[str, bool] = Field(default_factory=dict, description="each resident's decision, from the engine's "
                                   "``event`` records when it writes them")
    by_rule: list[str] = Field(default_factory=list, description="those whose decision the persona/closeness rule "
                               "made because the model's did not hold with its options reversed")


def events_seen(facts: RunFacts, places: Iterable[str], names: list[str]) -> list[EventSeen]:
    """Each gathering of the run (replays.society.run_notions) with its knowers and who came."""
    out = []
    notions = run_notions(facts, places)
    for notion in notions:
        # two gatherings of one name (SmolLM2 made a second 'Valentine's Day party' at the college
        # library out of a garbled retelling): a memory is of this one by its place (carries)
        namesakes = tuple(o.place for o in notions if o is not notion and o.place
                          and (o.head, sorted(o.terms)) == (notion.head, sorted(notion.terms)))
        known = (knowers(facts, notion, names, by_place=namesakes) if notion.seeded
                 else learners(facts, notion) or knowers(facts, notion, names, by_place=namesakes))
        present: dict[str, tuple[datetime, timedelta]] = {}
        invited: list[str] = []
        if notion.place and notion.start and notion.end:
            present = presence(facts, notion.place, notion.start, notion.end)
            invited = sorted(n for n, k in known.items() if n != notion.host and k.time < notion.end)
        came = {n: v for n, v in present.items() if n in invited}
        decided = decided_by(facts, notion)
        out.append(EventSeen(notion=notion, known=known, invited=invited, present=present,
                             together=went_together(facts, came, notion.place or ""),
                             going={w: going for w, (going, _by) in decided.items()},
                             by_rule=sorted(w for w, (_going, by) in decided.items() if by == "rule")))
    return out


def same_event(data: dict[str, Any], notion: Notion) -> bool:
    """Whether an ``event`` record's payload is about ``notion`` (same place and start)."""
    try:
        start = datetime.fromisoformat(str(data.get("start"))) if data.get("start") else None
    except ValueError:
        return False
    return bool(notion.place) and sector(str(data.get("place") or "")).lower() == str(notion.place).lower() \
        and start == notion.start


def decided_by(facts: RunFacts, notion: Notion) -> dict[str, tuple[bool, str]]:
    """Each resident's last decision and who made it: 'model', 'rule' (the model's answer did not
    hold with its options reversed, or fell back) or '' (a run recorded before it was written)."""
    return {who: (bool(data["going"]), str(data.get("chosen_by") or "")) for _t, who, data in facts.events
            if data.get("status") == "decided" and data.get("going") is not None and same_event(data, notion)}


def refused_events(facts: RunFacts) -> list[tuple[datetime, str, str, str]]:
    """(time, resident, words, why) of gatherings the engine named but could not resolve."""
    return [(t, who, str(d.get("text") or d.get("what") or ""), str(d.get("problem") or ""))
            for t, who, d in facts.events if d.get("status") == "refused"]


def society_summary(facts: RunFacts, personas: list[Persona], places: Iterable[str],
                    residents: Iterable[str] = ()) -> dict[str, Any]:
    """The run summary's ``society`` block: each gathering known/invited/came, and who-knows-whom
    before (the residents file) and after (memories that name someone). ``residents``: everyone
    in the run, where ``facts`` may hold no moves (a run with no gatherings need not read them)."""
    names = sorted({p.name for p in personas} | set(facts.moves) | set(residents))
    before = pairs_of(persona_edges(personas), names)
    after = before | pairs_of(memory_edges(facts, names), names)
    events = []
    for seen in events_seen(facts, places, names):
        n = seen.notion
        events.append({"what": n.what, "host": n.host, "place": n.place,
                       "window": f"{n.start:%Y-%m-%d %H:%M}-{n.end:%H:%M}" if n.start and n.end else None,
                       "known": len(seen.known), "invited": len(seen.invited),
                       "came": sum(1 for p in seen.present if p in seen.invited),
                       "at_place": len(seen.present), "said_going": sum(seen.going.values()),
                       "decided_by_rule": len(seen.by_rule),
                       "problems": n.problems})
    return {"events": events, "new_acquaintances": len(after - before),
            "density_before": round(density(before, len(names)), 3),
            "density_from_memory": round(density(after, len(names)), 3)}
