"""Interview prompt: answer a question in character, from retrieved memories only.

Purpose: ``interview``. Nothing of the answer is written back to memory. An answer must be a
sentence that neither copies the instruction nor the question back (SmolLM2 answered
"Maria Alvarez, in the first person, using only ...") and mentions something the resident
remembers; otherwise the gateway retries and then falls back to :func:`answer_from_memories`,
an answer the engine composes from the top retrieved memories in the first person.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from datetime import date
from functools import lru_cache
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agents.llm.schemas import OPENING
from agents.llm.scripted import first_accepted
from agents.llm.task import Prompt, Task
from agents.roles.checks import (addresses_itself, copied_from, help_desk, just_a_name, object_state,
                                   repeats_itself, words)
from agents.roles.common import Sentence, bullet, clip, facts, first_line, messages
from agents.roles.importance import heuristic_importance
from memory.denials import denies
from maps.contracts import MONTHS, WEEKDAYS


FIRST_PERSON = {OPENING: ["I ", "I'"]}  # the embedded model's answer opens in the first person


class Answer(BaseModel):
    answer: Sentence = Field(description="the answer, in the first person, in character",
                             json_schema_extra=FIRST_PERSON)


INSTRUCTION = ("Answer as {name}, in the first person, using only what {name} remembers. If {name} "
               "does not know, say so.")
_STOP = frozenset("about after again also been before being could does doing from have just more most "
                  "only other over same some such than that their them then there these they this "
                  "today very were what when where which while who will with would your".split())


# an answer names at least this many words of what the resident remembers: with one, SmolLM2's
# 'I have been doing a lot of work, but I have also been thinking about the past.' passed on "work"
MIN_REMEMBERED = 2


def content_words(text: str) -> set[str]:
    """Words that carry meaning (4+ letters, not a stop word): what grounding is judged on."""
    return {w for w in words(text) if len(w) > 3 and w not in _STOP}


def worth_telling(memories: list[str], name: str) -> list[str]:
    """The retrieved memories an answer may draw on, in retrieval order: without an object's
    state ('tv is off'), someone idle, or model text a reader would reject (a line looping, a
    help desk's phrase, a bare name, a word or two: SmolLM2's chat summary 'I am curious about
    the life of my family.' five times, and its thought 'worthless,', were copied into every
    interview answer of bench seed 2 on 2026-11-26). A tiny model copies what it is shown."""
    kept = []
    for memory in memories:
        text = memory.split(": ", 1)[1] if memory.startswith(name + ": ") else memory  # a chat line's label
        if (object_state(text) or text.lower().rstrip(". ").endswith(" is idle") or len(words(text)) < 3
                or repeats_itself(text) or help_desk(text) or just_a_name(text, (name,))):
            continue
        kept.append(memory)
    return kept


def answer_fallback() -> Answer:
    """The typed fallback of ``interview`` when there is nothing to answer from."""
    return Answer(answer="I'm sorry, I can't think of an answer right now.")


# 'Do you know X?', 'Did you know there is a ...?', 'Have you heard ...?': the paper's interview
# questions, whose answer must speak of what they ask about
_KNOWLEDGE_QUESTION = re.compile(r"^\W*(do|did|have)\s+you\s+(know|heard|hear)\b", re.IGNORECASE)
_KNOWING = {"know", "heard", "hear", "there", "about", "anyone", "someone", "anything"}


def question_subject(question: str, residents: tuple[str, ...] = ()) -> tuple[str, ...]:
    """What a knowledge question asks about, as the words an answer to it must name: a resident
    it names (full and first name), else its content words ('Did you know there is a Valentine's
    Day party?' -> party, valentine). Empty for any other question ('What did you do today?')."""
    if not _KNOWLEDGE_QUESTION.match(question):
        return ()
    named = [r for r in residents if r and r in question]
    if named:
        return tuple(dict.fromkeys(t.lower() for r in named for t in (r, r.split()[0])))
    return tuple(sorted(w for w in re.findall(r"[a-z]+", question.lower()) if len(w) > 3 and w not in _STOP
                        and w not in _KNOWING))


_WHO_QUESTION = re.compile(r"^\W*(do|did|have)\s+you\s+(know|heard|hear)\s+(of\s+)?who\b", re.IGNORECASE)
_CLAUSE = re.compile(r"[.;,!?]|\band\b|\bbut\b")
_PRONOUN = re.compile(r"(?<![\w'])(I|I'm|I've|me|my)(?![\w'])")


def who_did(question: str, subject: tuple[str, ...], memories: list[str] | tuple[str, ...],
            residents: tuple[str, ...], name: str) -> tuple[str, ...]:
    """Who the memories say does what a 'who' question asks ('Do you know who is running for
    mayor?'): in each clause of a memory that names all the subject's words, the resident named
    last before them ('Grace told me that Ben Okafor is running for mayor' -> Ben Okafor; in
    'Eleanor is running for re-election; and that Ben is running for mayor' only Ben's clause
    names both words). Empty too when the one answering is among them ('I am running', 'Ben:
    I am running' in Ben's memory); a clause whose last word of a person before them is 'me'
    names no one ('Grace told me that someone is running').
    Empty for any other question, or when no memory says who. SmolLM2, asked who runs for mayor
    with 'Ben Okafor is running for mayor' remembered, named Kenji Mori or Eleanor Ross."""
    if not subject or not _WHO_QUESTION.match(question) or any(r and r in question for r in residents):
        return ()  # 'Do you know who Ben Okafor is?' asks about Ben, not for someone memory names beside him
    found: list[str] = []
    for clause in (c for memory in memories for c in _CLAUSE.split(memory)):
        at = [_word_at(clause, t) for t in subject]
        if None in at:  # the clause does not name all of it
            continue
        before = clause[:min(a for a in at if a is not None)]
        named = [(m.start(), r) for r in residents for m in _person_forms(r).finditer(before)]
        # 'I am running' is me; 'Grace told me that someone is running' names no one who does it
        named += [(m.start(), name if m.group(1).startswith("I") else "") for m in _PRONOUN.finditer(before)]
        last = max(named)[1] if named else ""
        if last:
            found.append(last)
    if name in found:  # I am one who does it ('I am running for mayor'): an answer in the first person says who
        return ()
    return tuple(dict.fromkeys(found))


@lru_cache(maxsize=4096)
def _person_forms(person: str) -> re.Pattern[str]:
    """A pattern for ``person`` named in full or by the first name alone, as whole words."""
    first = person.split()[0] if person.split() else person
    forms = sorted({n for n in (person, first) if len(n) > 1}, key=len, reverse=True)  # the longer first
    if not forms:
        return re.compile(r"(?!)")  # a one-letter name is named nowhere
    return re.compile(rf"(?<![\w'])(?:{'|'.join(re.escape(f) for f in forms)})(?![\w])")


def names_person(text: str, person: str) -> bool:
    """Does ``text`` name ``person`` (full name, or the first name alone)?"""
    return _person_forms(person).search(text) is not None


def names_one_of(text: str, people: tuple[str, ...]) -> bool:
    """``text`` names one of ``people`` (full name, or the first name alone)."""
    return any(names_person(text, person) for person in people)


def _word_at(text: str, term: str) -> int | None:
    """Where ``text`` first names ``term`` as a word or words (case aside), or None."""
    m = re.search(rf"(?<![a-z]){re.escape(term)}(?![a-z])", text.lower())
    return m.start() if m else None


def mentions(text: str, term: str) -> bool:
    """``text`` names ``term`` as a word or words (case aside; 'Valentine's' names 'valentine')."""
    return _word_at(text, term) is not None


_DAY = re.compile(rf"\b(?:({'|'.join(WEEKDAYS)})|({'|'.join(MONTHS)}) (\d{{1,2}})(?:st|nd|rd|th)?|"
                  rf"(\d{{1,2}})(?:st|nd|rd|th)? (?:of )?({'|'.join(MONTHS)}))\b", re.IGNORECASE)


def days_named(text: str, year: int = 0) -> set[str]:
    """The days a text names: weekdays ('saturday') and dates ('february 14'); with ``year``, a
    date's weekday too (the host's 'February 14' is a Saturday in 2026)."""
    days: set[str] = set()
    for weekday, month, day, day2, month2 in _DAY.findall(text):
        if weekday:
            days.add(weekday.lower())
            continue
        month, day = (month or month2).lower(), int(day or day2)
        days.add(f"{month} {day}")
        if year:
            try:
                days.add(WEEKDAYS[date(year, MONTHS.index(month) + 1, day).weekday()])
            except ValueError:
                pass  # 'February 30': no weekday
    return days


def names_unknown_day(text: str, memories: tuple[str, ...], year: int = 0) -> str | None:
    """A problem when an answer names a day no memory gives ('the party on Friday' from a resident
    told it is on Saturday February 14): the day of a thing is what memory says, not what the
    model likes. Interviews are scored on memory, so a wrong day read as knowing it."""
    if not memories:
        return None
    remembered = set().union(*(days_named(m, year) for m in memories))
    unknown = sorted(days_named(text) - remembered)
    return f"names a day the resident does not remember ({', '.join(unknown)})" if unknown else None


def links_unremembered(text: str, subject: tuple[str, ...], memories: tuple[str, ...] | list[str],
                       residents: tuple[str, ...], name: str) -> str | None:
    """A problem when a clause of ``text`` that names all of what was asked (``subject``, not a
    person) also names a resident whom no memory naming it names: SmolLM2's Ben Okafor, asked of
    the party, named a host his memories of it never gave (society bench, 2026-11-28). The one
    answering may always name themselves."""
    if not subject or any(t in (r.lower(), r.split()[0].lower()) for t in subject for r in residents):
        return None
    about = [m for m in memories if all(mentions(m, t) for t in subject)]
    for clause in _CLAUSE.split(text):
        if not all(mentions(clause, t) for t in subject):
            continue
        for person in residents:
            if person != name and names_person(clause, person) and not any(names_person(m, person) for m in about):
                return f"links {person} to the {' '.join(subject)}, which no memory of it does"
    return None


def subject_remembered(subject: tuple[str, ...], memories: tuple[str, ...] | list[str]) -> list[str]:
    """The words of the question's subject that some memory names: an answer must name one."""
    return [t for t in subject if any(mentions(m, t) for m in memories)]


def answer_schema(name: str, question: str, memories: tuple[str, ...], subject: tuple[str, ...] = (),
                  doers: tuple[str, ...] = (), year: int = 0, residents: tuple[str, ...] = (),
                  strangers: tuple[str, ...] = ()) -> type[Answer]:
    """The checked Answer of one interview call (:func:`_answer_schema`); one class per call's
    inputs, however they are passed, so that its fallback is an instance of it. ``year``: the
    interview's, to know a remembered date's weekday; ``residents``: the town's, to know whom an
    answer links to what was asked (:func:`links_unremembered`); ``strangers``: those asked about
    whom the resident never met or heard of, whom the answer must not claim to know."""
    return _answer_schema(name, question, tuple(memories), tuple(subject), tuple(doers), year, tuple(residents),
                          tuple(strangers))


@lru_cache(maxsize=64)
def _answer_schema(name: str, question: str, memories: tuple[str, ...], subject: tuple[str, ...],
                   doers: tuple[str, ...] = (), year: int = 0, residents: tuple[str, ...] = (),
                   strangers: tuple[str, ...] = ()) -> type[Answer]:
    """An Answer that answers: not a name, not the instruction or the question copied back,
    (when there are memories) sharing MIN_REMEMBERED content words with them besides the
    resident's name, and, to a knowledge question whose subject a memory names
    (:func:`question_subject`), naming it and not denying it: the answer speaks of what was asked
    (SmolLM2 remembered the party and answered 'I am a patient of the hospital at Willow Cafe') and
    does not say it never heard of what memory holds (its 'No, I didn't know there was a party'
    passed here and then scored as not knowing, by the same rule, memory.denials); to a 'who'
    question whose answer memory holds (``doers``, :func:`who_did`), naming who; no day that
    no memory gives (:func:`names_unknown_day`); and no one linked to what was asked whom no
    memory of it names (:func:`links_unremembered`); about ``strangers``, a denial (SmolLM2's Lucy
    Alvarez, with no memory of Noah Price: "I'm not sure, but I've heard of Noah Price. He's a guy
    who does weird things", one of 25 such answers in 650, society bench seed 0, 2026-11-28)."""
    instruction = INSTRUCTION.format(name=name)
    known = set().union(*(content_words(m) for m in memories)) - content_words(name) if memories else set()
    asked = subject_remembered(subject, memories)

    class CheckedAnswer(Answer):
        model_config = ConfigDict(title="Answer")
        same_json_schema_as: ClassVar[type[BaseModel]] = Answer  # only checks added (see json_schema_of)

        @model_validator(mode="after")
        def _answers(self) -> "CheckedAnswer":
            text = self.answer
            problem = (just_a_name(text, (name,)) or copied_from(text, instruction, 5)
                       or copied_from(text, question, 6, memories) or addresses_itself(text, name) or help_desk(text)
                       or repeats_itself(text) or names_unknown_day(text, memories, year)
                       or links_unremembered(text, subject, memories, residents, name))
            if problem is None and known and len(content_words(text) & known) < min(MIN_REMEMBERED, len(known)):
                problem = "mentions less than two things the resident remembers"
            if problem is None and asked and not any(mentions(text, t) for t in asked):
                problem = f"does not speak of what was asked ({' or '.join(asked)})"
            if problem is None and asked and denies(text):
                problem = f"denies what the resident remembers ({' or '.join(asked)})"
            if problem is None and strangers and not denies(text):
                problem = f"claims to know {' or '.join(strangers)}, whom the resident never met or heard of"
            if problem is None and doers and not names_one_of(text, doers):
                problem = f"does not say who, which the resident remembers ({' or '.join(doers)})"
            if problem:
                raise ValueError(f"answer {problem}")
            return self

    return CheckedAnswer


def _first_person(memory: str, name: str) -> str:
    """One memory as something the resident says about it ('Maria is cooking' -> 'I was cooking')."""
    text = " ".join(memory.split()).rstrip(".")
    first = name.split()[0] if name.split() else name
    text = re.sub(r"^Currently:\s*", "", text)
    text = re.sub(r"(\w):(\w)", r"\1 \2", text)  # an address 'home:kitchen' read out as words
    for who in (name, first):
        if who and text.startswith(who + " is "):
            return "I was " + text[len(who) + 4:]
        if who and text.startswith(who + " "):
            return "I " + text[len(who) + 1:]
    if text.startswith("Conversation with "):
        return "I talked with " + text[len("Conversation with "):]
    if text.startswith("My plan for "):
        return "I planned my day: " + text.split(": ", 1)[-1]
    if re.match(r"^(I|I'm|I've|My|Me)\b", text) or re.match(r"^[A-Z][\w'-]*( [A-Z][\w'-]*)* told me\b", text):
        return text  # already the resident's words ('Tom Alvarez told me that ...' is no sight)
    if " is " in text and not text.lower().endswith(" is idle"):
        return "I saw that " + text
    return "I remember: " + text


def answer_from_memories(memories: list[str], name: str, question: str = "", subject: tuple[str, ...] = (),
                         doers: tuple[str, ...] = (), year: int = 0, residents: tuple[str, ...] = ()) -> Answer:
    """The typed fallback of ``interview`` with memories: the most relevant ones (retrieval order,
    those naming the question's subject first), said in the first person; idle things and repeats
    left out. Valid against :func:`answer_schema` by construction (it is made of the memories'
    own words)."""
    said: list[str] = []
    seen: set[str] = set()
    asked = subject_remembered(subject, memories)
    lines = {m: clip(_first_person(m, name), 160).rstrip(".") for m in memories}  # what would be said
    # what was asked, then who did it, then when, read in what would be said: asked of the party
    # after it, SmolLM2's fallbacks said 'I saw that Omar Haddad is attending a Valentine's Day party'
    # (the newest sight) for 10 of 25 residents, the host among them, not when and where it was
    ordered = sorted(memories, key=lambda m: (not any(mentions(lines[m], t) for t in asked),
                                              not (all(mentions(lines[m], t) for t in asked)
                                                   and names_one_of(lines[m], doers)),
                                              not (asked and days_named(lines[m]))))
    for memory in ordered:
        key = " ".join(sorted(content_words(lines[memory])))
        if not key or key in seen or memory.lower().rstrip(".").endswith(" is idle"):
            continue
        seen.add(key)
        said.append(lines[memory] + ".")
        if len(said) == 3:
            break
    if not said and memories:
        said = [lines[memories[0]] + "."]
    schema = answer_schema(name, question, tuple(memories), subject, doers, year, residents)
    known = sorted(set().union(*(content_words(m) for m in memories)) - content_words(name)) if memories else []
    for text in (" ".join(said), *said, "I remember: " + clip(" ".join(ordered), 300),
                 f"I'm sorry, I only remember something about {', '.join(known[:3])}." if known else "",
                 answer_fallback().answer):
        try:
            return schema(answer=text)
        except ValueError:
            continue
    # unreachable in practice (each memory said alone passes); never an exception in a fallback
    return schema.model_construct(answer="I'm sorry, I only remember bits and pieces about that.")


def never_met(people: list[str]) -> Answer:
    """The answer (and the typed fallback) about people the resident never met or heard of:
    it says so, rather than inventing an acquaintance from unrelated memories."""
    who = " or ".join(people)
    return Answer(answer=f"I don't know {who}; I have never met or heard of {'them' if len(people) > 1 else 'anyone by that name'}.")


def interview_prompt(summary: str, name: str, time: str, status: str, memories: list[str], question: str,
                     unknown: list[str] | None = None, subject: tuple[str, ...] = ()) -> Prompt:
    """``unknown``: residents the question names whom ``name`` never met or heard of (nothing in
    memory names them), told to the model so that it says so. ``subject``: what a knowledge
    question asks about (:func:`question_subject`; the scripted answer starts from it)."""
    user = "\n".join(
        [
            summary,
            facts(name=name, time=time, status=status, never_met_or_heard_of=", ".join(unknown or [])),
            "What you remember:",
            bullet(memories),
            "",
            f"Question: {question}",
            INSTRUCTION.format(name=name),
        ]
    )
    task = Task({"question": question, "unknown": tuple(unknown or ()), "memories": tuple(memories),
                 "subject": tuple(subject)}, scripted_answer)
    return Prompt(messages(user), task)


# words of a question that say nothing of its subject ('Did you know there is ...?')
_ASKING = {"know", "there", "what", "about", "have", "your", "does", "with", "that", "this", "tell", "heard", "anyone",
           "someone", "were", "when", "where", "which"}


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 3 and w not in _ASKING}


def scripted_answer(fields: Mapping[str, Any], schema: type[BaseModel], rng: random.Random) -> dict[str, Any]:
    """The scripted backend's answer: the memories that share most words with the question."""
    question = first_line(fields["question"])
    if fields["unknown"]:
        return {"answer": never_met(list(fields["unknown"])).answer}
    memories = [m.strip() for m in fields["memories"] if m.strip() != "(none)"]
    if not memories:
        return {"answer": "I don't remember anything about that."}
    q = _words(question)
    asked = subject_remembered(tuple(fields.get("subject", ())), memories)
    ranked = sorted(memories, key=lambda m: (not any(mentions(m, t) for t in asked), -len(q & _words(m)),
                                             -heuristic_importance(m)))
    answer = f"From what I remember: {ranked[0]}"
    both = answer + (f" Also, {ranked[1]}" if len(ranked) > 1 else "")
    # two memories of the same news ('X told me that ...', 'Y told me that ...') say one sentence twice,
    # which the answer's check refuses (then the generic scripted words were kept: bench society, 2026-11-27)
    # any other refusal too ('Hi Hannah! ...' in a line remembered reads as Hannah naming herself):
    # the first answer the call's own checks accept, the best memory alone at the latest
    candidates = [{"answer": a} for a in ([both] * (not repeats_itself(both)) + [answer]
                                          + [f"From what I remember: {m}" for m in ranked[1:3]])]
    return first_accepted(schema, candidates, 0)
