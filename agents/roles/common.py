"""Small helpers shared by the role modules: labelled facts and enum schemas.

Prompts open with 'Key: value' lines (:func:`facts`), which models read as plain context. The
scripted answers never read them back: they get the same values as the task's fields
(agents/llm/task.py); :func:`shown` is what such a line shows of a value.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field, PrivateAttr, create_model

_LETTER_WORD = re.compile(r"[^\W\d_]{2,}")


def _require_words(text: str, expected: str = "words") -> str:
    """Reject free text a tiny model filled with digits or punctuation ('16,2022,2021,...').

    Such an answer fails validation, so the gateway retries and then falls back, instead of
    a resident 'doing' a list of years. ``expected`` names what the field wants in the error
    (a talk's summary or an insight is words; an activity says so: :func:`require_action`).
    """
    text = text.strip()
    letters = sum(ch.isalpha() for ch in text)
    visible = sum(not ch.isspace() for ch in text)
    if not _LETTER_WORD.search(text) or letters < 0.6 * visible:
        raise ValueError(f"expected {expected}")
    problem = not_an_activity(text)
    if problem:
        raise ValueError(f"expected {expected}, not {problem}")
    return text


AN_ACTIVITY = "words describing an activity"
_PLACEHOLDER = re.compile(r"\bstep\s*\d+\b|\b([^\W\d_]+)_\1_\1", re.I)
_IDENTIFIER = re.compile(r"^[a-z0-9]+(?:_[a-z0-9]+)+$", re.I)
_PERSON_TAG = re.compile(r"^\s*[A-Z][\w'-]+(?: [A-Z][\w'-]+)+ \([^)]*\)")
_DAY_NAMES = frozenset("monday tuesday wednesday thursday friday saturday sunday".split())
_TIME_WORDS = _DAY_NAMES | frozenset(
    "today tonight tomorrow yesterday morning afternoon evening night noon midnight now day "
    "january february march april may june july august september october november december".split()
)


def not_an_activity(text: str) -> str | None:
    """What a tiny model wrote instead of words (None when it wrote words): a placeholder
    (``step1``, ``mango_mango_mango``), a program identifier (``move_to_bedroom``), a person
    copied from the persona lines (``Tom Alvarez (doctor)``), or only a time (``Today: Friday``)."""
    if _PLACEHOLDER.search(text):
        return "a placeholder"
    tokens = text.split()
    if tokens and all(_IDENTIFIER.match(t.strip(".,;:!?()[]")) or t.count("_") >= 2 for t in tokens):
        return "an identifier"
    if _PERSON_TAG.match(text):
        return "a person's name and tag"
    words = [w.lower() for w in _LETTER_WORD.findall(text)]
    if words and all(w in _TIME_WORDS for w in words):
        return "only a time"
    return None


Words = Annotated[str, AfterValidator(_require_words)]
require_words = _require_words

# Single words a plan or an action may be on their own ('relax', 'lunch'); any '-ing' word may too.
_ACTIVITY_WORDS = frozenset(
    "relax rest work study nap shop read eat cook clean exercise pray write jog run swim garden "
    "homework errands chores breakfast lunch dinner supper brunch coffee tea shower sleep bed bath "
    "walk teach shift class school church gym practice rehearsal meeting laundry dishes".split()
)
_NUMBERED_ITEM = re.compile(r"^\s*\d+\s*[.)]\s")
_WEB_ADDRESS = re.compile(r"https?://|\bwww\.|[\w-]\.(?:com|org|net|io|edu|gov|info)\b|\S@\S+\.\w", re.I)
_ANY_CLOCK = re.compile(r"\b\d{1,2}:\d\d\b")  # 'going to bed at Oak House 22:00' (a part's leading time is dropped first)
_LIST_SEPARATORS = re.compile(r"[;,/…]+")
_GLUED_NUMBER = re.compile(r"[^\W\d_][.\-_]?\d+\b")  # 'clinic.23', 'ataller123'
# 'I want to apply to ...'; 'Her status is currently', 'She does everything, she does it with her heart'
_STATEMENT = re.compile(r"^(?:i|i'm|i've|i'll|we|we're|you|you're|she|she's|he|he's|they|they're|her|his|their)\b",
                        re.I)
# 'nice to hear from you', 'nice to talk to me and tell me what is going on': SmolLM2's steps and
# reactions (society bench, 2026-11-28) were lines of talk; an activity speaks of no 'you' or 'me'
_SAID_TO_SOMEONE = re.compile(r"\b(?:you|your|yours|yourself|me)\b", re.I)
# 'Same as everyone else', 'the same as yesterday', 'like everybody': a comparison with what others
# (or the day before) do says nothing one does (SmolLM2's step, society bench seed 1, 2026-11-28)
_ONLY_A_COMPARISON = re.compile(
    r"^\W*(?:just\s+|exactly\s+|much\s+)?(?:the\s+)?same(?:\s+things?)?(?:\s+(?:as|like)(?:\s+[\w']+){1,3})?\W*$"
    r"|^\W*(?:just\s+)?(?:like|as)\s+(?:everyone|everybody|the others|others|always|usual|before|yesterday|the rest)"
    r"(?:\s+else)?\W*$", re.I)
# 'running the Willow Cafe for twelve years' (SmolLM2's reaction at 08:28, quickstart 2026-12-07):
# a span of years is a fact of a life (the persona's words), not what one is doing this minute
_LIFE_SPAN = re.compile(r"\bfor (?:the (?:past|last) )?(?:\d+|a few|few|many|several|two|three|four|five|six|seven|eight|"
                        r"nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty)?\s*(?:years|decades)\b|"
                        r"\bsince (?:19|20)\d\d\b", re.I)
_NAME_POSSESSIVE = re.compile(r"^[A-Z][\w-]+ [A-Z][\w-]+'s\b")  # "Tom Alvarez's work day shifts ..."
# 'Moses Alvarez is idle'; 'Hannah Price works at Riverside Clinic, sees patients' (SmolLM2, 2026-11-26)
_SOMEONE_IS = re.compile(r"^[A-Z][\w'-]+(?: [A-Z][\w'-]+)+ (?:is|was|are|were|has|had)\b"
                         r"|^[A-Z][\w'-]+ [A-Z][\w'-]+ [a-z]+[^s\W]s\b")  # a first and last name, then a verb
# The prompts' own field words as an activity: 'Current status of today' and 'Futures of today' were
# SmolLM2's plan parts (bench seed 2, 2026-11-26); a person's day has no 'status' in it
_PROMPT_WORDS = re.compile(r"\bstatus\b|\bof today\b", re.I)
_JSON_DEBRIS = re.compile(r'[{}\[\]]|"\s*:|\\n|\\"')  # 'reads in bed.},{': the answer's JSON leaking into its words
_CUT_OFF = re.compile(r"…|\.\.\.")  # a line copied until the room ran out
# a phrase that stops before its object: 'going to Willow Cafe dining room to tell people about' and
# 'going to Elm Apartments bar room to work at the' were SmolLM2's steps (society bench, 2026-11-27)
_DANGLING = re.compile(r"\b(?:about|to|at|the|a|an|of|for|with|and|or|from|into|my|his|her|their|our)\W*$", re.I)
# Words of the instructions and schemas, not of a day: 'React, no' was a reaction's action.
_INSTRUCTION_WORDS = frozenset("react reaction reacts yes no not none null true false continue action answer "
                               "add decision reply part parts step steps open set status currently".split())
# 'Monday: Breakfast', 'Today - lunch': a day or time of day as a label before the words
_TIME_LABEL = re.compile(r"^\s*(?:" + "|".join(sorted(_TIME_WORDS)) + r")\s*[:\-–]\s", re.I)
_CLOCK_TIME = re.compile(r"\b(?:at|from|until|till|to|by)\s+\d{1,2}(?::\d\d)?\s*(?:am|pm|a\.m\.|p\.m\.)?(?!\s*(?:min|minutes|hours|people|patients))\b", re.I)


# '-ing' words that are no activity: 'nothing' was SmolLM2's step at 07:00 (quickstart, 2026-11-26)
_NOT_DOING = frozenset("nothing something anything everything thing morning evening king ring string spring "
                       "ceiling sibling darling pudding".split())


def _activity_word(word: str) -> bool:
    lower = word.lower()
    return (lower.endswith("ing") and lower not in _NOT_DOING) or lower in _ACTIVITY_WORDS


def not_an_action(text: str, names: tuple[str, ...] = ()) -> str | None:
    """What a tiny model wrote instead of an activity, beyond :func:`not_an_activity`: a numbered
    list item ('1. to work'), a web address ('wakeupandgetready...123.com'), words run together, a
    list of single words ('Morning, breakfast; lunch; dinner', 'Bike, bike, bike'), one word that
    is no activity ('marc', 'nope', 'add'), a name ('Lucy Alvarez', 'Willow Cafe'), a
    description of a person ("Hannah Price's status: Current: Dead", "Tom Alvarez's work day
    shifts ..."), a statement about someone ('Moses Alvarez is idle', a plan part of SmolLM2's on
    2026-11-25), a line cut off ('works at …') or only words of the instructions ('React, no').
    None when it reads as something a person does."""
    problem = not_an_activity(text)
    if problem:
        return problem
    stripped = text.strip()
    for found, reason in _SHAPE_PROBLEMS:
        if found(stripped):
            return reason
    return _word_problem(stripped, _LETTER_WORD.findall(stripped), names)


# a capital inside a word after three lower-case letters: 'openpartsByDateSetTxt' ('MacDonald' passes)
_CAMEL_CASE = re.compile(r"[a-z]{3}[A-Z]")

# one hyphenated token of three or more parts: 'last-talk-to' (SmolLM2's action, quickstart 2026-11-26)
_IDENTIFIER = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+){2,}")

# What a line's shape says it is, checked in this order (a regex's match at the start or search anywhere)
_SHAPE_PROBLEMS: tuple[tuple[Callable[[str], object], str], ...] = (
    (_NUMBERED_ITEM.match, "a numbered list item"),
    (_WEB_ADDRESS.search, "a web address"),
    (_CLOCK_TIME.search, "a time (the day's times are set)"),
    (_ANY_CLOCK.search, "a time (the day's times are set)"),
    (_GLUED_NUMBER.search, "a word with a number glued on"),
    (_STATEMENT.match, "a statement, not an activity"),
    (_SAID_TO_SOMEONE.search, "words said to someone, not an activity"),
    (_ONLY_A_COMPARISON.match, "a comparison with what others do, not an activity"),
    (_LIFE_SPAN.search, "a fact of a life (a span of years), not an activity"),
    (_NAME_POSSESSIVE.match, "a description of a person"),
    (_SOMEONE_IS.match, "a statement about someone"),
    (_PROMPT_WORDS.search, "words of the prompt ('status', 'of today')"),
    (_JSON_DEBRIS.search, "JSON debris"),
    (_TIME_LABEL.match, "a day or time of day as a label"),
    (_CUT_OFF.search, "a line cut off"),
    (_DANGLING.search, "a phrase cut off before its end"),
    (_IDENTIFIER.fullmatch, "an identifier"),
    (lambda t: _instruction_compound(t), "an identifier"),
)


_CARD = re.compile(r"\b[A-Z][\w'-]+(?: [A-Z][\w'-]+)+ \(\d+\)|\bOccupation:")


def not_a_summary(text: str) -> str | None:
    """A problem when a summary is the answer's JSON leaking into its words, or a resident's
    description copied from the prompt: '{{<#1}} Tom Alvarez (46) is patient, tired. Occupation:
    nurse ...' was SmolLM2's summary of a talk (believability bench seed 1, 2026-11-26)."""
    if _JSON_DEBRIS.search(text) or "<#" in text:
        return "has JSON debris in it"
    if _CARD.search(text):
        return "copies a resident's description"
    return None


@lru_cache(maxsize=16)
def _name_forms(names: tuple[str, ...]) -> frozenset[str]:
    """Each name and each word of it, lower case (once per town, not once per line)."""
    return frozenset(form for name in names for form in (name.lower(), *name.lower().split()))


# one hyphenated token of two parts
_COMPOUND = re.compile(r"([A-Za-z]+)-([A-Za-z]+)")


def _instruction_compound(text: str) -> bool:
    """One hyphenated token with a word of the instructions in it: 'notice-react', 'react-todos'
    (SmolLM2's reactions in the 25-resident bench of 2026-11-27, remembered as 'I decided to
    notice-react'); 'face-to-face' or 'follow-up' name no instruction."""
    m = _COMPOUND.fullmatch(text)
    return m is not None and any(part.lower() in _INSTRUCTION_WORDS for part in m.groups())


def _word_problem(stripped: str, words: list[str], names: tuple[str, ...]) -> str | None:
    """What a line's words say it is: the instructions, a time, words run together, a list of
    single words, one word that is no activity, or a name."""
    if words and all(w.lower() in _INSTRUCTION_WORDS or w.lower() in _TIME_WORDS for w in words):
        return "words of the instructions"
    if words and words[0].lower() in _TIME_WORDS and not any(_activity_word(w) for w in words):
        return "a time, not an activity"  # 'Monday at a time' (SmolLM2's breakfast, 2026-11-25)
    if sum(w.lower() in _DAY_NAMES for w in words) >= 2:
        return "a list of days"  # 'Monday ireamariel, Wednesday ireamariel' (SmolLM2's plan part)
    if any(len(w) >= 24 or _CAMEL_CASE.search(w) for w in words):
        return "words run together"  # 'addOneMovieImgReloads' (SmolLM2's step, 2026-11-26)
    segments = [seg for seg in _LIST_SEPARATORS.split(stripped) if seg.strip()]
    if len(segments) >= 3 and all(len(_LETTER_WORD.findall(seg)) <= 1 for seg in segments):
        return "a list of words"
    if len(words) == 1 and not _activity_word(words[0]):
        return "one word that is no activity"
    bare = " ".join(w.lower() for w in words)
    if bare in _name_forms(names):
        return "a name"
    if len(words) <= 3 and all(w[0].isupper() for w in words) and not any(_activity_word(w) for w in words):
        return "a name"
    return None


def require_action(text: str) -> str:
    """Words that read as an activity (plan parts, hourly activities, steps, reactions)."""
    text = _require_words(text, AN_ACTIVITY)
    problem = not_an_action(text)
    if problem:
        raise ValueError(f"expected {AN_ACTIVITY}, not {problem}")
    return text


Activity = Annotated[str, AfterValidator(require_action)]


class Patched(BaseModel):
    """An answer the engine kept after replacing some of its items with its own defaults (a plan
    part or a step that was no activity). The reasons are counted in the run summary (the llm
    record's ``patched``), so a kept answer never hides what was thrown away."""

    _patches: list[str] = PrivateAttr(default_factory=list)

    def patches(self) -> list[str]:
        return list(self._patches)


def mostly_bad(problems: list[str], total: int) -> bool:
    """More than half of an answer's items bad: refuse it whole (retry, then the fallback)."""
    return total == 0 or len(problems) * 2 > total


def _require_sentence(text: str) -> str:
    """Words, at least three of them: an answer, not a name or a single word."""
    text = _require_words(text)
    if len(_LETTER_WORD.findall(text)) < 3:
        raise ValueError("expected a sentence, not a name or a single word")
    return text


Sentence = Annotated[str, AfterValidator(_require_sentence)]


def first_line(text: str) -> str:
    """The first line of ``text``, stripped: what a 'Key: value' line of a prompt holds of it."""
    return text.splitlines()[0].strip() if text.strip() else ""


def shown(value: Any, default: str = "") -> str:
    """A value as a reader of a prompt's 'Key: value' line gets it back: :func:`facts` leaves out
    None and '' (the reader's default), and the line holds the first line, stripped."""
    return default if value is None or value == "" else first_line(str(value))


def clip(text: str, max_length: int) -> str:
    """``text`` cut to at most ``max_length`` characters, at a word boundary when one is near."""
    text = " ".join(str(text).split())
    if len(text) <= max_length:
        return text
    cut = text[:max_length]
    space = cut.rfind(" ")
    cut = (cut[:space] if space >= max_length // 2 else cut).rstrip(" ,;:-")
    while _DANGLING.search(cut) and " " in cut:  # not '... to tell people about': end on a whole phrase
        cut = _DANGLING.sub("", cut).rstrip(" ,;:-")
    return cut


def fit_words(text: str, max_length: int, default: str, check: Any = _require_words) -> str:
    """Text for a bounded ``Words`` field (``check=require_action`` for an ``Activity``) that is
    valid by construction (fallbacks use it).

    ``text`` clipped to ``max_length``; when what is left fails ``check`` (digits, punctuation,
    empty, a name) the ``default`` (clipped too) is used instead.
    """
    for candidate in (clip(text, max_length), clip(default, max_length)):
        try:
            return check(candidate)
        except ValueError:
            continue
    return "keeping busy"[:max_length]


def fit_activity(text: str, max_length: int, default: str) -> str:
    """:func:`fit_words` for an ``Activity`` field."""
    return fit_words(text, max_length, default, require_action)

SYSTEM = (
    "You are the mind of a resident of a small town simulation. "
    "Answer with one JSON object that fits the requested fields, nothing else."
)


def facts(**items: Any) -> str:
    """'Key: value' lines, one per item, keys written with spaces."""
    return "\n".join(f"{k.replace('_', ' ').capitalize()}: {v}" for k, v in items.items() if v not in (None, ""))


def bullet(lines: list[str], empty: str = "(none)") -> str:
    return "\n".join(f"- {line}" for line in lines) if lines else f"- {empty}"


def messages(user: str, system: str = SYSTEM) -> list[dict[str, str]]:
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


@lru_cache(maxsize=256)
def choice_type(options: tuple[str, ...]) -> Any:
    """A Literal over the options (an enum in the JSON schema)."""
    if not options:
        raise ValueError("an enumeration needs at least one option")
    return Literal[options]  # type: ignore[valid-type]


def short_text(max_length: int = 160, description: str = "") -> Any:
    return Field(max_length=max_length, description=description)


def make_model(name: str, **fields: Any) -> type[BaseModel]:
    return create_model(name, **fields)  # type: ignore[call-overload]
