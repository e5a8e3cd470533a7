"""A readable Markdown account of a recorded day, built from the run's record stream.

Sections: an overview, the day hour by hour (conversations, injected commands, object
changes, encounters, town notes, reflections), each resident's day as a list of actions,
the conversations as transcripts, the injected commands, and the encounters with their
scores. Everything comes from the records; nothing is invented or summarised by a model.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from maps.contracts import escape_controls
from replays.frames import risk_of
from maps.contracts import TickRecords
from replays.leaks import leaks_from_notes

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


def _q(text: str, n: int = 160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _md(text: str) -> str:
    """Escape what would break a Markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _command_words(cmd: dict[str, Any]) -> str:
    kind = cmd.get("kind") or cmd.get("type") or "command"
    if kind == "whisper":
        return f"whisper to **{cmd.get('resident') or cmd.get('name')}**: “{_q(cmd.get('text', ''))}”"
    if kind in ("object", "set_object"):
        return f"set `{cmd.get('address')}` to “{_q(cmd.get('state', ''))}”"
    if kind == "announce":
        return f"announcement: “{_q(cmd.get('text', ''))}”"
    return ", ".join(f"{k}={v}" for k, v in cmd.items())


def build_timeline(ticks: Iterable[TickRecords], meta: dict[str, Any] | None = None, title: str = "") -> str:
    """Markdown for the whole stream ``ticks`` (one pass, in order)."""
    meta = meta or {}
    hours: dict[datetime, list[str]] = defaultdict(list)
    actions: dict[str, list[tuple[datetime, str, str, str]]] = defaultdict(list)
    where: dict[str, str] = {}
    convs: list[_Conversation] = []
    open_conv: dict[str, _Conversation] = {}
    injects: list[tuple[datetime, dict[str, Any], bool, str]] = []
    encounters: dict[str, _Encounter] = {}
    memory_counts: dict[str, int] = defaultdict(int)
    reflections: dict[str, int] = defaultdict(int)
    leak_notes: list[tuple[int, str, str | None, dict[str, Any]]] = []
    residents: set[str] = set(meta.get("resident_names") or [])
    first: datetime | None = None
    last: datetime | None = None
    n_ticks = 0

    for tr in ticks:
        n_ticks += 1
        t = tr.time
        first = first or t
        last = t
        hour = t.replace(minute=0, second=0, microsecond=0)
        for rec in tr.records:
            d = rec.data if isinstance(rec.data, dict) else {}
            who = rec.resident or ""
            if who:
                residents.add(who)
            kind = rec.kind
            if kind == "move":
                if d.get("address"):
                    where[who] = str(d["address"])
            elif kind == "action":
                desc = str(d.get("description", ""))
                place = str(d.get("address") or where.get(who, ""))
                if d.get("address"):
                    where[who] = str(d["address"])
                prev = actions[who][-1] if actions[who] else None
                if desc and (prev is None or prev[1] != desc):
                    actions[who].append((t, desc, str(d.get("emoji", "")), place))
            elif kind == "chat":
                speaker = str(d.get("speaker") or who)
                listener = str(d.get("listener", ""))
                people = tuple(sorted((speaker, listener)))
                key = str(d.get("conversation_id") or "|".join(people))
                conv = open_conv.get(key)
                if conv is None or t - conv.end > CONVERSATION_GAP:
                    conv = _Conversation(key, people, t, t, where.get(speaker, ""))  # type: ignore[arg-type]
                    open_conv[key] = conv
                    convs.append(conv)
                    place = f" at {conv.place}" if conv.place else ""
                    hours[hour].append(f"- {_hm(t)} 💬 **{speaker}** starts talking with **{listener}**{place}: “{_q(d.get('text', ''), 100)}”")
                conv.end = t
                conv.lines.append((t, speaker, str(d.get("text", ""))))
            elif kind == "object":
                by = str(d.get("by") or "")
                if by not in residents:  # residents' own use of objects shows in their actions
                    hours[hour].append(
                        f"- {_hm(t)} 🔧 `{d.get('address')}`: {d.get('old_state', '?')} → **{d.get('new_state', '?')}**"
                        + (f" (by {by})" if by else "")
                    )
            elif kind == "memory":
                memory_counts[who] += 1
                if d.get("kind") == "reflection":
                    reflections[who] += 1
                    hours[hour].append(f"- {_hm(t)} 💭 **{who}** reflects: “{_q(d.get('text', ''), 140)}”")
            elif kind == "plan":
                if d.get("level") == "day" and d.get("items"):
                    items = "; ".join(_q(i, 60) for i in list(d["items"])[:6])
                    hours[hour].append(f"- {_hm(t)} 📋 **{who}** plans the day: {items}")
            elif kind == "inject":
                cmd = dict(d.get("command") or {})
                ok = bool(d.get("accepted"))
                msg = str(d.get("message", ""))
                injects.append((t, cmd, ok, msg))
                mark = "⚡" if ok else "⛔"
                status = "" if ok else f" — refused: {msg or 'invalid'}"
                hours[hour].append(f"- {_hm(t)} {mark} injected {_command_words(cmd)}{status}")
            elif kind == "encounter":
                eid = str(d.get("encounter_id", "?"))
                step = d.get("step")
                data = d.get("data") if isinstance(d.get("data"), dict) else {}
                enc = encounters.setdefault(eid, _Encounter(eid))
                enc.resident = enc.resident or who or str(data.get("resident") or data.get("human") or "")
                enc.place = enc.place or str(data.get("place") or data.get("address") or "")
                enc.title = enc.title or str(data.get("title") or data.get("codename") or data.get("scenario") or "")
                if step == "start":
                    enc.start = t
                    hours[hour].append(
                        f"- {_hm(t)} 🛡️ encounter **{enc.title or eid}** begins: {enc.resident or 'someone'} "
                        f"meets the AI assistant{' at ' + enc.place if enc.place else ''}"
                    )
                elif step in ("turn", "tool"):
                    enc.turns += 1
                elif step == "end":
                    enc.end = t
                    hours[hour].append(f"- {_hm(t)} 🛡️ encounter **{enc.title or eid}** ends after {enc.turns} steps")
                elif step == "score":
                    enc.scores.update(data.get("scores", data) if isinstance(data.get("scores", data), dict) else {})
                    enc.risk, enc.risk_label = risk_of(data)
                    if isinstance(data.get("risky"), bool):  # metrics.RISKY_DEFINITION, as judged
                        enc.risk_label += ("; " if enc.risk_label else "") + ("risky" if data["risky"] else "not risky")
                    hours[hour].append(
                        f"- {_hm(t)} 🛡️ encounter **{enc.title or eid}** scored: risk **{enc.risk}**"
                        + (f" ({enc.risk_label})" if enc.risk_label else "")
                    )
            elif kind == "note":
                if "fact_id" in str(d):
                    leak_notes.append((tr.tick, t.isoformat(), rec.resident, d))
                text = d.get("text") if isinstance(d, dict) else None
                if text:
                    hours[hour].append(f"- {_hm(t)} 📌 {_q(text)}")

    out: list[str] = []
    town = meta.get("town_name") or meta.get("town") or "the town"
    out.append(f"# {title or 'A day in ' + str(town)}")
    out.append("")
    if first is None or last is None:
        out.append("_The run has no committed ticks yet._")
        return escape_controls("\n".join(out) + "\n")
    span = f"{first:%A %d %B %Y, %H:%M} to {last:%A %d %B %Y, %H:%M}" if first.date() != last.date() \
        else f"{first:%A %d %B %Y}, {first:%H:%M} to {last:%H:%M}"
    out.append(f"{span} · {n_ticks} ticks · {len(residents)} residents"
               + (f" · model `{meta['model']}`" if meta.get("model") else "")
               + (f" · seed {meta['seed']}" if meta.get("seed") is not None else ""))
    if meta.get("forked_from"):
        out.append("")
        out.append(f"Forked from {meta['forked_from']}.")
    out.append("")
    n_ok = sum(1 for i in injects if i[2])
    out.append(f"- {len(convs)} conversations ({sum(len(c.lines) for c in convs)} lines)")
    out.append(f"- {n_ok} injected commands accepted, {len(injects) - n_ok} refused")
    out.append(f"- {len(encounters)} encounters with AI assistants")
    out.append(f"- {sum(memory_counts.values())} memories written, {sum(reflections.values())} reflections")
    out.append("")

    out.append("## The day, hour by hour")
    out.append("")
    if not hours:
        out.append("_Nothing notable happened: no conversations, injections, encounters or notes._")
        out.append("")
    for hour in sorted(hours):
        out.append(f"### {hour:%H:00}" + (f" ({hour:%a %d %b})" if first.date() != last.date() else ""))
        out.append("")
        out.extend(hours[hour])
        out.append("")

    out.append("## Residents")
    out.append("")
    for name in sorted(residents):
        acts = actions.get(name, [])
        talked = defaultdict(int)
        for c in convs:
            if name in c.people:
                talked[c.people[0] if c.people[1] == name else c.people[1]] += 1
        out.append(f"### {name}")
        out.append("")
        bits = [f"{len(acts)} actions", f"{memory_counts.get(name, 0)} memories"]
        if reflections.get(name):
            bits.append(f"{reflections[name]} reflections")
        if talked:
            bits.append("talked with " + ", ".join(f"{o} ({n}×)" for o, n in sorted(talked.items(), key=lambda kv: (-kv[1], kv[0]))))
        out.append("; ".join(bits) + ".")
        out.append("")
        for t, desc, emoji, place in acts:
            out.append(f"- {_hm(t)} {emoji + ' ' if emoji else ''}{_q(desc, 100)}" + (f" — _{place}_" if place else ""))
        if acts:
            out.append("")

    if convs:
        out.append("## Conversations")
        out.append("")
        for c in convs:
            place = f" at {c.place}" if c.place else ""
            out.append(f"### {c.people[0]} and {c.people[1]}, {_hm(c.start)}–{_hm(c.end)}{place}")
            out.append("")
            for t, speaker, text in c.lines[:MAX_TRANSCRIPT_LINES]:
                out.append(f"> **{speaker}:** {_q(text, 400)}  ")
            if len(c.lines) > MAX_TRANSCRIPT_LINES:
                out.append(f"> _… {len(c.lines) - MAX_TRANSCRIPT_LINES} more lines_")
            out.append("")

    if injects:
        out.append("## Injected commands")
        out.append("")
        out.append("| time | command | result |")
        out.append("| --- | --- | --- |")
        for t, cmd, ok, msg in injects:
            out.append(f"| {t:%H:%M:%S} | {_md(_command_words(cmd))} | {'accepted' if ok else 'refused: ' + _md(msg or 'invalid')} |")
        out.append("")

    if encounters:
        out.append("## Encounters")
        out.append("")
        out.append("| encounter | resident | place | time | steps | risk | scores |")
        out.append("| --- | --- | --- | --- | --- | --- | --- |")
        for e in encounters.values():
            when = f"{_hm(e.start)}–{_hm(e.end)}" if e.start and e.end else (_hm(e.start) if e.start else "")
            scores = ", ".join(
                f"{k} {v.get('score') if isinstance(v, dict) else v}" for k, v in list(e.scores.items())[:8]
            )
            out.append(f"| {_md(e.title or e.encounter_id)} | {_md(e.resident)} | {_md(e.place)} | {when} | "
                       f"{e.turns} | {e.risk}{' (' + _md(e.risk_label) + ')' if e.risk_label else ''} | {_md(scores)} |")
        out.append("")
    out.extend(_leaks_section(leaks_from_notes(leak_notes)))
    # Records of old runs (before the boundary refused control characters) may hold terminal
    # escapes: show them as text, never send them to the terminal.
    return escape_controls("\n".join(out).rstrip() + "\n")


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
