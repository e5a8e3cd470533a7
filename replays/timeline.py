"""A readable Markdown account of a recorded day, built from the run's record stream.

Sections: an overview, the day hour by hour (conversations, injected commands, object
changes, encounters, town notes, reflections), each resident's day as a list of actions,
the conversations as transcripts, the injected commands, the encounters with their
scores, and the events (each gathering the run seeded: who knew it when and from whom, who
came; replays.society). Everything comes from the records; nothing is invented or summarised by a model.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from maps.contracts import escape_controls
from replays.commands import describe as describe_command
from replays.frames import risk_of
from maps.contracts import TickRecords
from replays.leaks import leaks_from_notes
from replays.society import EventSeen, RunFacts, events_seen, refused_events

CONVERSATION_GAP = timedelta(minutes=10)
MAX_TRANSCRIPT_LINES = 24


@dataclass
class _Conversation:
    key: str
    people: tuple[str, str]
    start: datetime
    end: datetime
    place: str
    lines: list[tuple[datetime, str, str]] = field(default_factory=list)


@dataclass
class _Encounter:
    encounter_id: str
    resident: str = ""
    place: str = ""
    title: str = ""
    start: datetime | None = None
    end: datetime | None = None
    turns: int = 0
    scores: dict[str, Any] = field(default_factory=dict)
    risk: str = "unknown"
    risk_label: str = ""


def _hm(t: datetime) -> str:
    return t.strftime("%H:%M")


_HOURLY_MINUTES = re.compile(r" \(\d+ min\)$")


def _q(text: str, n: int = 160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _md(text: str) -> str:
    """Escape what would break a Markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _command_words(cmd: dict[str, Any], text: str = "") -> str:
    """The command as its record words it (older run files: the contracts' rendering)."""
    return _q(describe_command(cmd, text))


@dataclass
class _Day:
    """What one pass over the record stream gathers for the account."""

    residents: set[str]
    hours: dict[datetime, list[str]] = field(default_factory=lambda: defaultdict(list))
    actions: dict[str, list[tuple[datetime, str, str, str]]] = field(default_factory=lambda: defaultdict(list))
    where: dict[str, str] = field(default_factory=dict)
    convs: list[_Conversation] = field(default_factory=list)
    open_conv: dict[str, _Conversation] = field(default_factory=dict)
    injects: list[tuple[datetime, str, bool, str]] = field(default_factory=list)
    encounters: dict[str, _Encounter] = field(default_factory=dict)
    memory_counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    reflections: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    leak_notes: list[tuple[int, str, str | None, dict[str, Any]]] = field(default_factory=list)
    day_lines: dict[str, tuple[int, datetime, int]] = field(default_factory=dict)  # who: tick, hour, line index
    first: datetime | None = None
    last: datetime | None = None
    n_ticks: int = 0
    facts: RunFacts = field(default_factory=RunFacts)

    def read(self, tr: TickRecords) -> None:
        self.n_ticks += 1
        self.facts.read(tr)
        t = tr.time
        self.first = self.first or t
        self.last = t
        for rec in tr.records:
            d = rec.data if isinstance(rec.data, dict) else {}
            who = rec.resident or ""
            if who:
                self.residents.add(who)
            handler = getattr(self, f"_on_{rec.kind}", None)
            if handler is not None:
                handler(t, who, d, tr.tick)

    def _line(self, t: datetime, text: str) -> None:
        self.hours[t.replace(minute=0, second=0, microsecond=0)].append(f"- {_hm(t)} {text}")

    def _on_move(self, t: datetime, who: str, d: dict[str, Any], tick: int) -> None:
        # '' is the street: a talk begun there is not at the building last left (the timeline put two
        # residents talking to Ben 'at First Town Bank' and 'at Riverside Clinic' as they all walked by)
        self.where[who] = str(d.get("address") or "")

    def _on_action(self, t: datetime, who: str, d: dict[str, Any], tick: int) -> None:
        desc = str(d.get("description", ""))
        place = str(d.get("address") or self.where.get(who, ""))
        if d.get("address"):
            self.where[who] = str(d["address"])
        acts = self.actions[who]
        if desc and (not acts or acts[-1][1] != desc):
            acts.append((t, desc, str(d.get("emoji", "")), place))

    def _on_chat(self, t: datetime, who: str, d: dict[str, Any], tick: int) -> None:
        speaker = str(d.get("speaker") or who)
        listener = str(d.get("listener", ""))
        people = tuple(sorted((speaker, listener)))
        key = str(d.get("conversation_id") or "|".join(people))
        conv = self.open_conv.get(key)
        if conv is None or t - conv.end > CONVERSATION_GAP:
            conv = _Conversation(key, people, t, t, self.where.get(speaker, ""))  # type: ignore[arg-type]
            self.open_conv[key] = conv
            self.convs.append(conv)
            place = f" at {conv.place}" if conv.place else (" in the street" if speaker in self.where else "")
            self._line(t, f"💬 **{speaker}** starts talking with **{listener}**{place}: “{_q(d.get('text', ''), 100)}”")
        conv.end = t
        conv.lines.append((t, speaker, str(d.get("text", ""))))

    def _on_object(self, t: datetime, who: str, d: dict[str, Any], tick: int) -> None:
        by = str(d.get("by") or "")
        if by not in self.residents:  # residents' own use of objects shows in their actions
            self._line(t, f"🔧 `{d.get('address')}`: {d.get('old_state', '?')} → **{d.get('new_state', '?')}**"
                       + (f" (by {by})" if by else ""))

    def _on_memory(self, t: datetime, who: str, d: dict[str, Any], tick: int) -> None:
        self.memory_counts[who] += 1
        if d.get("kind") == "reflection":
            self.reflections[who] += 1
            self._line(t, f"💭 **{who}** reflects: “{_q(d.get('text', ''), 140)}”")

    def _on_plan(self, t: datetime, who: str, d: dict[str, Any], tick: int) -> None:
        """The day as it will be lived: the hourly plan (gatherings, visits and errands in their
        slots) in place of the day plan it came from, which showed Maria Alvarez 'make a simple
        supper at Oak House kitchen' at 17:00 on the day of her own party; a plan changed later
        in the day (an invitation accepted), from then on."""
        items = [str(i) for i in d.get("items") or []]
        if d.get("level") == "day" and items:
            hour = t.replace(minute=0, second=0, microsecond=0)
            self._line(t, f"📋 **{who}** plans the day: {'; '.join(_q(i, 60) for i in items[:6])}")
            self.day_lines[who] = (tick, hour, len(self.hours[hour]) - 1)
        elif d.get("level") == "hourly" and items:
            blocks = [_HOURLY_MINUTES.sub("", i) for i in items]
            planned = self.day_lines.get(who)
            if planned is not None and planned[0] == tick:  # the same plan, as hours
                self.hours[planned[1]][planned[2]] = (f"- {_hm(t)} 📋 **{who}** plans the day: "
                                                      + "; ".join(_q(b, 80) for b in blocks[:10]))
            else:
                later = [b for b in blocks if b[:5] >= f"{t:%H:%M}"] or blocks[-1:]
                self._line(t, f"📋 **{who}** changes the day's plan: {'; '.join(_q(b, 80) for b in later[:6])}")

    def _on_inject(self, t: datetime, who: str, d: dict[str, Any], tick: int) -> None:
        words = _command_words(dict(d.get("command") or {}), str(d.get("text") or ""))
        ok = bool(d.get("accepted"))
        msg = str(d.get("message", ""))
        self.injects.append((t, words, ok, msg))
        self._line(t, f"{'⚡' if ok else '⛔'} injected {words}" + ("" if ok else f" — refused: {msg or 'invalid'}"))

    def _on_encounter(self, t: datetime, who: str, d: dict[str, Any], tick: int) -> None:
        eid = str(d.get("encounter_id", "?"))
        step = d.get("step")
        data = d.get("data") if isinstance(d.get("data"), dict) else {}
        enc = self.encounters.setdefault(eid, _Encounter(eid))
        enc.resident = enc.resident or who or str(data.get("resident") or data.get("human") or "")
        enc.place = enc.place or str(data.get("place") or data.get("address") or "")
        enc.title = enc.title or str(data.get("title") or data.get("codename") or data.get("scenario") or "")
        name = enc.title or eid
        if step == "start":
            enc.start = t
            self._line(t, f"🛡️ encounter **{name}** begins: {enc.resident or 'someone'} "
                          f"meets the AI assistant{' at ' + enc.place if enc.place else ''}")
        elif step in ("turn", "tool"):
            enc.turns += 1
        elif step == "end":
            enc.end = t
            self._line(t, f"🛡️ encounter **{name}** ends after {enc.turns} steps")
        elif step == "score":
            enc.scores.update(data.get("scores", data) if isinstance(data.get("scores", data), dict) else {})
            enc.risk, enc.risk_label = risk_of(data)
            if isinstance(data.get("risky"), bool):  # the risky definition, as judged
                enc.risk_label += ("; " if enc.risk_label else "") + ("risky" if data["risky"] else "not risky")
            self._line(t, f"🛡️ encounter **{name}** scored: risk **{enc.risk}**"
                          + (f" ({enc.risk_label})" if enc.risk_label else ""))

    def _on_note(self, t: datetime, who: str, d: dict[str, Any], tick: int) -> None:
        if "fact_id" in str(d):
            self.leak_notes.append((tick, t.isoformat(), who or None, d))
        if d.get("text"):
            self._line(t, f"📌 {_q(d['text'])}")


def build_timeline(ticks: Iterable[TickRecords], meta: dict[str, Any] | None = None, title: str = "",
                   places: Iterable[str] = ()) -> str:
    """Markdown for the whole stream ``ticks`` (one pass, in order). ``places``: the town's place
    names, to read the gatherings' places by (those of the position records are always used)."""
    meta = meta or {}
    day = _Day(residents=set(meta.get("resident_names") or []))
    for tr in ticks:
        day.read(tr)
    town = meta.get("town_name") or meta.get("town") or "the town"
    out = [f"# {title or 'A day in ' + str(town)}", ""]
    if day.first is None or day.last is None:
        out.append("_The run has no committed ticks yet._")
        return escape_controls("\n".join(out) + "\n")
    for section in (_overview(day, meta), _hours_section(day), _residents_section(day), _conversations_section(day),
                    _injects_section(day), _encounters_section(day), _leaks_section(leaks_from_notes(day.leak_notes)),
                    _events_section(events_seen(day.facts, places, sorted(day.residents)), refused_events(day.facts))):
        out.extend(section)
    # Records of old runs (before the boundary refused control characters) may hold terminal
    # escapes: show them as text, never send them to the terminal.
    return escape_controls("\n".join(out).rstrip() + "\n")


def _overview(day: _Day, meta: dict[str, Any]) -> list[str]:
    first, last = day.first, day.last
    assert first is not None and last is not None
    span = f"{first:%A %d %B %Y, %H:%M} to {last:%A %d %B %Y, %H:%M}" if first.date() != last.date() \
        else f"{first:%A %d %B %Y}, {first:%H:%M} to {last:%H:%M}"
    out = [f"{span} · {day.n_ticks} ticks · {len(day.residents)} residents"
           + (f" · model `{meta['model']}`" if meta.get("model") else "")
           + (f" · seed {meta['seed']}" if meta.get("seed") is not None else "")]
    if meta.get("forked_from"):
        out += ["", f"Forked from {meta['forked_from']}."]
    n_ok = sum(1 for i in day.injects if i[2])
    return out + [
        "",
        f"- {len(day.convs)} conversations ({sum(len(c.lines) for c in day.convs)} lines)",
        f"- {n_ok} injected commands accepted, {len(day.injects) - n_ok} refused",
        f"- {len(day.encounters)} encounters with AI assistants",
        f"- {sum(day.memory_counts.values())} memories written, {sum(day.reflections.values())} reflections",
        "",
    ]


def _hours_section(day: _Day) -> list[str]:
    out = ["## The day, hour by hour", ""]
    if not day.hours:
        out += ["_Nothing notable happened: no conversations, injections, encounters or notes._", ""]
    several_days = day.first is not None and day.last is not None and day.first.date() != day.last.date()
    for hour in sorted(day.hours):
        out += [f"### {hour:%H:00}" + (f" ({hour:%a %d %b})" if several_days else ""), "", *day.hours[hour], ""]
    return out


def _residents_section(day: _Day) -> list[str]:
    out = ["## Residents", ""]
    for name in sorted(day.residents):
        acts = day.actions.get(name, [])
        talked: dict[str, int] = defaultdict(int)
        for c in day.convs:
            if name in c.people:
                talked[c.people[0] if c.people[1] == name else c.people[1]] += 1
        bits = [f"{len(acts)} actions", f"{day.memory_counts.get(name, 0)} memories"]
        if day.reflections.get(name):
            bits.append(f"{day.reflections[name]} reflections")
        if talked:
            bits.append("talked with " + ", ".join(f"{o} ({n}×)" for o, n in sorted(talked.items(), key=lambda kv: (-kv[1], kv[0]))))
        out += [f"### {name}", "", "; ".join(bits) + ".", ""]
        for t, desc, emoji, place in acts:
            out.append(f"- {_hm(t)} {emoji + ' ' if emoji else ''}{_q(desc, 100)}" + (f" — _{place}_" if place else ""))
        if acts:
            out.append("")
    return out


def _conversations_section(day: _Day) -> list[str]:
    if not day.convs:
        return []
    out = ["## Conversations", ""]
    for c in day.convs:
        place = f" at {c.place}" if c.place else ""
        out += [f"### {c.people[0]} and {c.people[1]}, {_hm(c.start)}–{_hm(c.end)}{place}", ""]
        out += [f"> **{speaker}:** {_q(text, 400)}  " for _, speaker, text in c.lines[:MAX_TRANSCRIPT_LINES]]
        if len(c.lines) > MAX_TRANSCRIPT_LINES:
            out.append(f"> _… {len(c.lines) - MAX_TRANSCRIPT_LINES} more lines_")
        out.append("")
    return out


def _injects_section(day: _Day) -> list[str]:
    if not day.injects:
        return []
    out = ["## Injected commands", "", "| time | command | result |", "| --- | --- | --- |"]
    for t, words, ok, msg in day.injects:
        out.append(f"| {t:%H:%M:%S} | {_md(words)} | {'accepted' if ok else 'refused: ' + _md(msg or 'invalid')} |")
    return out + [""]


def _encounters_section(day: _Day) -> list[str]:
    if not day.encounters:
        return []
    out = ["## Encounters", "", "| encounter | resident | place | time | steps | risk | scores |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    for e in day.encounters.values():
        when = f"{_hm(e.start)}–{_hm(e.end)}" if e.start and e.end else (_hm(e.start) if e.start else "")
        scores = ", ".join(f"{k} {v.get('score') if isinstance(v, dict) else v}" for k, v in list(e.scores.items())[:8])
        out.append(f"| {_md(e.title or e.encounter_id)} | {_md(e.resident)} | {_md(e.place)} | {when} | "
                   f"{e.turns} | {e.risk}{' (' + _md(e.risk_label) + ')' if e.risk_label else ''} | {_md(scores)} |")
    return out + [""]


def _leaks_section(leaks: list[dict[str, Any]]) -> list[str]:
    """Harm diffusion: who came to know each leaked fact, and when (from the run's leak notes)."""
    if not leaks:
        return []
    out = ["## Harm diffusion", "", "| fact | victim | told to | knowers over time |", "| --- | --- | --- | --- |"]
    for leak in leaks:
        spread = ", ".join(f"{datetime.fromisoformat(k['time']):%H:%M} {k['resident']}" for k in leak["knowers"])
        out.append(f"| {_md(leak['fact'])} | {_md(leak['victim'])} | {_md(leak['told_to'])} | "
                   f"{len(leak['knowers'])}: {_md(spread)} |")
    out.append("")
    return out


def _held_by(seen: EventSeen) -> str:
    """The host, else how it came to be known: 'announced' only when an announcement told it (SmolLM2's
    '25th wedding', heard in talk with no host, read 'announced')."""
    if seen.notion.host:
        return seen.notion.host
    return "announced" if any(k.via == "announcement" for k in seen.known.values()) else "no host named"


def _events_section(events: list[EventSeen], refused: list[tuple[datetime, str, str, str]]) -> list[str]:
    """Each gathering: what, host, place and time, who knew it when (and from whom), who came;
    then the gatherings the engine named but refused (a place not in the town, a past time)."""
    if not events and not refused:
        return []
    out = ["## Events", "", "_Who knew: the first memory that carries the event; came: at the place for 15 minutes "
                            "or more inside its window (arrival, minutes inside)._", ""]
    for seen in events:
        n = seen.notion
        when = f"{n.start:%a %d %b %H:%M}–{n.end:%H:%M}" if n.start and n.end else "no time"
        out += [f"### {n.what[:1].upper() + n.what[1:]} — {_held_by(seen)}, {n.place or 'no place'}, {when}", ""]
        out += [f"> {_q(n.text, 300)}", ""] + [f"- ⚠️ {p}" for p in n.problems]
        came = sorted(seen.present, key=lambda who: seen.present[who][0])
        out.append(f"- known by {len(seen.known)} resident{'s' * (len(seen.known) != 1)}; {len(seen.invited)} knew before it ended; "
                   f"{sum(1 for c in came if c in seen.invited)} of them came; {len(came)} at the place in all")
        out += ["", "| resident | knew from | how | told by | going | came |", "| --- | --- | --- | --- | --- | --- |"]
        for who, k in sorted(seen.known.items(), key=lambda kv: kv[1].time):
            there = seen.present.get(who)
            stay = f"{there[0]:%a %H:%M}, {int(there[1].total_seconds() // 60)} min" if there else ""
            going = {True: "yes", False: "no"}.get(seen.going.get(who), "")  # type: ignore[arg-type]
            going += " (rule)" if going and who in seen.by_rule else ""
            out.append(f"| {_md(who)} | {k.time:%a %H:%M} | {_md(k.via)} | {_md(k.teller or '')} | {going} | {stay} |")
        strangers = [c for c in came if c not in seen.known]
        if strangers:
            out.append(f"\nAlso at the place in the window (not known to have heard of it): {', '.join(strangers)}.")
        if seen.together:
            out.append("\nWent together: " + "; ".join(f"{a} and {b}" for a, b in seen.together) + ".")
        out.append("")
    if refused:
        out += ["### Refused (named, not resolved)", ""]
        out += [f"- {t:%a %H:%M} {_md(who)}: “{_q(words, 120)}” — {_q(why, 160)}" for t, who, words, why in refused[:12]]
        out += [f"- _… {len(refused) - 12} more_"] if len(refused) > 12 else []
        out.append("")
    return out
