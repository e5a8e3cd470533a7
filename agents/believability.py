"""A believability score for a run: the automatic checks a reader of the paper would make.

Each check is a share in [0, 1] (``None`` when the run gives it nothing to judge) over what a
run wrote to ``run.db``: plans, actions, chat lines and memories. No model calls, except the
embeddings that judge whether a chat line answers the previous one; the importance probe
(:func:`importance_probe`) and interview answers (:func:`interview_check`) do call a model and
are run by ``townsfolk bench believability``. The overall score is the mean of the checks
that could be judged. Pure functions over plain data, so the degenerate examples of issue 11
are test fixtures that must score low.
"""

from __future__ import annotations

import bisect
import json
import re
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from datetime import datetime
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from agents.roles.checks import (addresses_itself, help_desk, named_place, names_another_place, not_said_aloud,
                                   object_state, only_a_label, repeats, repeats_itself, says_nothing, words)
from agents.roles.common import not_an_action, not_an_activity
from agents.roles.sense_checks import (activity_key, activity_kinds, commentary, emoji_contradicts, emoji_kind, nonsense_line,
                                         grounded_stems, is_interruption, meal_away_from_food, no_state, off_topic)
from agents.roles.conversation import converse_prompt, line_fallback, line_schema
from agents.roles.importance import combined_importance, importance_prompt, ratings_schema
from maps.contracts import Persona
from memory.embeddings import get_embedder
from memory.runfile import resident_personas, text_records

WORK_HOURS = (10, 16)  # an hour inside every ordinary working day
# A reply at least this similar to the line before it answers it (cosine of normalised embeddings;
# MiniLM: unrelated sentences ~0.05, a reply ~0.3-0.6; the hashing stand-in only sees shared words,
# so one shared word must do)
ANSWER_MIN_COSINE = {"minilm": 0.15, "hashing": 0.05}
ECHO_MAX_COSINE = 0.97  # ... and this similar is a repeat, not an answer
MAX_CHAT_PAIRS = 400  # bound the embedding work of a long run's summary

_WORD = re.compile(r"[A-Za-z]+")
_STOP = frozenset(
    "a an the is are was were be been to of in on at and or for with by it its this that i me my you your he "
    "she his her they them their we our as from about into than then so do does did has have had will would "
    "can could just not no yes what who when where how today some there here all very also".split()
)
# phrases of our prompts' instructions and worked examples; a model that copies them is echoing
_INSTRUCTION = re.compile(
    r"\b(json|schema|respond (only )?with|answer (only )?with|return (only )?(a |the )?(json|list|object)|"
    r"output format|in the format|example:|worked example|as an ai|language model|instructions?\b|placeholder|"
    r"in the (first|third) person|original sentence|usually:|"
    r"<[a-z_]+>|\{[a-z_]+\})",
    re.I,
)
_JSON_DEBRIS = re.compile(r'[{}\[\]]|"\s*:|\\n|\\"|^\s*"|"\s*,\s*"')
_LEADING_TIME = re.compile(r"^\d{1,2}:\d{2}\s+")
_DIGIT_TOKEN = re.compile(r"^\(?\d+[.):]?$")
_NUMBERED_WORD = re.compile(r"\b([A-Za-z]+)\s+\d+\b")


class Check(BaseModel):
    """One check: the share that passed, how many items were judged, and a few failures."""

    score: float | None = Field(default=None, ge=0.0, le=1.0)
    judged: int = 0
    failures: list[str] = Field(default_factory=list, description="up to 3 failing items, for a reader")


class Believability(BaseModel):
    checks: dict[str, Check]
    overall: float | None = Field(default=None, ge=0.0, le=1.0)

    def as_summary(self) -> dict[str, Any]:
        """The run summary's ``believability`` block: each check's share, its count, and the overall."""
        out: dict[str, Any] = {"overall": _round(self.overall)}
        for name, check in self.checks.items():
            out[name] = {"score": _round(check.score), "judged": check.judged, "failures": check.failures}
        return out


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


@dataclass
class _Tally:
    passed: int = 0
    judged: int = 0
    failures: list[str] = field(default_factory=list)

    def add(self, ok: bool, item: str) -> None:
        self.judged += 1
        if ok:
            self.passed += 1
        elif len(self.failures) < 3:
            self.failures.append(item[:160])

    def check(self) -> Check:
        score = self.passed / self.judged if self.judged else None
        return Check(score=score, judged=self.judged, failures=self.failures)


# ---------------------------------------------------------------------------------------------
# Degenerate text
# ---------------------------------------------------------------------------------------------


def content_words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text) if len(w) > 2 and w.lower() not in _STOP}


def degenerate_reason(text: str, names: Iterable[str] = (), activity: bool = False, chat: bool = False) -> str | None:
    """Why a reader would reject this model text (None if they would not).

    Digit lists (``1. 1. 2. 3.``), numbered placeholders (``Zones 1 ... Zones 7``), JSON debris,
    echoes of an instruction, a bare name (``Lucy Alvarez`` as a chat line), or no words at all;
    for an ``activity`` (a plan item, an action) also what the validators refuse as no activity
    (``marc``, a web address, a list of single words: prompts.common.not_an_action).
    """
    stripped = text.strip()
    tokens = stripped.split()
    words = _WORD.findall(stripped)
    digits = sum(1 for t in tokens if _DIGIT_TOKEN.match(t))
    if digits >= 2 and digits * 2 >= len(tokens):
        return "digit list"
    if len(words) == 0:
        return "no words"
    numbered = [m.group(1).lower() for m in _NUMBERED_WORD.finditer(stripped)]
    if len(numbered) >= 2 and len(set(numbered)) < len(numbered):
        return "numbered placeholders"
    if _JSON_DEBRIS.search(stripped):
        return "JSON debris"
    if _INSTRUCTION.search(stripped):
        return "echo of the instruction"
    names = tuple(names)
    bare = " ".join(w.lower() for w in words)
    if bare in _name_lines(names):
        return "a name as a line"
    if len(set(w.lower() for w in words)) == 1 and len(words) > 2:
        return "one word repeated"
    if repeats_itself(stripped):
        return "the same sentence twice"
    if problem := help_desk(stripped):
        return problem
    if chat:  # a chat line, not an interview answer (which may read out the day's plan)
        if says_nothing(stripped):
            return "a word or two that say nothing"
        if only_a_label(stripped, tuple(names)):
            return "a speaker's label, nothing said"
        problem = not_said_aloud(stripped)
        if problem:
            return problem
    bare_text = _LEADING_TIME.sub("", stripped)
    return not_an_action(bare_text, tuple(names)) if activity else not_an_activity(bare_text)


@lru_cache(maxsize=16)
def _name_lines(names: tuple[str, ...]) -> frozenset[str]:
    """Every name, and every word of one, as a bare line would spell it (built once per town,
    not once per line: a 1,000-resident day's summary spent minutes re-reading the names)."""
    forms: set[str] = set()
    for name in names:
        parts = [p.lower() for p in _WORD.findall(name)]
        if parts:
            forms.add(" ".join(parts))
            forms.update(parts)
    return frozenset(forms)


def degenerate_check(texts: Iterable[str], names: Sequence[str], activities: Iterable[str] = (),
                     prose: Iterable[str] = ()) -> Check:
    """``texts`` (chat lines), ``activities`` (plan items, actions) and ``prose`` (what residents
    wrote down of their talks and thoughts) that a reader would accept. Each distinct text is
    judged once (a town's actions repeat the same few words thousands of times)."""
    tally = _Tally()
    names = tuple(names)
    judged: dict[tuple[str, bool, bool], str | None] = {}
    items = [(t, False, True) for t in texts] + [(t, True, False) for t in activities] + [(t, False, False) for t in prose]
    for item in items:
        if item in judged:
            reason = judged[item]
        else:
            text, activity, chat = item
            reason = judged[item] = degenerate_reason(text, names, activity, chat=chat)
        tally.add(reason is None, f"{reason}: {item[0]}")
    return tally.check()


# ---------------------------------------------------------------------------------------------
# Plans: the workplace at work hours
# ---------------------------------------------------------------------------------------------

_NO_JOB = re.compile(r"\b(retired|unemployed|none|homemaker|child)\b", re.I)
_WORK_WORDS = re.compile(r"\b(work|works|working|shift|job|office|clinic|patients?|class|classes|lecture|teach|"
                         r"teaching|study|studying|serve|serving|counter|bank|shop|store|till|bar|cafe|college|"
                         r"school|surgery|rounds|customers?|meeting|desk)\b", re.I)


def _work_terms(persona: dict[str, Any]) -> set[str]:
    place = str(persona.get("workplace", "")).split(":")[0]
    return content_words(place) | content_words(str(persona.get("occupation", "")))


def plans_at_work_check(hourly: dict[str, list[list[str]]], personas: dict[str, dict[str, Any]]) -> Check:
    """Each resident's hourly plans: is some item in work hours about their work or workplace?

    ``hourly`` maps a resident to its hourly plans (items like ``"09:00 serving coffee (180 min)"``).
    Residents with no job (retired, a child) are not judged.
    """
    tally = _Tally()
    lo, hi = WORK_HOURS
    for name, plans in hourly.items():
        persona = personas.get(name)
        if not persona or _NO_JOB.search(str(persona.get("occupation", ""))):
            continue
        terms = _work_terms(persona)
        for items in plans:
            covering = [text for text in items if _covers(text, lo, hi)]
            ok = any(_WORK_WORDS.search(t) or content_words(t) & terms for t in covering)
            tally.add(ok, f"{name}: " + "; ".join(covering or items)[:150])
    return tally.check()


_ITEM = re.compile(r"^\s*(\d{1,2}):(\d{2})\s+(.*?)(?:\((\d+) min\))?\s*$")


def _covers(item: str, lo: int, hi: int) -> bool:
    """Does an hourly item ``HH:MM activity (N min)`` overlap the hours [lo, hi)?"""
    m = _ITEM.match(item)
    if not m:
        return False
    start = int(m.group(1)) * 60 + int(m.group(2))
    end = start + int(m.group(4) or 60)
    return start < hi * 60 and end > lo * 60


def at_work_check(whereabouts: Iterable[tuple[str, datetime, str]], personas: dict[str, dict[str, Any]]) -> Check:
    """(resident, game time, address) of actions: on a weekday in core work hours (10-12, 14-16),
    the share of a working resident's actions at their workplace (not a doctor at the pub at 10)."""
    tally = _Tally()
    for name, when, address in whereabouts:
        persona = personas.get(name)
        if not persona or _NO_JOB.search(str(persona.get("occupation", ""))):
            continue
        if when.weekday() >= 5 or when.hour not in (10, 11, 14, 15):
            continue
        sector = str(persona.get("workplace", "")).split(":")[0].strip().lower()
        tally.add(bool(sector) and address.lower().startswith(sector), f"{name} at {when:%a %H:%M}: {address}")
    return tally.check()


# ---------------------------------------------------------------------------------------------
# Actions: does the place fit the action?
# ---------------------------------------------------------------------------------------------

# (what the action says, places where a reader would accept it)
PLACE_RULES: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...] = tuple(
    (re.compile(a, re.I), re.compile(p, re.I))
    for a, p in [
        (r"\b(sleep|sleeping|asleep|nap|napping|going to bed)\b", r"bed|home|house|cottage|apartment|terrace|sofa"),
        (r"\b(shower|showering|bath|bathing|brushing (his|her|their) teeth)\b", r"bath|home|house|cottage|apartment|terrace"),
        (r"\b(breakfast|lunch|dinner|supper|eating|meal)\b",
         r"kitchen|dining|table|cafe|pub|grocer|park|home|house|cottage|apartment|terrace"),
        (r"\b(teeth|toilet|washing (his|her|their) face|getting dressed)\b",
         r"bath|bed|home|house|cottage|apartment|terrace"),
        (r"\b(cook|cooking|bake|baking)\b", r"kitchen|stove|oven|cafe|pub|home|house|cottage|apartment|terrace"),
        (r"\b(pint|beer|ale|wine|drinking)\b", r"pub|bar|home|house|cottage|apartment|terrace|park"),
        (r"\b(patient|patients|examin|diagnos|prescri|nurse|nursing|triage)\w*", r"clinic|hospital|surgery"),
        (r"\b(lecture|lecturing|teach|teaching|seminar|classroom)\w*", r"college|school|classroom|library|lecture"),
        (r"\b(deposit|withdraw|loan|cashier|teller|atm)\w*", r"bank|atm"),
        (r"\b(groceries|vegetables|fruit stall|stocking shelves)\b", r"grocer|shop|store|market"),
        (r"\b(serving coffee|espresso|latte|barista|coffee machine)\b", r"cafe|coffee|kitchen|home|house|cottage|apartment"),
        (r"\b(council|mayor|town meeting)\b", r"town hall|hall"),
        (r"\b(jog|jogging|walk in the park|feeding the ducks|picnic)\b", r"park|street|river|garden"),
    ]
)


def action_place_check(actions: Iterable[tuple[str, str, str]]) -> Check:
    """(resident, description, address) triples: of the actions a rule covers, the share at a fitting place."""
    tally = _Tally()
    for name, description, address in actions:
        ok = _place_fits(description, address)
        if ok is not None:
            tally.add(ok, f"{name}: {description} @ {address}")
    return tally.check()


@lru_cache(maxsize=1 << 16)
def _place_fits(description: str, address: str) -> bool | None:
    """Whether an action is at a fitting place; None when no rule judges it (each distinct
    action and place judged once: a town repeats the same few thousands of times)."""
    for said, places in PLACE_RULES:
        if said.search(description):
            return bool(places.search(address))
    if address and named_place(description):
        # "working at Riverside Clinic" done at Oak House: the action names another place
        return names_another_place(description, address) is None
    return None


# pure functions of a text, asked of every action of a run: each distinct one is judged once
_activity_key = lru_cache(maxsize=1 << 16)(activity_key)
_is_interruption = lru_cache(maxsize=1 << 16)(is_interruption)
_emoji_contradicts = lru_cache(maxsize=1 << 16)(emoji_contradicts)
_meal_away_from_food = lru_cache(maxsize=1 << 16)(meal_away_from_food)


# ---------------------------------------------------------------------------------------------
# Conversations: does each line answer the one before?
# ---------------------------------------------------------------------------------------------


def conversation_check(
    conversations: Sequence[Sequence[tuple[str, str]]],
    embed: Callable[[list[str]], np.ndarray],
    names: Sequence[str] = (),
    min_cosine: float = ANSWER_MIN_COSINE["minilm"],
) -> Check:
    """Each reply (speaker, text) after the first line of a conversation: not degenerate, not a
    repeat of the line before, and similar to it (cosine of normalised embeddings)."""
    pairs: list[tuple[str, str, str]] = []
    for lines in conversations:
        for (prev_speaker, prev), (speaker, text) in zip(lines, lines[1:]):
            if speaker != prev_speaker:
                pairs.append((prev, text, speaker))
    pairs = pairs[:MAX_CHAT_PAIRS]
    tally = _Tally()
    if not pairs:
        return tally.check()
    vecs = embed([t for p in pairs for t in p[:2]])
    named = _names_by_word(tuple(names))
    judged: dict[tuple[str, str, str, float], str | None] = {}  # a town's talk repeats the same lines
    for i, (prev, text, speaker) in enumerate(pairs):
        cosine = float(np.dot(vecs[2 * i], vecs[2 * i + 1]))
        key = (prev, text, speaker, cosine)
        if key not in judged:
            judged[key] = _answer_problem(prev, text, speaker, cosine, names, named, min_cosine)
        reason = judged[key]
        tally.add(reason is None, f"{reason}: {prev!r} -> {speaker}: {text!r}")
    return tally.check()


def _answer_problem(prev: str, text: str, speaker: str, cosine: float, names: Sequence[str],
                    named: dict[str, tuple[str, ...]], min_cosine: float) -> str | None:
    """Why a reply does not answer the line before, or None (see :func:`conversation_check`)."""
    reason = (degenerate_reason(text, names, chat=True) or degenerate_reason(prev, names, chat=True)
              or addresses_itself(text, speaker))
    if reason is None and (cosine >= ECHO_MAX_COSINE or repeats(text, prev, _names_in_words(named, text, prev))):
        reason = "repeats the line before"
    elif reason is None and cosine < min_cosine:
        reason = f"does not answer (cosine {cosine:.2f})"
    return reason


@lru_cache(maxsize=16)
def _names_by_word(names: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """Each word of a name (as agents.roles.checks.words spells it) -> the names holding it;
    built once per town."""
    out: dict[str, list[str]] = {}
    for name in names:
        for w in set(words(name)):
            out.setdefault(w, []).append(name)
    return {w: tuple(v) for w, v in out.items()}


def _names_in_words(named: dict[str, tuple[str, ...]], *texts: str) -> tuple[str, ...]:
    """The names sharing a word with ``texts``: repeats() leaves out the words of the names it is
    given, and only those found in the two lines change its answer, so these few give the answer
    all the town's names would (at the cost of the lines, not of the town)."""
    return tuple(sorted({n for t in texts for w in set(words(t)) for n in named.get(w, ())}))


# ---------------------------------------------------------------------------------------------
# Sense: talk on the topic of the people and the place; activities, emoji, object states and a
# talk's memory that a reader would not find absurd (issue 30; agents/roles/sense_checks.py)
# ---------------------------------------------------------------------------------------------

# A line at least this similar (cosine) to something of the speakers' lives, their place or the
# everyday talk below is on topic even when its words are not theirs. MiniLM (2026-11-27): the
# issue's three lines about translating Python code at breakfast came to 0.16-0.17 at most against
# the Alvarez family's lives and everyday talk, 'debug the JavaScript function' 0.10; ordinary
# lines whose words are in nobody's life ('Could you pass me the salt, please?', 'the roof of the
# shed is leaking again', 'my knee has been hurting') 0.23-0.27. Set on those examples, so a
# guide, not a measured error rate. The hashing stand-in only sees shared words, which the word
# check already judged.
ON_TOPIC_MIN_COSINE = {"minilm": 0.2, "hashing": 1.01}
# what neighbours and family talk about: the embedding side of sense_checks.EVERYDAY
EVERYDAY_TALK = (
    "Good morning, how did you sleep? Are you hungry, breakfast is ready.",
    "How was your day at work? The shift was long and I am tired.",
    "What are your plans for today? I have to go to the shop and then to class.",
    "The weather is lovely today, maybe we can take a walk in the park later.",
    "How is your family doing? Say hello to your mother and the kids.",
    "Did you hear the news in town? Everyone is talking about it.",
    "I need to study for my exam and finish my homework tonight.",
    "Let's have dinner together this evening and talk about the weekend.",
    "Could you pass me the bread? The roof is leaking again and the garden needs work.",
    "My back has been hurting, I should see the doctor. How are you feeling?",
)
REPEAT_WINDOW_MIN = 60  # the same activity started a third time within this many minutes is a repeat


@dataclass
class Talk:
    """A conversation's setting: when it began, where, and the speakers (for its grounding)."""

    start: datetime | None = None
    place: str = ""
    doing: list[str] = field(default_factory=list)  # the speakers' actions when it began


def repeated_activity_check(timed: Iterable[tuple[str, datetime, str, str, str]]) -> Check:
    """(resident, time, description, emoji, address) of actions, in order: an activity started again
    back to back at the same place (a step begun anew, not resumed after a talk) or for the third
    time within REPEAT_WINDOW_MIN minutes is a repeat ('making coffee' four times in 50 minutes)."""
    tally = _Tally()
    state: dict[str, tuple[frozenset[str], str, bool, list[tuple[datetime, frozenset[str]]]]] = {}
    for name, when, description, _emoji, address in timed:
        prev_key, prev_place, interrupted, starts = state.get(name, (frozenset(), "", False, []))
        if _is_interruption(description):
            state[name] = (prev_key, prev_place, True, starts)
            continue
        key = _activity_key(description)
        if not key:
            continue
        if key == prev_key and (interrupted or address != prev_place):
            state[name] = (key, address, False, starts)  # resumed after a talk, or walked on: one activity
            continue
        recent = [k for w, k in starts if k == key and (when - w).total_seconds() <= REPEAT_WINDOW_MIN * 60]
        repeat = key == prev_key or len(recent) >= 2
        tally.add(not repeat, f"{name} at {when:%H:%M}: {description} (again)")
        state[name] = (key, address, False, starts + [(when, key)])
    return tally.check()


def meal_place_check(actions: Iterable[tuple[str, str, str]]) -> Check:
    """(resident, description, address): of the actions that make or eat food in a known room,
    the share in a room for it (no toast made in the living room)."""
    tally = _Tally()
    for name, description, address in actions:
        if ":" in address and _activity_key(description) and _FOODISH.search(description):
            problem = _meal_away_from_food(description, address)
            tally.add(problem is None, f"{name}: {problem or description}")
    return tally.check()


_FOODISH = re.compile(r"\b(breakfast|brunch|lunch|dinner|supper|meal|toast|eggs?|porridge|cereal|"
                      r"sandwich(es)?|soup|stew|pancakes?|bread|snack|food|cook\w*|bak\w*)\b", re.I)


def emoji_check(timed: Iterable[tuple[str, datetime, str, str, str]]) -> Check:
    """Actions with one of the engine's emoji: the share whose emoji does not stand for another
    activity (🏦 for 'making toast'). An emoji or activity that names no kind is not judged."""
    tally = _Tally()
    for name, _when, description, emoji, address in timed:
        if not emoji or _is_interruption(description):
            continue
        problem = _emoji_contradicts(emoji, description, address)
        judged = problem is not None or _emoji_judgeable(emoji, description)
        if judged:
            tally.add(problem is None, f"{name}: {problem or description}")
    return tally.check()


@lru_cache(maxsize=1 << 16)
def _emoji_judgeable(emoji: str, description: str) -> bool:
    return emoji_kind(emoji) is not None and bool(activity_kinds(description))


def object_state_check(seen: Iterable[tuple[str, str, str]], places: Sequence[str] = ()) -> Check:
    """(object, state, who saw it) of object states residents perceived and remembered: each
    distinct one judged once, the share that is a state ('off', 'being used for breakfast'), not a
    place's name or a label ('kitchen table is Cafe', then remembered by everyone in the room)."""
    tally = _Tally()
    for thing, state in dict.fromkeys((thing, state) for thing, state, _ in seen):
        problem = no_state(state, places)
        tally.add(problem is None, f"{thing} is {state!r}: {problem}")
    return tally.check()


def talk_memory_check(memories: Iterable[tuple[str, str]]) -> Check:
    """(resident, text) of what residents kept of their talks: the share that says what was said,
    not a critic's commentary on it ('Tom Alvarez's message conveys a genuine concern ...')."""
    tally = _Tally()
    for name, text in memories:
        problem = commentary(text)
        tally.add(problem is None, f"{name}: {problem or ''}: {text}")
    return tally.check()


def line_sense_check(conversations: Sequence[Sequence[tuple[str, str]]], names: Sequence[str] = ()) -> Check:
    """Every line of every talk: a line a person says, not talk about the conversation as a thing
    nor a ramble round one clause (sense_checks.nonsense_line). on_topic_lines passed SmolLM2's
    'I am not sure if I should continue the conversation. ... I am going to leave the conversation.'
    at breakfast: its words are all in a resident's life."""
    tally = _Tally()
    for lines in conversations[:MAX_CHAT_PAIRS]:
        for speaker, text in lines:
            problem = nonsense_line(text, names)
            tally.add(problem is None, f"{speaker}: {problem or ''}: {text!r}")
    return tally.check()


def talk_grounding(speakers: Iterable[str], talk: Talk, personas: dict[str, dict[str, Any]],
                   memory_log: Sequence[tuple[str, datetime, str, str]] | dict[str, list[tuple[datetime, str]]],
                   ) -> list[str]:
    """What a talk may be about: each speaker's persona (work, home, habits, people, seed memories),
    their latest memories before it began, the place, and what they were doing. ``memory_log``
    may be given already split by resident (:func:`memories_by_resident`), as a day's summary does."""
    by_resident = memory_log if isinstance(memory_log, dict) else memories_by_resident(memory_log)
    texts = [talk.place.replace(":", " "), *talk.doing]
    for name in sorted(set(speakers)):
        texts.extend(_persona_texts(personas.get(name) or {}))
        own = by_resident.get(name, [])
        upto = len(own) if talk.start is None else bisect.bisect_left(own, (talk.start,))
        texts.extend(text for _, text in own[max(0, upto - GROUNDING_MEMORIES):upto])
    return [t for t in texts if t]


def memories_by_resident(memory_log: Sequence[tuple[str, datetime, str, str]]) -> dict[str, list[tuple[datetime, str]]]:
    """(time, text) of each resident's memories, in time order."""
    out: dict[str, list[tuple[datetime, str]]] = {}
    for name, when, _kind, text in memory_log:
        out.setdefault(name, []).append((when, text))
    for rows in out.values():
        rows.sort(key=lambda row: row[0])
    return out


GROUNDING_MEMORIES = 300  # the speakers' latest memories before a talk that ground it (a day's summary stays fast)


def _persona_texts(value: Any) -> list[str]:
    """Every string of a persona (its work, home, habits, traits, people and seed memories)."""
    if isinstance(value, dict):
        return [t for v in value.values() for t in _persona_texts(v)]
    if isinstance(value, list):
        return [t for v in value for t in _persona_texts(v)]
    return [value] if isinstance(value, str) else []


def on_topic_check(conversations: Sequence[Sequence[tuple[str, str]]], groundings: Sequence[list[str]],
                   embed: Callable[[list[str]], np.ndarray], names: Sequence[str] = (),
                   min_cosine: float = ON_TOPIC_MIN_COSINE["minilm"]) -> Check:
    """Every line of every talk: on the topic of the people, the place and the moment. A line is off
    topic when none of its topical words is in its grounding (the talk's grounding and the talk's
    earlier lines that were on topic: a talk that drifted off carries none along) and it is no
    closer than ``min_cosine`` to any of that grounding or to everyday talk. Only a line the words
    call off topic is embedded (a day's summary must not embed every memory of the town)."""
    tally = _Tally()
    everyday: list[np.ndarray] = []
    for lines, grounding in list(zip(conversations, groundings))[:MAX_CHAT_PAIRS]:
        stems = grounded_stems(grounding)
        refs = list(dict.fromkeys(grounding[:EMBED_GROUNDING] + grounding[-EMBED_GROUNDING:]))
        for speaker, text in lines:
            problem = off_topic(text, stems, names)
            if problem and min_cosine <= 1:
                everyday = everyday or [embed(list(EVERYDAY_TALK))]
                problem = problem if _nearest(embed, text, refs, everyday[0]) < min_cosine else None
            tally.add(problem is None, f"{speaker}: {problem}: {text!r}")
            if problem is None:
                stems |= grounded_stems([text])
                refs.append(text)
    return tally.check()


EMBED_GROUNDING = 30  # texts of a talk's grounding embedded from each end (persona and place first, recent memories last)


def _nearest(embed: Callable[[list[str]], np.ndarray], text: str, refs: list[str], everyday: np.ndarray) -> float:
    """The highest cosine between ``text`` and any of ``refs`` or the everyday talk."""
    vecs = embed([text, *refs])
    near = [everyday @ vecs[0]] + ([vecs[1:] @ vecs[0]] if refs else [])
    return max(float(np.max(m)) for m in near)


def sense_checks(run: "RunTexts", embed: Callable[[list[str]], np.ndarray], embedder: str = "minilm") -> dict[str, Check]:
    """The checks of issue 30 over a run's texts, by name (the summary and the bench list them)."""
    names = sorted(run.personas)
    groundings = []
    by_resident = memories_by_resident(run.memory_log)
    for i, lines in enumerate(run.conversations):
        talk = run.talks[i] if i < len(run.talks) else Talk()
        groundings.append(talk_grounding({s for s, _ in lines}, talk, run.personas, by_resident))
    min_cosine = ON_TOPIC_MIN_COSINE.get(embedder, ON_TOPIC_MIN_COSINE["minilm"])
    return {
        "on_topic_lines": on_topic_check(run.conversations, groundings, embed, names, min_cosine),
        "lines_make_sense": line_sense_check(run.conversations, names),
        "no_repeated_activity": repeated_activity_check(run.timed_actions),
        "meals_at_food": meal_place_check(run.actions),
        "emoji_fits": emoji_check(run.timed_actions),
        "object_states": object_state_check(run.object_changes, sorted(run.places)),
        "talk_memories": talk_memory_check(run.talk_memories),
    }


# ---------------------------------------------------------------------------------------------
# Importance: does a death outrank a latte?
# ---------------------------------------------------------------------------------------------

# (more important, less important): a reader would rank the first higher, whoever it happened to.
# TUNING_PAIRS were in view when the importance rater's keyword prior (prompts.importance) was
# tuned, so a score on them measures the tuning, not the model: they are kept for regression
# tests of the prior and never scored. The bench scores HELD_OUT_PAIRS only; they share no
# content word with the tuning pairs (tests/agents/test_believability_bench.py enforces it), and
# nobody may tune the prior on them: add a new held-out pair instead of fixing a failing one.
TUNING_PAIRS: tuple[tuple[str, str], ...] = (
    ("My father died this morning", "I bought a latte at the cafe"),
    ("The cafe kitchen caught fire and two people were hurt", "The cafe floor is being swept"),
    ("Tom asked Lucy to marry him", "Tom is idle"),
    ("I lost my job today", "I read the morning newspaper"),
    ("My daughter was taken to hospital after a car accident", "The bed is made"),
)
HELD_OUT_PAIRS: tuple[tuple[str, str], ...] = (
    ("Grandma passed away in her sleep last night", "I watered the plants on the windowsill"),
    ("The bakery was robbed at gunpoint", "I tied my shoelaces"),
    ("Anna says she is expecting twins", "The kettle boiled"),
    ("Our house flooded and we had to leave in the night", "I put on my socks"),
    ("My best friend was diagnosed with cancer", "I refilled the stapler"),
    ("I won the scholarship I applied for", "The clock on the wall ticked"),
    ("The mayor resigned over a bribery scandal", "I folded the laundry"),
    ("My brother was arrested last night", "I sharpened a pencil"),
    ("Sam and Priya are getting divorced", "I wiped the counter"),
    ("A child went missing near the river", "The radio played a song"),
    # added 2026-11-26, written and committed before the embedding prior was built or scored
    ("The doctor says the tumour is benign", "I rinsed a mug"),
    ("My wife left me for another man", "I checked the mailbox"),
    ("Our landlord is evicting us at the end of the month", "I changed a lightbulb"),
    ("Dad had a heart attack at the office", "I stirred my tea"),
    ("A storm tore the roof off the school", "I buttered some toast"),
    ("My son graduated from university with honours", "I closed the curtains"),
    ("Priya confessed she has been stealing from the till", "The fridge hummed"),
    ("Our dog was hit by a truck and killed", "I emptied the bin"),
    ("I finally paid off the mortgage", "I fed the goldfish"),
    ("The factory is closing and everyone will be laid off", "I hung up my coat"),
    # added 2026-11-26 (afternoon), written and committed before the town-event anchors were added
    ("Someone broke into our flat and took everything", "I polished my shoes"),
    ("The bus I was on skidded off the bridge", "I peeled an orange"),
    ("A gas leak blew out the windows of the bakery", "I sorted the recycling"),
    ("A man pulled a knife on me in the alley", "I stacked the dishes"),
    ("Ben's mother collapsed and never woke up", "I oiled the squeaky hinge"),
    ("Maya got her first kiss at the dance", "I scrolled through my phone"),
    ("I was promoted to head nurse", "I tidied my desk drawer"),
    ("The whole town went without power for three days in the blizzard", "I hummed a tune"),
    ("My sister's baby was born eight weeks early", "I trimmed my fingernails"),
    ("I found out my husband has a second family", "The dishwasher finished"),
)


_SALIENT = re.compile(r"\b(died|death|dead|funeral|fire|accident|injur\w*|hospital|emergency|married|marry|"
                      r"engaged|pregnant|born|fired|arrested|stolen|robbed|election|running for)\b", re.I)
_MUNDANE = re.compile(r"\b(is idle|latte|swept|sweeping|newspaper|is made|brushing|tidy\w*)\b", re.I)


def importance_pairs_check(pairs: Iterable[tuple[str, int, str, int]]) -> Check:
    """(salient text, its rating, mundane text, its rating): the share where salient is rated higher."""
    tally = _Tally()
    for high, hi_score, low, lo_score in pairs:
        tally.add(hi_score > lo_score, f"{high!r}={hi_score} vs {low!r}={lo_score}")
    return tally.check()


def importance_from_memories(memories: Sequence[tuple[str, str, int]]) -> Check:
    """Per resident, salient memories (a death, a fire, a proposal) against mundane ones (idle, a latte).

    ``memories`` are (resident, text, importance). Pairs are matched by keyword, at most 50.
    """
    by_resident: dict[str, tuple[list[tuple[str, int]], list[tuple[str, int]]]] = {}
    for name, text, score in memories:
        salient, mundane = by_resident.setdefault(name, ([], []))
        if _SALIENT.search(text):
            salient.append((text, score))
        elif _MUNDANE.search(text):
            mundane.append((text, score))
    pairs = []
    for salient, mundane in by_resident.values():
        for (high, hs), (low, ls) in zip(salient, mundane[: len(salient)]):
            pairs.append((high, hs, low, ls))
    return importance_pairs_check(pairs[:50])


async def importance_probe(llm: Any, summary: str = "Alex Smith (34) is kind. Occupation: teacher.",
                           name: str = "Alex Smith", stored: bool = True,
                           pairs: Sequence[tuple[str, str]] = HELD_OUT_PAIRS, events: Any = None) -> Check:
    """Rate probe pairs (by default the held-out ones) through the model's ``importance`` purpose,
    one memory per call.

    Not one batched list: SmolLM2 answers a numbered list with 1, 2, 3, ... by position, and with
    the pairs interleaved (salient, mundane, ...) every mundane memory then outranked its pair
    (issue 11: 0.00 measured the list order, not the model). ``stored`` (the default) judges the
    importance a resident's memory would be stored with (the model's rating combined with the
    keyword prior, as cognition.importance does); ``stored=False`` judges the model's own ratings
    (BENCHMARKS reports both). ``events`` is the residents' life-event prior
    (cognition.life_events.prior_for the run's embedder; None: keywords only). The fallback is a
    flat 3, so a model that fails scores 0 alone."""
    schema = ratings_schema(1)
    scores: dict[str, int] = {}
    texts = list(dict.fromkeys(t for pair in pairs for t in pair))
    nearest = events.of_texts(texts) if events is not None and stored else [None] * len(texts)
    for text, event in zip(texts, nearest):
        answer = await llm.acomplete("importance", importance_prompt(summary, name, [text]), schema,
                                     schema(ratings=[3]), temperature=0.0, max_tokens=20)
        rating = int(answer.ratings[0])
        scores[text] = combined_importance(rating, text, event) if stored else rating
    return importance_pairs_check((high, scores[high], low, scores[low]) for high, low in pairs)


# ---------------------------------------------------------------------------------------------
# Replies: a probed exchange, when a short run holds no conversation
# ---------------------------------------------------------------------------------------------

OPENER = "Good morning, {first}! What are you up to today?"
PROBE_PAIRS = 3  # residents the reply probe greets


async def reply_probe(llm: Any, personas: dict[str, dict[str, Any]], memories: Sequence[tuple[str, str, int]],
                      start: datetime, pairs: int = PROBE_PAIRS) -> tuple[list[list[tuple[str, str]]], float | None]:
    """Each of up to ``pairs`` residents greets the next (a fixed opener, the engine's words) and
    the other answers through the model's ``converse`` purpose, with the prompt, schema and
    fallback a resident's mind uses. Returns the exchanges whose reply is the model's own (for
    ``conversation_check``) and the share of replies that were the engine's fallback (None with
    fewer than two residents): a fallback line is not the model's, so it is not judged as one (the
    bench counts it as a failure)."""
    names = sorted(personas)
    if len(names) < 2:
        return [], None
    exchanges, fallbacks = [], 0
    for speaker, listener in list(zip(names, names[1:] + names[:1]))[:pairs]:
        opener = OPENER.format(first=listener.split()[0])
        remembered = [t for n, t, _ in memories if n == listener][-6:]
        persona = Persona(**personas[listener])
        relation = next((r.relation for r in persona.relationships if r.name == speaker), "an acquaintance")
        acquainted = any(r.name == speaker for r in persona.relationships)
        fallback = line_fallback(speaker, 1, listener, opener, acquainted=acquainted)
        line = await llm.acomplete(
            "converse",
            converse_prompt(persona.summary(), listener, speaker, relation, f"{start:%H:%M}", "nothing in particular",
                            str(persona.home), remembered, [f"{speaker}: {opener}"], 8),
            line_schema(listener, speaker, opener, acquainted=acquainted), fallback, max_tokens=160)
        if line.utterance == fallback.utterance:
            fallbacks += 1
        else:
            exchanges.append([(speaker, opener), (listener, line.utterance)])
    return exchanges, fallbacks / min(pairs, len(names))


# ---------------------------------------------------------------------------------------------
# Interviews: does the answer mention something the resident remembers?
# ---------------------------------------------------------------------------------------------


def interview_check(answers: Iterable[tuple[str, str, Sequence[str]]], names: Sequence[str] = ()) -> Check:
    """(resident, answer, that resident's memory texts): not degenerate, and sharing at least two
    content words (besides the resident's own name) with what the resident remembers."""
    tally = _Tally()
    for name, answer, memories in answers:
        own = content_words(name)
        known = set().union(*(content_words(m) for m in memories)) - own if memories else set()
        shared = content_words(answer) & known
        reason = degenerate_reason(answer, names)
        ok = reason is None and len(shared) >= 2
        tally.add(ok, f"{name}: {reason or 'mentions nothing remembered'}: {answer!r}")
    return tally.check()


def with_fallbacks(check: Check, fallbacks: int, what: str) -> Check:
    """``check`` with ``fallbacks`` more items judged, each a failure: where the model's every
    attempt was refused and the engine answered for it, the model did not answer believably, and
    a check that left those out would score a model higher the more of its answers were refused."""
    if fallbacks <= 0:
        return check
    judged = check.judged + fallbacks
    passed = round((check.score or 0.0) * check.judged)  # a count: the score is passed / judged
    failures = (check.failures + [f"{fallbacks} {what} the engine's fallback, not the model's"])[:3]
    return Check(score=passed / judged, judged=judged, failures=failures)


def model_answers(answers: Iterable[tuple[str, str, bool]]) -> tuple[list[tuple[str, str]], float | None]:
    """(resident, answer, from_fallback) -> the model's own answers, and the share that were the
    engine's memory-built fallback (None with no answers). A fallback is made of the resident's
    memories, so it always mentions them: judged as the model's it would hide a model that never
    answers; the bench counts each as a failure instead (:func:`with_fallbacks`)."""
    answers = list(answers)
    own = [(name, text) for name, text, fallback in answers if not fallback]
    return own, (1 - len(own) / len(answers)) if answers else None


# ---------------------------------------------------------------------------------------------
# A run
# ---------------------------------------------------------------------------------------------

CHECKS = ("plans_at_work", "at_work_in_work_hours", "action_place", "no_degenerate_text", "conversation_answers", "importance_order",
          "interview_answers")
SENSE = ("on_topic_lines", "lines_make_sense", "no_repeated_activity", "meals_at_food", "emoji_fits", "object_states", "talk_memories")


def combine(checks: dict[str, Check]) -> Believability:
    """The overall score: the mean of the checks that judged something."""
    scores = [c.score for c in checks.values() if c.score is not None]
    return Believability(checks=checks, overall=sum(scores) / len(scores) if scores else None)


@dataclass
class RunTexts:
    """What the checks read from a run: plain data, so fixtures can be built by hand."""

    personas: dict[str, dict[str, Any]] = field(default_factory=dict)
    hourly: dict[str, list[list[str]]] = field(default_factory=dict)
    day_plans: list[str] = field(default_factory=list)
    actions: list[tuple[str, str, str]] = field(default_factory=list)
    whereabouts: list[tuple[str, datetime, str]] = field(default_factory=list)
    conversations: list[list[tuple[str, str]]] = field(default_factory=list)
    memories: list[tuple[str, str, int]] = field(default_factory=list)
    # the memories a resident writes in words from a model answer: a talk's summary, its thought,
    # a reflection ('Maria Alvarez' as a talk's summary and 'worthless,' as a thought were SmolLM2's)
    prose: list[str] = field(default_factory=list)
    embedder: str | None = None
    # for the sense checks: (resident, time, description, emoji, address) of actions; each
    # conversation's setting (same order as ``conversations``); (resident, time, kind, text) of
    # memories; (object, state, resident) of object states remembered; (resident, text) of talks' memories
    timed_actions: list[tuple[str, datetime, str, str, str]] = field(default_factory=list)
    talks: list[Talk] = field(default_factory=list)
    memory_log: list[tuple[str, datetime, str, str]] = field(default_factory=list)
    object_changes: list[tuple[str, str, str]] = field(default_factory=list)
    talk_memories: list[tuple[str, str]] = field(default_factory=list)
    places: set[str] = field(default_factory=set)  # addresses seen (object states must not be one)


# memory kinds written in words from model answers (a persona's own seed thoughts are thoughts too,
# and pass: they are the town's own sentences)
PROSE_KINDS = ("chat", "thought", "reflection")


def read_run(conn: sqlite3.Connection) -> RunTexts:
    """Plans, actions, chats, memories and object changes of a run database (memory tables may be absent)."""
    out = RunTexts()
    for name, persona, embedder in resident_personas(conn):
        out.personas[name] = json.loads(persona)
        out.embedder = out.embedder or embedder
    convos: dict[str, list[tuple[str, str]]] = {}
    talks: dict[str, Talk] = {}
    doing: dict[str, tuple[str, str]] = {}  # resident -> (current action, address)
    for kind, resident, data, when in text_records(conn):
        d, at, who = json.loads(data), datetime.fromisoformat(when), resident or ""
        if kind == "plan" and d.get("level") == "hourly":
            out.hourly.setdefault(who, []).append(list(d.get("items") or []))
        elif kind == "plan" and d.get("level") in ("day", "decomposed"):
            out.day_plans.extend(str(i) for i in d.get("items") or [])
        elif kind == "action":
            _read_action(out, doing, who, at, d)
        elif kind == "chat":
            key = d.get("conversation_id") or "|".join(sorted([d.get("speaker", ""), d.get("listener", "")]))
            speaker = str(d.get("speaker", ""))
            if key not in talks:
                place = doing.get(speaker, ("", ""))[1]
                talks[key] = Talk(at, place, [doing[n][0] for n in (speaker, str(d.get("listener", ""))) if n in doing])
            convos.setdefault(key, []).append((speaker, str(d.get("text", ""))))
        elif kind == "memory":
            _read_memory(out, who, at, d)
    out.conversations = list(convos.values())
    out.talks = [talks[k] for k in convos]
    return out


def _read_action(out: RunTexts, doing: dict[str, tuple[str, str]], who: str, at: datetime, d: dict[str, Any]) -> None:
    description, address = str(d.get("description", "")), str(d.get("address", ""))
    out.actions.append((who, description, address))
    out.whereabouts.append((who, at, address))
    out.timed_actions.append((who, at, description, str(d.get("emoji", "")), address))
    doing[who] = (description, address)
    if address:
        out.places.add(address)


def _read_memory(out: RunTexts, who: str, at: datetime, d: dict[str, Any]) -> None:
    text, kind = str(d.get("text", "")), str(d.get("kind", ""))
    out.memories.append((who, text, int(d.get("importance", 3))))
    out.memory_log.append((who, at, kind, text))
    if kind in PROSE_KINDS:
        out.prose.append(text)
    if kind == "chat":
        out.talk_memories.append((who, text))
    elif kind == "observation" and object_state(text):
        thing, _, state = text.partition(" is ")
        out.object_changes.append((thing.strip(), state.strip().rstrip("."), who))


def score_texts(run: RunTexts, embed: Callable[[list[str]], np.ndarray],
                extra: dict[str, Check] | None = None, embedder: str = "minilm") -> Believability:
    """Every check over a run's texts; ``extra`` adds (or replaces) model-backed checks."""
    names = sorted(set(run.personas) | {n for n, *_ in run.actions} | {s for c in run.conversations for s, _ in c})
    names = [n for n in names if n]
    # what the model wrote: plan items, chat lines, and the actions it named (the engine's own
    # "talking with ..." and "sleeping" are words, so they pass)
    chat_lines = [t for c in run.conversations for _, t in c]
    # a decomposed step's label ends with ' @ <place>', the engine's words, not the model's
    activities = [p.split(" @ ")[0] for p in run.day_plans] + [description for _, description, _ in run.actions]
    checks = {
        "plans_at_work": plans_at_work_check(run.hourly, run.personas),
        "at_work_in_work_hours": at_work_check(run.whereabouts, run.personas),
        "action_place": action_place_check(run.actions),
        "no_degenerate_text": degenerate_check(chat_lines, names, activities, run.prose),
        "conversation_answers": conversation_check(run.conversations, embed, names,
                                                   ANSWER_MIN_COSINE.get(embedder, ANSWER_MIN_COSINE["minilm"])),
        "importance_order": importance_from_memories(run.memories),
        "interview_answers": Check(),
        **sense_checks(run, embed, embedder),
    }
    checks.update(extra or {})
    return combine(checks)


def score_run_db(conn: sqlite3.Connection) -> Believability:
    """The run summary's score: every check that needs no model, with the run's own embedder. A run
    that recorded none (the routine mind keeps no memory) is judged with the hashing embedder and
    its own bar: loading MiniLM for it took over the stop signal's 10 s on a slow machine, and the
    summary of a stopped run was lost."""
    run = read_run(conn)
    embedder = get_embedder(run.embedder or "hashing")
    return score_texts(run, embedder.encode, embedder=embedder.name)


def summary_block(conn: sqlite3.Connection) -> dict[str, Any]:
    """``believability`` for ``RunStore.summary()``; a failure to score is shown, never raised."""
    try:
        return score_run_db(conn).as_summary()
    except Exception as exc:  # noqa: BLE001 - the summary must still print; the error is in it
        return {"overall": None, "error": f"{type(exc).__name__}: {exc}"}
