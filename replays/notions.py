"""Seeded notions as the society bench and the timeline read them: a gathering (what, host, place,
start and end) or a piece of news (someone is running for mayor), parsed from the host's own words.

This is the measuring side's own reading, independent of how the residents' minds parse events
(agents/minds), so a score cannot be fooled by the code it measures: a resident "knows" a notion
when a text of theirs carries its words (:func:`mentions`), and a gathering's place and time are
resolved here against the town's places and the run's clock. What cannot be resolved (no place
of the town named, no day, an end before the start, a time already past) is kept as a problem
on the notion, never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import date, datetime, time, timedelta
from typing import Literal

from pydantic import BaseModel, Field

from maps.contracts import MONTHS, WEEKDAYS

DEFAULT_LENGTH = timedelta(hours=2)  # a gathering given only a start ("at 6pm") lasts this long
# words that say nothing of which notion it is (verbs of planning, articles, time words)
_STOP = frozenset(
    "a an the my our his her their this that these those to of for with and or in on at from by as is am are be "
    "been being will would going go plan planning plans planned host hosting throw throwing hold holding have having "
    "give giving organise organising organize organizing run running want wants intend intends hope big little "
    "small new great nice some everyone everybody all tonight today tomorrow next".split())
_GATHER = re.compile(
    r"^\s*I(?:'m| am| will be|'ll be| want to| plan to| intend to| am going to|'m going to| will)?\s+"
    r"(?:planning|hosting|throwing|organi[sz]ing|holding|having|giving|host|throw|organi[sz]e|hold|have|give|plan)\s+"
    r"(?P<what>(?:a|an|the|my|our)\s+.+?)"
    r"(?=\s+(?:at|in|on|from|this|next|tomorrow|tonight|today|for|with|and)\b|\s*[,.;!]|\s*$)", re.I)
_NEWS = (
    (re.compile(r"^\s*I(?:'m| am)\s+(?P<rest>.+?)\s*(?:[,.;!]|$)", re.I), "is"),
    (re.compile(r"^\s*I(?: will|'ll)\s+(?P<rest>.+?)\s*(?:[,.;!]|$)", re.I), "will"),
    (re.compile(r"^\s*I(?: have|'ve)\s+(?P<rest>decided to .+?)\s*(?:[,.;!]|$)", re.I), "has"),
    (re.compile(r"^\s*I\s+(?P<verb>intend|plan|want|hope|mean)\s+(?P<rest>to .+?)\s*(?:[,.;!]|$)", re.I), ""),
)
FORMS = ("the host's own words in the first person: a gathering ('I am planning a town meeting at the Town Hall "
         "on February 14 from 6pm to 8pm') or news ('I am running for mayor', 'I intend to open a bakery'); a "
         "phrase without 'I' ('a chess match at the Park on Saturday at 3pm') is taken as a gathering the host plans")


class Notion(BaseModel):
    """One seeded notion: what its host has in mind, how to ask about it, and what resolved."""

    key: str = Field(description="short id used in reports: 'party', 'candidacy', 'event-3'")
    host: str
    text: str = Field(description="the host's words, as seeded in memory")
    kind: Literal["gathering", "news"]
    what: str = Field(description="'a Valentine's Day party' or 'running for mayor'")
    question: str = Field(description="the interview question, as the paper asked it")
    terms: list[str] = Field(description="the words that carry the notion (stemmed)")
    head: str = Field(description="the word that must be said: a gathering's head noun ('party'), news's last "
                      "word ('mayor')")
    place: str | None = Field(default=None, description="a gathering's place: a sector of the town")
    start: datetime | None = None
    end: datetime | None = None
    problems: list[str] = Field(default_factory=list, description="what could not be resolved, and why")
    seeded: bool = Field(default=True, description="a seeded notion (False: found only in the engine's event records)")


def stem(word: str) -> str:
    """A crude plural/possessive stem, the same on both sides of a comparison."""
    word = word.lower()
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def tokens(text: str) -> set[str]:
    """Stemmed words of ``text`` ("Valentine's" -> "valentine")."""
    return {stem(w) for w in re.findall(r"[a-z]+", text.lower().replace("'s", ""))}


def content_terms(phrase: str) -> list[str]:
    """The stemmed words of a phrase that say which notion it is, in order, without repeats."""
    out: list[str] = []
    for w in re.findall(r"[a-z]+", phrase.lower().replace("'s", "")):
        s = stem(w)
        if len(s) > 2 and s not in _STOP and s not in out:
            out.append(s)
    return out


def name_forms(name: str, all_names: Iterable[str] = ()) -> list[str]:
    """How a text may name a resident: the full name, and the first name when no other resident
    shares it (two Prices: 'Price' alone says neither)."""
    first = name.split()[0]
    others = [n.split()[0] for n in all_names if n != name]
    return [name] + ([first] if first not in others and first != name else [])


def names_in(text: str, name: str, all_names: Iterable[str] = ()) -> bool:
    """Whether ``text`` names resident ``name`` (whole words, any case)."""
    low = text.lower()
    return any(re.search(rf"(?<![a-z]){re.escape(f.lower())}(?![a-z])", low) for f in name_forms(name, all_names))


def mentions(text: str, notion: Notion, all_names: Iterable[str] = ()) -> bool:
    """Whether ``text`` carries the notion: a gathering's head noun and (when it has more) one more
    of its words; one of news's words and its host named (who runs for mayor is the information)."""
    words = tokens(text)
    if notion.kind == "gathering":
        others = [t for t in notion.terms if t != notion.head]
        return notion.head in words and (not others or any(t in words for t in others))
    return any(t in words for t in notion.terms) and names_in(text, notion.host, all_names)


def _what_of(text: str) -> tuple[str, str, str] | None:
    """(kind, what, question) of the host's words, or None when they fit no known form."""
    m = _GATHER.match(text)
    if m:
        what = m.group("what").strip()
        return "gathering", what, f"Did you know there is {re.sub(r'^(my|our|the) ', 'a ', what, flags=re.I)}?"
    for pattern, verb in _NEWS:
        m = pattern.match(text)
        if m:
            rest = m.group("rest").strip()
            said = f"{verb} {rest}" if verb else f"{m.group('verb').lower()}s {rest}"
            return "news", said, f"Do you know who {said}?"
    return None


def first_person(text: str) -> str:
    """The host's words: ``text`` as given, or, for a phrase that opens with an article ('a chess
    match at ...'), the gathering planned ('I am planning a chess match at ...')."""
    text = " ".join(text.split())
    if re.match(r"^(?:a|an|the|my|our)\s", text, re.I):
        return f"I am planning {text[0].lower() + text[1:]}"
    return text


def parse_notion(text: str, host: str, key: str, places: Iterable[str], now: datetime) -> Notion:
    """A notion from the host's words; a gathering's place and window resolved against ``places``
    (the town's sector names) and ``now`` (the run's start). Raises ValueError (naming the forms
    understood) when the words fit none; unresolved place or time are problems on the notion."""
    words = first_person(text)
    found = _what_of(words)
    if found is None:
        raise ValueError(f"{text!r}: cannot tell what the notion is; expected {FORMS}")
    kind, what, question = found
    terms = content_terms(what)
    if not terms:
        raise ValueError(f"{text!r}: {what!r} has no word that says what it is")
    notion = Notion(key=key, host=host, text=words, kind=kind, what=what, question=question, terms=terms,
                    head=terms[-1])
    if kind == "gathering":
        notion.place = place_named(words, places)
        if notion.place is None:
            notion.problems.append(f"no place of the town is named (places: {', '.join(sorted(places))})")
        start, end, problem = parse_window(words, now)
        notion.start, notion.end = start, end
        if problem:
            notion.problems.append(problem)
    return notion


def place_named(text: str, places: Iterable[str]) -> str | None:
    """The longest place name found in ``text`` (whole words, any case), or None."""
    low = f" {text.lower()} "
    hits = [p for p in places if p and re.search(rf"(?<![a-z]){re.escape(p.lower())}(?![a-z])", low)]
    return max(hits, key=len) if hits else None


_CLOCK = r"(?:(?P<h{n}>\d{{1,2}})(?::(?P<m{n}>\d{{2}}))?\s*(?P<ap{n}>a\.?m\.?|p\.?m\.?)?|(?P<w{n}>noon|midnight))"
_RANGE = re.compile(r"(?:from|between)?\s*" + _CLOCK.format(n=1) + r"\s*(?:-|–|to|until|till|and)\s*"
                    + _CLOCK.format(n=2), re.I)
_AT = re.compile(r"\bat\s+" + _CLOCK.format(n=1), re.I)
_PARTS = {"morning": (9, 12), "afternoon": (14, 17), "evening": (18, 21), "tonight": (19, 22), "night": (20, 23)}


def _clock(m: re.Match, n: int, pm_hint: str | None = None) -> time | None:
    word = m.group(f"w{n}")
    if word:
        return time(12) if word.lower() == "noon" else time(0)
    hour, minute = int(m.group(f"h{n}")), int(m.group(f"m{n}") or 0)
    ap = (m.group(f"ap{n}") or pm_hint or "").lower().replace(".", "")
    if ap == "" and m.group(f"m{n}") is None:
        return None  # a bare number is no time ("February 14")
    if hour > 23 or minute > 59 or (ap and not 1 <= hour <= 12):
        return None
    if ap == "pm" and hour != 12:
        hour += 12
    elif ap == "am" and hour == 12:
        hour = 0
    return time(hour, minute)


def parse_day(text: str, now: datetime) -> date | None:
    """The day a text names: 'February 14', '14 February', 'Saturday', 'today', 'tonight', 'tomorrow'."""
    low = text.lower()
    months = "|".join(m[:3] + r"[a-z]*" for m in MONTHS)
    m = re.search(rf"\b({months})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b", low) or \
        re.search(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({months})\b", low)
    if m:
        month_word, day_text = (m.group(1), m.group(2)) if m.group(1)[0].isalpha() else (m.group(2), m.group(1))
        month = next(i + 1 for i, name in enumerate(MONTHS) if name.startswith(month_word[:3]))
        try:
            return date(now.year, month, int(day_text))
        except ValueError:
            return None
    for i, name in enumerate(WEEKDAYS):
        if re.search(rf"\b{name}\b", low):
            return now.date() + timedelta(days=(i - now.weekday()) % 7)
    if "tomorrow" in low:
        return now.date() + timedelta(days=1)
    if re.search(r"\b(today|tonight|this (morning|afternoon|evening))\b", low):
        return now.date()
    return None


def parse_hours(text: str) -> tuple[time | None, time | None, bool]:
    """(start, end, whether the end is assumed) of '5pm to 7pm', '5-7pm', 'at 6pm', 'evening'."""
    for m in _RANGE.finditer(text):
        second = _clock(m, 2)
        hint = (m.group("ap2") or "") if second is not None else None
        first = _clock(m, 1, hint or None)
        if first is not None and second is not None:
            return first, second, False
    m = _AT.search(text)
    if m and _clock(m, 1) is not None:
        return _clock(m, 1), None, True
    for word, (lo, hi) in _PARTS.items():
        if re.search(rf"\b{word}\b", text.lower()):
            return time(lo), time(hi), False
    return None, None, False


def parse_window(text: str, now: datetime) -> tuple[datetime | None, datetime | None, str]:
    """(start, end, problem) of a gathering's words against the run's start ``now``."""
    day = parse_day(text, now)
    begin, finish, assumed = parse_hours(text)
    if day is None:
        return None, None, "no day is named (expected e.g. 'February 14', 'Saturday', 'tomorrow')"
    if begin is None:
        return None, None, "no time of day is named (expected e.g. 'from 5pm to 7pm', 'at 6pm', 'evening')"
    start = datetime.combine(day, begin)
    end = start + DEFAULT_LENGTH if assumed or finish is None else datetime.combine(day, finish)
    if end <= start:
        return start, end, f"the end ({end:%H:%M}) is not after the start ({start:%H:%M})"
    if start < now:
        return start, end, f"the start ({start:%Y-%m-%d %H:%M}) is before the run starts ({now:%Y-%m-%d %H:%M})"
    return start, end, ""
