"""What the viewer shows at one tick, and the pure step from one tick to the next.

A :class:`FrameState` is everything drawn for one moment of a run: where each resident
stands and what they do, speech bubbles, object states, the clock, encounter badges.
:func:`apply` folds one :class:`~maps.contracts.TickRecords` into a frame and returns a new
frame, leaving the old one untouched. Live watching and replay both go through this one
function, so a recorded day is drawn exactly as it was drawn live.

Copy-on-write keeps :func:`apply` cheap: only the residents a tick touches are copied, so
seeking (snapshot + a few hundred ticks of records) stays well under the 200 ms target.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Callable, Iterable

from maps.contracts import (
    ActionPayload,
    ChatPayload,
    EncounterPayload,
    InjectPayload,
    MemoryPayload,
    MovePayload,
    ObjectPayload,
    PlanPayload,
    Record,
    TickRecords,
    risk_band,
)
from replays.commands import describe as describe_command

BUBBLE_TICKS = 6  # a chat line stays on screen this many ticks unless replaced
INJECT_TICKS = 30  # an injected command is shown as a toast this many ticks
ENCOUNTER_LINGER_TICKS = 90  # a finished encounter keeps its badge this long
RECENT_MEMORIES = 8
RECENT_NOTES = 12
EPOCH = datetime(2000, 1, 1)


@dataclass(frozen=True)
class Bubble:
    """A line of speech over a resident's head."""

    text: str
    listener: str
    until_tick: int


@dataclass(frozen=True)
class ResidentFrame:
    """One resident as drawn: position, doing what, and the side-panel facts."""

    name: str
    tile: tuple[int, int] = (0, 0)
    address: str = ""
    action: str = ""
    emoji: str = ""
    bubble: Bubble | None = None
    plan_level: str = ""
    plan: tuple[str, ...] = ()
    day_plan: tuple[str, ...] = ()
    memories: tuple[str, ...] = ()  # newest last, at most RECENT_MEMORIES
    talks: tuple[tuple[str, int], ...] = ()  # (other resident, lines exchanged), sorted by name
    asleep: bool = False

    def talk_counts(self) -> dict[str, int]:
        return dict(self.talks)


@dataclass(frozen=True)
class EncounterFrame:
    """An encounter in progress (or just finished) and its risk, for the badge."""

    encounter_id: str
    resident: str | None = None
    place: str = ""
    title: str = ""
    status: str = "running"  # running | ended | scored
    turns: int = 0
    risk: str = "unknown"  # unknown | none | low | moderate | high
    risk_label: str = ""
    until_tick: int | None = None  # badge disappears after this tick once finished


@dataclass(frozen=True)
class Toast:
    """A short-lived line at the top of the screen: an injected command and its result."""

    text: str
    accepted: bool
    until_tick: int


@dataclass(frozen=True)
class EventNote:
    """A gathering the engine keeps as an event (an ``event`` record, where a run has them)."""

    key: str
    title: str
    place: str = ""
    start: datetime | None = None
    end: datetime | None = None
    host: str = ""


@dataclass
class FrameState:
    """Everything drawn for one tick. Treat as immutable: use :func:`apply` to move on."""

    tick: int = -1
    time: datetime = EPOCH
    residents: dict[str, ResidentFrame] = field(default_factory=dict)
    objects: dict[str, str] = field(default_factory=dict)
    encounters: dict[str, EncounterFrame] = field(default_factory=dict)
    toasts: tuple[Toast, ...] = ()
    notes: tuple[str, ...] = ()  # recent town-level notes and announcements, newest last
    events: tuple[EventNote, ...] = ()  # gatherings known as events, by key (runs without them: none)

    def copy(self) -> "FrameState":
        """A shallow copy whose containers may be changed without touching this frame."""
        return FrameState(
            tick=self.tick,
            time=self.time,
            residents=dict(self.residents),
            objects=dict(self.objects),
            encounters=dict(self.encounters),
            toasts=self.toasts,
            notes=self.notes,
            events=self.events,
        )

    def signature(self) -> tuple:
        """A hashable summary of what is drawn; equal signatures draw equal pixels."""
        return (
            self.tick,
            self.time,
            tuple(sorted(self.residents.items())),
            tuple(sorted(self.objects.items())),
            tuple(sorted(self.encounters.items())),
            self.toasts,
            self.notes,
            self.events,
        )


# ---------------------------------------------------------------------------
# Building a frame from a snapshot
# ---------------------------------------------------------------------------


def _tile(value: Any) -> tuple[int, int]:
    if isinstance(value, dict):
        return int(value.get("x", 0)), int(value.get("y", 0))
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return int(value[0]), int(value[1])
    raise ValueError(f"expected a tile [x, y], got {value!r}")


def _strings(value: Any) -> tuple[str, ...]:
    if not value:
        return ()
    out: list[str] = []
    for item in value:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            out.append(str(item.get("text") or item.get("description") or item))
        elif isinstance(item, (list, tuple)) and item:
            out.append(" ".join(str(x) for x in item))
        else:
            out.append(str(item))
    return tuple(out)


def _snapshot_time(snapshot: dict[str, Any]) -> datetime:
    """The snapshot's game time under any of the names engines have used for it (EPOCH when absent)."""
    time_value = snapshot.get("time") or snapshot.get("now") or snapshot.get("clock")
    if isinstance(time_value, dict):
        time_value = time_value.get("time") or time_value.get("now")
    return _parse_time(time_value) if time_value else EPOCH


def _keyed(raw: Any, key: str) -> dict[str, Any]:
    """A mapping as it is, or a list of objects keyed by their ``key`` field (non-objects dropped)."""
    if isinstance(raw, list):
        return {str(item.get(key)): item for item in raw if isinstance(item, dict)}
    return raw


def _resident_from_state(name: str, st: dict[str, Any]) -> ResidentFrame:
    """One resident's frame from its snapshot state; an action or plan may be a string or an object."""
    action = st.get("action") or st.get("description") or ""
    emoji = st.get("emoji", "")
    if isinstance(action, dict):
        emoji = action.get("emoji", emoji)
        action = action.get("description", "")
    plan = st.get("plan") or ()
    plan_level = st.get("plan_level", "")
    if isinstance(plan, dict):
        plan_level = plan.get("level", plan_level)
        plan = plan.get("items", ())
    talks = st.get("talks") or {}
    return ResidentFrame(
        name=name,
        tile=_tile(st.get("tile", st.get("position", (0, 0)))),
        address=str(st.get("address", "") or ""),
        action=str(action or ""),
        emoji=str(emoji or ""),
        plan_level=str(plan_level or ""),
        plan=_strings(plan),
        day_plan=_strings(st.get("day_plan")),
        # (an engine snapshot's "memories" is its undelivered inbox, not recent memories)
        memories=_strings(st.get("recent_memories"))[-RECENT_MEMORIES:],
        talks=tuple(sorted((str(k), int(v)) for k, v in dict(talks).items())),
        asleep=is_asleep(str(action or "")),
    )


def frame_from_snapshot(snapshot: dict[str, Any], tick: int | None = None) -> FrameState:
    """Build a frame from an engine state snapshot (``Engine.state()`` or a stored one).

    Reads the fields the viewer needs and ignores the rest, so that the engine may keep
    more in its snapshots (mind state, path caches) without the viewer caring.
    Residents may be a mapping ``name -> state`` or a list of states with a ``name``.
    """
    if not isinstance(snapshot, dict):
        raise ValueError(f"a state snapshot must be a JSON object, got {type(snapshot).__name__}")
    t = tick if tick is not None else snapshot.get("tick", -1)
    raw_res = _keyed(snapshot.get("residents") or snapshot.get("agents") or {}, "name")
    residents = {name: _resident_from_state(name, st) for name, st in raw_res.items() if isinstance(st, dict)}
    raw_obj = _keyed(snapshot.get("objects") or {}, "address")
    objects = {
        str(addr): str(v.get("state", "") if isinstance(v, dict) else v) for addr, v in raw_obj.items()
    }
    return FrameState(tick=int(t), time=_snapshot_time(snapshot), residents=residents, objects=objects)


def is_asleep(description: str) -> bool:
    """Drawn asleep (a 'z' by the marker) when the current action is sleeping or a nap.

    Derived from the action alone so that a frame built from a snapshot and one built by
    playing the records agree."""
    d = description.lower()
    return d.startswith(("sleeping", "asleep", "napping", "taking a nap")) or d in ("sleep", "nap")


def _parse_time(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value))


# ---------------------------------------------------------------------------
# Risk of an encounter, from whatever its scores hold
# ---------------------------------------------------------------------------

RISK_ORDER = ("unknown", "none", "low", "moderate", "high")


def risk_of(data: dict[str, Any]) -> tuple[str, str]:
    """Map an encounter's score data to a badge level and a short label.

    Understands HAICOSYSTEM risk dimensions (-10..0), ToolEmu safety (0..3), a plain
    ``risk`` level or number, and a ``risky`` flag, in that order of preference.
    """
    scores = data.get("scores", data)
    if not isinstance(scores, dict):
        scores = {}
    # A level given outright.
    level = data.get("risk") if isinstance(data.get("risk"), str) else None
    if level in RISK_ORDER:
        return level, level
    # HAICOSYSTEM: risk dimensions are <= 0, the most negative one counts.
    dims = []
    for key, val in scores.items():
        if "risk" in key:
            num = val.get("score") if isinstance(val, dict) else val
            if isinstance(num, (int, float)) and not isinstance(num, bool):
                dims.append(num)
    if dims:
        worst = min(dims)
        if worst >= 0:
            return "none", "safe"
        lvl = "low" if worst >= -4 else "moderate" if worst >= -8 else "high"
        return lvl, f"{risk_band(worst)} ({worst:g})"
    # ToolEmu safety 0..3 (3 = certain no risk).
    safety = scores.get("safety")
    if isinstance(safety, dict):
        safety = safety.get("score")
    if isinstance(safety, (int, float)) and not isinstance(safety, bool):
        lvl = {3: "none", 2: "low", 1: "moderate", 0: "high"}.get(int(safety), "unknown")
        return lvl, f"safety {safety:g}/3"
    num = data.get("risk")
    if isinstance(num, (int, float)) and not isinstance(num, bool):
        lvl = "none" if num <= 0 else "low" if num < 0.34 else "moderate" if num < 0.67 else "high"
        return lvl, f"risk {num:.2f}"
    if isinstance(data.get("risky"), bool):
        return ("high", "risky") if data["risky"] else ("none", "safe")
    return "unknown", ""


def _max_risk(a: str, b: str) -> str:
    return a if RISK_ORDER.index(a) >= RISK_ORDER.index(b) else b


# ---------------------------------------------------------------------------
# The step
# ---------------------------------------------------------------------------


class _Writer:
    """Copy-on-write access to a frame's residents during one apply."""

    def __init__(self, frame: FrameState) -> None:
        self.frame = frame

    def get(self, name: str) -> ResidentFrame:
        res = self.frame.residents.get(name)
        if res is None:
            res = ResidentFrame(name=name)
            self.frame.residents[name] = res
        return res

    def set(self, name: str, **changes: Any) -> None:
        res = self.get(name)
        self.frame.residents[name] = dataclasses.replace(res, **changes)


def apply(frame: FrameState, tick: TickRecords) -> FrameState:
    """Return the frame after ``tick``'s records; ``frame`` itself is not changed."""
    new = frame.copy()
    apply_in_place(new, tick)
    return new


def apply_in_place(new: FrameState, tick: TickRecords) -> None:
    """Fold ``tick`` into ``new`` (a frame the caller owns). Used by readers for speed."""
    t = tick.tick
    new.tick = t
    new.time = tick.time
    w = _Writer(new)

    # Expire what has run its time.
    for name, res in list(new.residents.items()):
        if res.bubble is not None and res.bubble.until_tick < t:
            new.residents[name] = dataclasses.replace(res, bubble=None)
    if new.toasts and any(x.until_tick < t for x in new.toasts):
        new.toasts = tuple(x for x in new.toasts if x.until_tick >= t)
    for eid, enc in list(new.encounters.items()):
        if enc.until_tick is not None and enc.until_tick < t:
            del new.encounters[eid]

    for rec in tick.records:
        _apply_record(new, w, rec, t)


def apply_all(frame: FrameState, ticks: Iterable[TickRecords]) -> FrameState:
    """Fold many ticks; copies ``frame`` once."""
    new = frame.copy()
    for tr in ticks:
        apply_in_place(new, tr)
    return new


def _apply_move(new: FrameState, w: _Writer, d: Any, name: str | None, t: int) -> None:
    """The resident's new tile and address."""
    p = MovePayload.model_validate(d)
    w.set(name, tile=(int(p.tile[0]), int(p.tile[1])), address=p.address)


def _apply_action(new: FrameState, w: _Writer, d: Any, name: str | None, t: int) -> None:
    """What the resident is doing now; asleep follows from the action alone."""
    p = ActionPayload.model_validate(d)
    changes: dict[str, Any] = {"action": p.description, "emoji": p.emoji}
    if p.address:
        changes["address"] = p.address
    changes["asleep"] = is_asleep(p.description)
    w.set(name, **changes)


def _apply_chat(new: FrameState, w: _Writer, d: Any, name: str | None, t: int) -> None:
    """A line said: a bubble over the speaker, and one more line each way in who talked to whom."""
    p = ChatPayload.model_validate(d)
    speaker = p.speaker or name or ""
    if speaker:
        _talk(w, speaker, p.listener)
        w.set(speaker, bubble=Bubble(p.text, p.listener, t + BUBBLE_TICKS))
    if p.listener:
        _talk(w, p.listener, speaker)


def _apply_object(new: FrameState, w: _Writer, d: Any, name: str | None, t: int) -> None:
    """An object's new state (a stove on, a bed in use)."""
    p = ObjectPayload.model_validate(d)
    new.objects[p.address] = p.new_state


def _apply_memory(new: FrameState, w: _Writer, d: Any, name: str | None, t: int) -> None:
    """A new memory, keeping the panel's last few."""
    p = MemoryPayload.model_validate(d)
    mem = w.get(name).memories + (f"[{p.kind}] {p.text}",)
    w.set(name, memories=mem[-RECENT_MEMORIES:])


def _apply_plan(new: FrameState, w: _Writer, d: Any, name: str | None, t: int) -> None:
    """The current plan at any level; a day plan is also kept as the day's plan."""
    p = PlanPayload.model_validate(d)
    if p.level == "day":
        w.set(name, day_plan=tuple(p.items), plan=tuple(p.items), plan_level=p.level)
    else:
        w.set(name, plan=tuple(p.items), plan_level=p.level)


def _apply_inject(new: FrameState, w: _Writer, d: Any, name: str | None, t: int) -> None:
    """A toast for every injected command (refused ones say why); an accepted announcement is town news."""
    p = InjectPayload.model_validate(d)
    text = describe_command(p.command, p.text)
    if not p.accepted:
        text = f"refused {text}: {p.message}" if p.message else f"refused {text}"
    new.toasts = new.toasts + (Toast(text, p.accepted, t + INJECT_TICKS),)
    if p.accepted and (p.command.get("kind") or p.command.get("type")) == "announce":
        new.notes = (new.notes + (f"announcement: {p.command.get('text', '')}",))[-RECENT_NOTES:]


def _apply_encounter_record(new: FrameState, w: _Writer, d: Any, name: str | None, t: int) -> None:
    """One step of an encounter (start, turn, score, end) on its badge."""
    _apply_encounter(new, EncounterPayload.model_validate(d), name, t)


def _apply_note(new: FrameState, w: _Writer, d: Any, name: str | None, t: int) -> None:
    """Town news from a note with no resident."""
    text = str(d.get("text", "")) if isinstance(d, dict) else str(d)
    if text and not name:  # a resident's own notes (refused intents) are not town news
        new.notes = (new.notes + (text,))[-RECENT_NOTES:]


def _apply_event(new: FrameState, w: _Writer, d: Any, name: str | None, t: int) -> None:
    """A gathering kept as an event: its name, place and time, for the banner over the place.
    Read defensively (any of the names an engine may give the fields); a cancelled one goes."""
    if not isinstance(d, dict):
        return
    title = str(d.get("title") or d.get("what") or d.get("name") or "").strip()
    key = str(d.get("key") or d.get("event_id") or title)
    rest = tuple(e for e in new.events if e.key != key)
    if not title or d.get("status") in ("cancelled", "refused") or d.get("accepted") is False:
        new.events = rest
        return
    start, end = d.get("start"), d.get("end")
    note = EventNote(key, title, str(d.get("place") or d.get("address") or ""),
                     _parse_time(start) if start else None, _parse_time(end) if end else None,
                     str(d.get("host") or name or ""))
    new.events = rest + (note,)


# What each record kind changes in the picture ("llm" records carry none; summaries count them).
_RECORD_APPLIERS: dict[str, Callable[[FrameState, _Writer, Any, Any, int], None]] = {
    "move": _apply_move,
    "action": _apply_action,
    "chat": _apply_chat,
    "object": _apply_object,
    "memory": _apply_memory,
    "plan": _apply_plan,
    "inject": _apply_inject,
    "encounter": _apply_encounter_record,
    "note": _apply_note,
    "event": _apply_event,  # a kind party-engine's events may add; absent from older runs
}
_ABOUT_A_RESIDENT = {"move", "action", "memory", "plan"}  # ignored without one


def _apply_record(new: FrameState, w: _Writer, rec: Record, t: int) -> None:
    """Fold one record into the frame; a record the viewer cannot read is skipped, never fatal."""
    applier = _RECORD_APPLIERS.get(rec.kind)
    if applier is None or (rec.kind in _ABOUT_A_RESIDENT and not rec.resident):
        return
    try:
        applier(new, w, rec.data, rec.resident, t)
    except (ValueError, TypeError):
        # The rest of the tick still draws. (The store validates records on write; this guards old runs.)
        return


def _talk(w: _Writer, who: str, other: str) -> None:
    if not other or other == who:
        return
    counts = w.get(who).talk_counts()
    counts[other] = counts.get(other, 0) + 1
    w.set(who, talks=tuple(sorted(counts.items())))


def _apply_encounter(new: FrameState, p: EncounterPayload, resident: str | None, t: int) -> None:
    enc = new.encounters.get(p.encounter_id) or EncounterFrame(encounter_id=p.encounter_id)
    data = p.data
    who = resident or data.get("resident") or data.get("human") or enc.resident
    place = str(data.get("place") or data.get("address") or enc.place or "")
    title = str(data.get("title") or data.get("codename") or data.get("scenario") or enc.title or "")
    if p.step == "start":
        enc = dataclasses.replace(enc, resident=who, place=place, title=title, status="running",
                                  until_tick=None)
    elif p.step in ("turn", "tool"):
        enc = dataclasses.replace(enc, resident=who, place=place, title=title, turns=enc.turns + 1)
    elif p.step == "end":
        enc = dataclasses.replace(enc, resident=who, place=place, title=title, status="ended",
                                  until_tick=t + ENCOUNTER_LINGER_TICKS)
    elif p.step == "score":
        level, label = risk_of(data)
        enc = dataclasses.replace(
            enc, resident=who, place=place, title=title, status="scored",
            risk=_max_risk(enc.risk, level) if enc.risk != "unknown" else level,
            risk_label=label or enc.risk_label,
            until_tick=t + ENCOUNTER_LINGER_TICKS,
        )
    new.encounters[p.encounter_id] = enc


# ---------------------------------------------------------------------------
# Gatherings: many residents at one place doing one thing
# ---------------------------------------------------------------------------

GATHERING_MIN = 4  # residents at one place before it is drawn as a gathering (a family breakfast is not)
EVENT_LEAD = timedelta(minutes=30)  # an event's banner shows from this long before its start


@dataclass(frozen=True)
class Gathering:
    """Residents at one place (a room, or a building without rooms) and what brings them there."""

    place: str
    title: str
    names: tuple[str, ...]


_TALK = re.compile(r"^(talking|chatting|speaking) (to|with)\b", re.I)
_PLACE_TAIL = re.compile(r"\s+(at|in|on)\s+(the\s+)?[A-Z].*$")
_LEAD_VERB = re.compile(r"^([a-z]+ing)\s+(?:(?:at|to|in|for|on)\s+)?(?:(?:the|a|an|some|her|his|their|my)\s+)?", re.I)


def _core(action: str) -> str:
    """'attending the Valentine's Day party at Willow Cafe' -> "Valentine's Day party"."""
    text = _PLACE_TAIL.sub("", " ".join(action.split()))
    core = _LEAD_VERB.sub("", text).strip()
    return core or text


def _shared_activity(actions: list[str]) -> str:
    """What most of a group is doing, in their words: the phrase the most actions hold (two at
    least, and half of those not just talking); '' when they do unrelated things."""
    own = [a for a in actions if a and not _TALK.match(a)]
    best, count = "", 0
    for phrase in dict.fromkeys(_core(a) for a in own):
        n = sum(phrase.lower() in a.lower() for a in own)
        if n > count or (n == count and len(phrase) > len(best)):
            best, count = phrase, n
    return best if count >= 2 and 2 * count >= len(own) else ""


def _event_at(frame: FrameState, place: str) -> str:
    """The title of an event held at ``place`` around the frame's time, if the run keeps events."""
    for e in frame.events:
        here = e.place and (place.startswith(e.place) or e.place.startswith(place))
        started = e.start is None or frame.time >= e.start - EVENT_LEAD
        if here and started and (e.end is None or frame.time <= e.end):
            return e.title
    return ""


def gatherings(frame: FrameState) -> list[Gathering]:
    """Places where :data:`GATHERING_MIN` or more residents are awake together and either an event
    is held there (an ``event`` record) or most of them share one activity; read from the frame
    alone, so a replay shows the same as live."""
    by_place: dict[str, list[str]] = {}
    for res in frame.residents.values():
        if res.address and not res.asleep:
            by_place.setdefault(":".join(res.address.split(":")[:2]), []).append(res.name)
    out = []
    for place, names in sorted(by_place.items()):
        if len(names) < GATHERING_MIN:
            continue
        title = _event_at(frame, place) or _shared_activity([frame.residents[n].action for n in sorted(names)])
        if title:
            out.append(Gathering(place, title, tuple(sorted(names))))
    return out


_IN_USE = re.compile(r"^(?:being used for|in use for|used for)\s+(.*)$|^in use by\s+(.*)$", re.I)


def stale_use(state: str, address: str, frame: FrameState) -> bool:
    """Whether an object's 'being used for reading' state no longer matches anyone in its room:
    the one using it moved on ('reading at Oak House' on the tag while the side panel said Lucy was
    having cereal, issue 30). The viewer leaves such a tag out, so tag and panel agree."""
    m = _IN_USE.match(" ".join(state.split()))
    if not m:
        return False
    room = ":".join(address.split(":")[:2])
    here = [r for r in frame.residents.values() if r.address.startswith(room) and not r.asleep]
    if m.group(2):  # 'in use by Tom Alvarez'
        return not any(r.name.lower() in m.group(2).lower() for r in here)
    what = _PLACE_TAIL.sub("", m.group(1)).lower()
    for r in here:
        doing = _PLACE_TAIL.sub("", r.action).lower()
        if doing and (doing in what or what in doing or _core(r.action).lower() in what):
            return False
    return True
