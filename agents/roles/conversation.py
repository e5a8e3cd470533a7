"""Conversation prompts: the next line to say, and the summary each side keeps afterwards.

Purposes: ``converse`` (one line, and whether the talk is over) and ``chat_summary`` (the
memory of the conversation, its importance, and a planning thought it leads to).
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agents.llm.schemas import OPENING
from agents.llm.scripted import first_accepted
from agents.llm.task import Prompt, Task
from agents.roles.checks import (addresses_itself, claims_as_own, copied_from, help_desk, introduces_itself, just_a_name,
                                   leaves_out, not_said_aloud, only_a_label, repeats, repeats_itself, says_nothing, speaks_as,
                                   speaks_of_listener, words)
from agents.roles.common import Patched, Words, clip, bullet, facts, messages, not_a_summary, not_an_activity, shown
from agents.roles.importance import heuristic_importance
from agents.roles.sense_checks import commentary
from agents.roles.wording import about_partner, in_third_person


# How the embedded model's line may open (grammar only, agents/llm/schemas.OPENING): SmolLM2 began
# most lines with a name ('Lucy Alvarez', 'Tom Alvarez: ...', 'Tom Alvarez, I'm ...') or the
# partner's line copied, which the checks refuse. On 24 tuning exchanges (not the bench's opener)
# the lines it wrote under these openings were accepted 23 times against 11, and answered the line
# before (MiniLM cosine >= 0.15) 17 times against 9.
SPEECH_OPENINGS = {OPENING: ["I ", "I'", "Yes", "No", "Oh", "Well", "That", "We ", "Hi", "Hey"]}


class Line(BaseModel):
    utterance: str = Field(description="what to say next, one or two sentences", json_schema_extra=SPEECH_OPENINGS)
    end: bool = Field(default=False, description="true when the conversation is over")


class ChatSummary(BaseModel):
    summary: Words = Field(description="one or two sentences: what was said, from my point of view")
    importance: int = Field(ge=1, le=10, description="1 mundane .. 10 extremely poignant")
    thought: str = Field(default="", max_length=120, description="what I mean to do about it, if anything")


# A summary needs this many words: SmolLM2 summed up a talk as 'Maria Alvarez' (bench seed 2, 2026-11-26)
SUMMARY_MIN_WORDS = 4
THOUGHT_MIN_WORDS = 3  # a thought is a sentence: 'worthless,' was SmolLM2's


def thought_problem(thought: str, names: tuple[str, ...]) -> str | None:
    """Why a summary's planning thought is no thought (None when it is one, or empty)."""
    if not thought.strip():
        return None
    if len(words(thought)) < THOUGHT_MIN_WORDS:
        return "is a word or two, not a thought"
    return just_a_name(thought, names) or repeats_itself(thought) or help_desk(thought) or not_speech(thought)


@lru_cache(maxsize=256)
def summary_schema(name: str, other: str) -> type[ChatSummary]:
    """A ChatSummary that sums up: not a name ('Maria Alvarez'), not a line looping ('I am curious
    about the life of my family.' five times), not a help desk; refused, retried, then the
    transcript (:func:`chat_summary_fallback`). A thought that is no thought ('worthless,') is
    dropped and counted as a patch: the summary is still worth keeping."""

    class CheckedSummary(ChatSummary, Patched):
        model_config = ConfigDict(title="ChatSummary")
        same_json_schema_as: ClassVar[type[BaseModel]] = ChatSummary  # only checks added (see json_schema_of)

        @model_validator(mode="after")
        def _sums_up(self) -> "CheckedSummary":
            text = self.summary
            problem = (just_a_name(text, (name, other)) or repeats_itself(text) or help_desk(text)
                       or not_a_summary(text) or commentary(text)
                       or ("is a word or two, not a summary" if len(words(text)) < SUMMARY_MIN_WORDS else None))
            if problem:
                raise ValueError(f"summary {problem}")
            bad_thought = thought_problem(self.thought, (name, other))
            if bad_thought:
                self._patches = [f"thought: {bad_thought}"]
                self.thought = ""
            return self

    return CheckedSummary


CONVERSE_INSTRUCTION = ("What does {name} say next to {other}? Keep it short and in character; share what "
                        "{name} would share. Set end to true when the conversation is over.")


_QUOTES = "\"'“”‘’ "


def without_speaker_label(line: str, name: str) -> str:
    """The words said, without the label a small model puts before them: 'Tom Alvarez: ...',
    'Tom says: ...', 'Tom Alvarez, 46, Nurse at Riverside Clinic: ...' (the persona line copied)."""
    first = name.split()[0] if name.split() else name
    text = line.strip()
    for label in (name, first):
        if label and re.match(rf"{re.escape(label)}\b", text, re.IGNORECASE):
            head, colon, rest = text.partition(":")
            if colon and len(head) <= len(name) + 60 and rest.strip():
                return rest.strip().strip(_QUOTES) or text
    return text


def not_speech(line: str) -> str | None:
    """A problem when a line is a persona line copied ('Lucy Alvarez (17) is curious, restless,
    kind.'), a placeholder or a program identifier rather than something said."""
    problem = not_an_activity(line)
    return f"is {problem}, not speech" if problem and problem != "only a time" else None


def no_words(line: str) -> str | None:
    """A problem when a line has no words in it ('19:14, 5/2/2020')."""
    letters = sum(ch.isalpha() for ch in line)
    return "has no words" if letters < 2 or letters < 0.5 * sum(not ch.isspace() for ch in line) else None


def line_schema(name: str, other: str, previous: str, said: tuple[str, ...] = (),
                acquainted: bool = False, bring_up: tuple[str, ...] = (), not_mine: tuple[str, ...] = ()) -> type[Line]:
    """A Line that is speech: not a name, not the partner's ``previous`` line again, not a line
    ``said`` already in this talk, by either speaker (SmolLM2's Tom said 'I am pleased to report that
    Tom Alvarez is pleased to share ...' twice, bench seed 2, 2026-11-26), not the speaker's own
    name told to a partner it is ``acquainted`` with, not the instruction copied back, and, when
    the talk is for news (``bring_up``: the words of the event the engine's goal is about), a
    line that speaks of it, and not a line that passes an event someone else holds off as the
    speaker's (``not_mine``: those events' words, :func:`checks.claims_as_own`) (checked after
    parsing; the JSON shape is Line's). One class per set
    of lines, however they are passed (the fallback is checked to be an instance of the call's
    schema)."""
    return _line_schema(name, other, previous, tuple(said), acquainted, tuple(sorted(set(bring_up))),
                        tuple(sorted(set(not_mine))))


@lru_cache(maxsize=512)
def _line_schema(name: str, other: str, previous: str, said: tuple[str, ...], acquainted: bool,
                 bring_up: tuple[str, ...], not_mine: tuple[str, ...] = ()) -> type[Line]:
    instruction = CONVERSE_INSTRUCTION.format(name=name, other=other)

    class CheckedLine(Line):
        model_config = ConfigDict(title="Line")
        same_json_schema_as: ClassVar[type[BaseModel]] = Line  # only checks added (see json_schema_of)
        # the embedded model is kept from saying these again as it samples (agents/llm/local.py)
        no_repeat: ClassVar[tuple[str, ...]] = tuple(t for t in dict.fromkeys((previous, *said)) if t)

        @model_validator(mode="after")
        def _speech(self) -> "CheckedLine":
            problem = speaks_as(self.utterance, other)
            self.utterance = without_speaker_label(self.utterance, name)
            problem = problem or (no_words(self.utterance) or just_a_name(self.utterance, (name, other))
                       or only_a_label(self.utterance, (name, other)) or says_nothing(self.utterance)
                       or not_speech(self.utterance) or not_said_aloud(self.utterance)
                       or repeats(self.utterance, previous, (name, other)) or repeats_itself(self.utterance)
                       or copied_from(self.utterance, instruction) or addresses_itself(self.utterance, name)
                       or speaks_of_listener(self.utterance, other) or said_again(self.utterance, said, (name, other))
                       or (introduces_itself(self.utterance, name) if acquainted else None)
                       or leaves_out(self.utterance, bring_up) or claims_as_own(self.utterance, not_mine))
            if problem:
                raise ValueError(f"utterance {problem}")
            return self

    return CheckedLine


def said_again(line: str, said: tuple[str, ...], names: tuple[str, ...]) -> str | None:
    """A problem when a line says again an earlier line of the talk, the speaker's or the
    partner's (word for word or nearly: the same tests as :func:`repeats` applies to the
    partner's previous line)."""
    for earlier in said:
        if repeats(line, earlier, names):
            return "says again what was said earlier in this talk"
    return None


def _answer_doing(previous: str, doing: str) -> list[str]:
    """'Right now I'm having breakfast.' when ``previous`` asks something and ``doing`` is an
    activity worth saying (not the talk itself, not the engine's 'nothing in particular')."""
    activity = " ".join(doing.split()).rstrip(".")
    if "?" not in previous or not activity or activity.lower().startswith(("talking with", "nothing in particular")):
        return []
    return [f"Right now I'm {activity[0].lower() + activity[1:]}."]


def line_fallback(other: str, lines_so_far: int, name: str = "", previous: str = "", topic: str = "",
                  said: tuple[str, ...] = (), doing: str = "", acquainted: bool = False,
                  bring_up: tuple[str, ...] = (), not_mine: tuple[str, ...] = ()) -> Line:
    """The typed fallback of ``converse``: a question in ``previous`` answered with what the
    speaker is ``doing`` ('What are you up to today?' had been answered 'Nice to see you, Tom.'),
    else the engine's ``topic`` (something remembered, see cognition.conversation.pick_topic)
    said plainly, else a greeting that ends the talk after the first exchange; never a line the
    speaker ``said`` already in this talk (Maria answered 'Nice to see you, Tom.' twice in the
    quickstart of 2026-11-25).

    An instance of :func:`line_schema` for the same lines, its checks passed (the last resort,
    when every line here was said, is built without them)."""
    first = clip(other.split()[0] if other.split() else "there", 40)
    end = lines_so_far >= 2
    schema = line_schema(name, other, previous, said, acquainted, bring_up, not_mine)
    news = clip(topic, 300).rstrip(".")
    aside = news[0].lower() + news[1:] if re.match(r"(?:The|A|An|My|Our) ", news) else news  # 'By the way, the ...'
    told = [f"Hi {first}! Have you heard? {news}.", f"By the way, {aside}."] if news else []
    closing = ["Well, I should get going.", "Bye for now.", f"See you later, {first}."]
    answer = _answer_doing(previous, clip(doing, 120))
    candidates = answer + told[lines_so_far > 0:] + [f"Nice to see you, {first}.", "Good to see you. Take care!"]
    # the news first; when no line of it passes (said already, or the topic copies the
    # instruction), the rest checked without the goal (a greeting, not a talk cut short), kept
    # as an instance of the call's schema
    plain = line_schema(name, other, previous, said, acquainted, (), not_mine) if bring_up else schema
    for checked in dict.fromkeys((schema, plain)):
        for text in candidates + closing:
            if text in said:
                continue
            try:  # refused when it repeats a line, or a topic copies the instruction: the next one then
                line = checked(utterance=text, end=text in closing or (end and not text.startswith(("Hi ", "By the way"))))
            except ValueError:
                continue
            return line if checked is schema else schema.model_construct(**line.model_dump())
    return schema.model_construct(utterance="Take care.", end=True)  # every line above said already


def chat_summary_fallback(partner: str, lines: list[str], name: str = "") -> ChatSummary:
    """The typed fallback of ``chat_summary``: the transcript itself, clipped, as an instance of
    :func:`summary_schema`; a transcript that fails its checks (a line looping) is kept as 'I
    talked with <partner>.' only."""
    schema = summary_schema(name, partner)
    transcript = clip(f"I talked with {partner}: " + " / ".join(lines), 300)  # the schema refuses what is no words
    for text in (transcript, f"I talked with {partner}.", "I had a talk with someone."):
        try:
            return schema(summary=text, importance=4)
        except ValueError:
            continue
    return schema.model_construct(summary="I had a talk with someone.", importance=4, thought="")


def converse_prompt(
    summary: str, name: str, other: str, relation: str, time: str, current: str, place: str,
    memories: list[str], transcript: list[str], max_lines: int, topic: str = "",
) -> Prompt:
    """``topic`` is what the engine chose to bring up (from the memories); the model words it."""
    user = "\n".join(
        [
            summary,
            facts(name=name, partner=other, relationship=relation, time=time, doing=current, place=place),
            "What you remember:",
            bullet(memories),
            "Conversation so far:",
            bullet(transcript, "(nothing yet)"),
            "",
            facts(lines_left=max(0, max_lines - len(transcript)), something_to_bring_up=topic),
            CONVERSE_INSTRUCTION.format(name=name, other=other),
        ]
    )
    task = Task({"name": name, "other": other, "left": max(0, max_lines - len(transcript)), "topic": topic,
                 "memories": tuple(memories), "transcript": tuple(transcript)}, scripted_line)
    return Prompt(messages(user), task)


def summary_prompt(summary: str, name: str, other: str, transcript: list[str],
                   learned: list[str] | None = None, told: list[str] | None = None) -> Prompt:
    """``learned``: the facts the engine read from the partner's lines (events.describe), so a
    summary can keep the news as the fact, not as their line quoted; ``told``: the news I passed
    on (a candidate remembers having told people it runs: without it Ben Okafor's only memory of
    his candidacy was his seed, and his interview answered with the party instead, issue 26)."""
    user = "\n".join(
        [
            summary,
            facts(name=name, partner=other),
            "Conversation:",
            bullet(transcript),
            *(["News learned:", bullet(learned)] if learned else []),
            *(["News told:", bullet(told)] if told else []),
            "",
            f"Summarise this conversation from {name}'s point of view, rate its importance for {name}"
            f" (1..10), and say what {name} means to do about it (or leave thought empty).",
        ]
    )
    task = Task({"other": other, "transcript": tuple(transcript), "learned": tuple(learned or ()),
                 "told": tuple(told or ())}, scripted_summary)
    return Prompt(messages(user), task)


# ---------------------------------------------------------------------------------------------
# The scripted backend's answers (from the fields the prompts above were written from)
# ---------------------------------------------------------------------------------------------


def _spoken(transcript: list[str]) -> str:
    return " ".join(transcript).lower()


_FILLER = re.compile(
    r"^(conversation with [^:]+:\s*|i heard that\s*|thought:\s*|hi \w+! did you hear\?\s*|"
    r"(oh really\?|interesting\.|i see\.|good to know\.)\s*also,\s*)+",
    re.IGNORECASE,
)


# 'tv is off', 'Tom Alvarez is thinking about what to do next': what is in view, not news to tell
# ('Grace Kim is almost done having breakfast' was told as news, issue 26: an adverb hid the state)
_STATE = re.compile(r"^[\w' .-]{1,40} is (?:(?:almost|just|still|now|already|about|nearly|busy)\s+)*"
                    r"(\w+$|(off|on|idle|open|closed|full|empty|done|finished|\w+ing)\b)", re.IGNORECASE)


def _said_already(news: str, said: str) -> bool:
    """Most of ``news``'s words are in the talk already: its own news said once in other words
    ('I'm running for re-election this autumn', then the seed memory 'I am running for
    re-election this autumn' as more news, in the same talk)."""
    words = {w for w in re.findall(r"[a-z']{4,}", news.lower())}
    return len(words) >= 3 and len(words & set(re.findall(r"[a-z']{4,}", said))) >= 0.5 * len(words)


def _news(memory: str) -> str:
    """A remembered sentence as something to tell (no memory prefixes or chat filler)."""
    return _FILLER.sub("", memory.strip()).strip().rstrip(".")


# a memory of what someone said or a talk's summary: their words, not news of mine to retell
_HEARSAY = re.compile(r"^(conversation with|i talked with|i had a friendly chat)|\b(told me that|said to me)\b", re.IGNORECASE)
_ASKED_ALONG = re.compile(r"would you like to (?:come|go together)\?", re.IGNORECASE)
def _sentence(text: str) -> str:
    """Text ending as a sentence does (a question keeps its mark: 'go together?' was 'go together?.')."""
    text = text.strip()
    return text if text.endswith(("?", "!", ".")) else text + "."


# news told: 'Did you hear? ...', '... Also, ...', or what opens a talk ('Hi Sophie! I'm running for mayor.',
# 'Hi Kenji! Maria taught me to make her famous pies.': Kenji said goodbye to it, 2026-11-27)
_TOLD = re.compile(r"(?:did you hear\?|also,|^hi \w+!)\s*([^?]+?)\.?$", re.IGNORECASE)


def _reply_to(line: str, other: str, fresh: list[str]) -> str:
    """An answer to the partner's line when I have nothing new to tell: how I am, or what I make
    of their news ('' when their line asks nothing and tells nothing)."""
    if _ASKED_ALONG.search(line):  # whether to go is decided apart (purpose 'attend'), not here
        return f"Thanks for telling me, {other}! I'll see if I can make it."
    if line.rstrip().endswith("How are you today?"):
        return f"I'm well, thank you, {other}." + (f" {_telling(_news(fresh[0]))}" if fresh else " Busy day ahead.")
    told = _TOLD.search(line)
    if told and not fresh:
        news = _ATTRIBUTED.sub("", told.group(1).strip()).strip().rstrip(".")  # not '... Pip told me.' said back
        if re.search(_FIRST_PERSON, news):  # theirs ('Ben gave me my first job') is not mine to say as mine
            return f"Really? That's news to me. Thanks for telling me, {other}."
        return f"Really? I had not heard that {_lower_first(news)}. Thanks for telling me, {other}."
    return ""


_NOT_NAMES = {"There's", "That's", "It's", "Here's", "What's", "Who's", "Where's", "Let's", "He's", "She's"}


# capitalised only because they open a sentence
_COMMON_OPENERS = {"The", "A", "An", "My", "Our", "His", "Her", "Their", "Your", "Its", "It", "This", "That", "There", "Tomorrow", "Today", "Tonight",
                   "Everyone", "Everybody", "Nobody", "Someone", "Somebody", "Business", "Work", "Life", "What", "Who",
                   "Which", "He", "She", "They", "We", "You", "Dinner", "Lunch", "Breakfast", "Nothing", "Something",
                   "Patient", "Patients", "People", "Customers", "Prices", "Rent", "Sales", "School", "Town"}


def _lower_first(news: str) -> str:
    """News said mid-sentence: 'Business at the cafe ...' -> 'business at the cafe ...', but a
    name stays a name ('Priya Shah is ...' was 'priya Shah is ...')."""
    first = news.split()[:2]
    if len(first) == 2 and all(w[:1].isupper() for w in first) and first[0] not in ("The", "A", "An", "My", "Our"):
        return news
    if len(first) == 2 and first[1][:1].islower() and re.fullmatch(r"[A-Z][a-z]+|Mr\.|Mrs\.|Ms\.|Dr\.", first[0]) \
            and first[0] not in _COMMON_OPENERS:
        return news  # a first name as the subject: 'Rosalind is married to Owen' (was 'rosalind is ...')
    if first and (first[0] == "I" or first[0].startswith("I'") or (re.fullmatch(r"[A-Z][a-z]+'s", first[0])
                                                               and first[0] not in _NOT_NAMES)):
        return news  # 'I ...', or a name's ('Grace's sister ...')
    return news[:1].lower() + news[1:]


def _goodbye(line: str, other: str) -> str:
    """A parting line that still answers the one before it."""
    if "Busy day ahead" in line:
        return f"Good luck with your busy day, {other}. See you around!"
    if "Thanks for telling me" in line:
        return f"You're welcome, {other}, thanks for listening. See you around!"
    return f"Good talking to you, {other}. See you around!"


def scripted_line(fields: Mapping[str, Any], schema: type[BaseModel], rng: random.Random) -> dict[str, Any]:
    """The scripted backend's next line: the engine's topic or the most poignant news not said yet,
    an answer to the partner's line, a goodbye when the talk is long enough."""
    other = shown(fields["other"], "friend").split()[0]
    left = fields["left"]
    transcript = [t.strip() for t in fields["transcript"] if t.strip() != "(nothing yet)"]
    said = _spoken(transcript)
    memories = [m.strip() for m in fields["memories"]]
    # share the most poignant thing remembered that has not been said yet
    partner = shown(fields["other"])
    me = shown(fields["name"])
    fresh = [
        m for m in memories
        if _news(m).lower()[:40] not in said and m != "(none)" and not _said_already(_news(m), said) and not m.startswith(("My plan", "Currently:"))
        and not about_partner(_news(m), partner) and " is talking with " not in m and not m.startswith(("I decided", "I should"))
        and heuristic_importance(m) >= (5 if _STATE.match(_news(m)) else 3) and not _HEARSAY.search(m)
        and not (me and me in m)  # 'Hannah Price has had a busy stretch' is no news for Hannah to tell
    ]
    fresh.sort(key=lambda m: -heuristic_importance(m))
    closing = [(_goodbye(transcript[-1].split(": ", 1)[-1], other) if transcript else "", True),
               (f"Bye for now, {other}.", True), ("Take care!", True)]
    topic = shown(fields["topic"])
    if topic and topic.lower()[:40] in said:
        topic = ""
    if topic:  # the engine's goal for this talk (an invitation, news passed on) comes first
        fresh = [topic] + [m for m in fresh if m != topic]
    if not transcript:
        lines = [(_opening(other, topic), False)] * bool(topic)
        lines += [(_opening(other, _news(m)), False) for m in fresh if m != topic] + [
            (f"Hi {other}! How are you today?", False)]
        return _first_accepted(schema, lines)
    reply = _reply_to(transcript[-1].split(": ", 1)[-1], other, fresh) if left > 1 and len(transcript) < 5 else ""
    if left <= 1 or len(transcript) >= 5 or not fresh:
        return _first_accepted(schema, [(reply, False)] * bool(reply) + closing)
    opener = rng.choice(("Oh really?", "Interesting.", "I see.", "Good to know."))
    # an answer that must also bring my news up (the talk's goal, line_schema's bring_up) says both
    answered = [(f"{reply} Also, {_sentence(_lower_first(_news(m)))}", False) for m in fresh[:1]] if reply else []
    lines = [(reply, False)] * bool(reply) + answered + [(f"{opener} Also, {_sentence(_lower_first(_news(m)))}", False)
                                                         for m in fresh]
    return _first_accepted(schema, lines + closing)


def _opening(other: str, news: str) -> str:
    """A talk's first line bringing ``news`` up (:func:`_telling`)."""
    return f"Hi {other}! {_telling(news)}"


# what follows news told on ('... Leo Martins told me. Would you like to go together?'): no part of the news
_ATTRIBUTED = re.compile(r"(?:\s+[A-Z][\w'-]+(?: [A-Z][\w'-]+)* told me\.?|\s+Would you like to [^?]*\?)+$")


def _telling(news: str) -> str:
    """``news`` as said: about me in my words ('I'm running for mayor', 'Maria sells me her pies'),
    someone else's as news ('Did you hear? ...'); nobody asks 'Did you hear?' about themselves."""
    if re.search(_FIRST_PERSON, _ATTRIBUTED.sub("", news.strip())):  # not 'Lucy told me.' after it
        return _sentence(news)
    return f"Did you hear? {_sentence(news)}"


def _first_accepted(schema: type[BaseModel], lines: list[tuple[str, bool]]) -> dict[str, Any]:
    """The first line the call's own schema accepts: a memory retold that addresses the speaker
    ('... You're welcome, George ...' said by George) or a goodbye that echoes the partner's was
    refused on every attempt, and the call fell back (a 25-resident scripted day, 2026-11-26)."""
    return first_accepted(schema, [{"utterance": text, "end": end} for text, end in lines if text], 0)


def scripted_summary(fields: Mapping[str, Any], schema: type[BaseModel], rng: random.Random) -> dict[str, Any]:
    """What the talk was about, in my words: the news learned as facts with who told them, else
    the partner's news told back in brief; never their lines quoted with the names in them (Grace
    Kim remembered 'Conversation with Tom Alvarez: I'm well, thank you, Lucy. ...', issue 26)."""
    other = shown(fields["other"], "someone")
    learned = [l.strip().rstrip(".") for l in fields["learned"]]
    told = [l.strip().rstrip(".") for l in fields["told"]]
    lines = [l.strip() for l in fields["transcript"]]
    theirs = [_news(l.split(": ", 1)[1]) for l in lines if l.startswith(other + ": ") and ": " in l]
    theirs = [t for t in theirs if t and heuristic_importance(t) >= 5 and not _GREETING.search(t)]
    theirs = [t for t in (in_third_person(t, other) for t in theirs) if t]  # their 'my class' is not mine
    importance = max([heuristic_importance(t) for t in theirs + learned + told] + [3])
    summaries = []
    if learned:  # all the news, then the first piece alone (two of one party read as 'the same sentence twice')
        summaries += [f"I talked with {other}, who told me that " + "; and that ".join(_lower_first(l) for l in learned),
                      f"I talked with {other}, who told me that {_lower_first(learned[0])}"]
    if theirs:
        summaries.append(f"I talked with {other}, who told me that {_lower_first(theirs[0])}")
    summaries.append(f"I had a friendly chat with {other} about how our days are going")
    if told:  # what I passed on, after what I heard ('..., and I told them that I am running for mayor')
        summaries = [f"{s}, and I told {other.split()[0]} that {_lower_first(told[0])}" for s in summaries] + summaries
    thought = f"I should keep in mind what {other} told me." if importance >= 6 else ""
    # the first the call's own checks accept: a refused answer fell to the generic sampler, whose
    # words of the prompt became memories ('from Hannah Price's point of view rate its importance
    # for' as a thought, retold as news: a scripted 2-day run, issue 26)
    candidates = [{"summary": s[:480] + ".", "importance": importance, "thought": thought} for s in summaries]
    return first_accepted(schema, candidates)


_FIRST_PERSON = r"(?<![\w'])(I|I'm|I've|I'll|I'd|[Mm]y|[Ww]e|We're|We've|[Oo]ur|[Mm]e|[Uu]s|[Mm]ine)\b"


_GREETING = re.compile(r"^(hi|hello|good|bye|see you|nice to|i'm well|take care|you're welcome|really\?)", re.IGNORECASE)
