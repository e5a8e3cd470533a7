"""The scripted backend's answers for the conversation prompts (agents/roles/conversation.py)."""

from __future__ import annotations

from typing import Any
import random
import re

from pydantic import BaseModel

from agents.llm.scripted import first_accepted, last_user_text, scripted_responder
from agents.minds.cognition.conversation import about_partner, in_third_person
from agents.roles.common import fact, section
from agents.roles.importance import heuristic_importance


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


# news told: 'Did you hear? ...', '... Also, ...', or one's own opening a talk ('Hi Sophie! I'm running for mayor.')
_TOLD = re.compile(r"(?:did you hear\?|also,|^hi \w+!(?= (?:I|I'm|My|We|We're|Our)\b))\s*(.+?)\.?$", re.IGNORECASE)


def _reply_to(line: str, other: str, fresh: list[str]) -> str:
    """An answer to the partner's line when I have nothing new to tell: how I am, or what I make
    of their news ('' when their line asks nothing and tells nothing)."""
    if _ASKED_ALONG.search(line):  # whether to go is decided apart (purpose 'attend'), not here
        return f"Thanks for telling me, {other}! I'll see if I can make it."
    if line.rstrip().endswith("How are you today?"):
        return f"I'm well, thank you, {other}." + (f" {_telling(_news(fresh[0]))}" if fresh else " Busy day ahead.")
    told = _TOLD.search(line)
    if told and not fresh:
        news = told.group(1).strip()
        if re.match(r"(I|I'm|I've|My|We|We're|Our)\b", news):  # their own news is not mine to say as mine
            return f"Really? That's news to me. Thanks for telling me, {other}."
        return f"Really? I had not heard that {_lower_first(news)}. Thanks for telling me, {other}."
    return ""


_NOT_NAMES = {"There's", "That's", "It's", "Here's", "What's", "Who's", "Where's", "Let's", "He's", "She's"}


def _lower_first(news: str) -> str:
    """News said mid-sentence: 'Business at the cafe ...' -> 'business at the cafe ...', but a
    name stays a name ('Priya Shah is ...' was 'priya Shah is ...')."""
    first = news.split()[:2]
    if len(first) == 2 and all(w[:1].isupper() for w in first) and first[0] not in ("The", "A", "An", "My", "Our"):
        return news
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


@scripted_responder("converse")
def _scripted_converse(msgs: list[dict], schema: type[BaseModel], rng: random.Random) -> dict[str, Any]:
    text = last_user_text(msgs)
    other = fact(text, "Partner", "friend").split()[0]
    left = int(fact(text, "Lines left", "4") or 0)
    transcript = section(text, "Conversation so far")
    transcript = [t for t in transcript if t != "(nothing yet)"]
    said = _spoken(transcript)
    memories = section(text, "What you remember")
    # share the most poignant thing remembered that has not been said yet
    partner = fact(text, "Partner", "")
    me = fact(text, "Name", "")
    fresh = [
        m for m in memories
        if _news(m).lower()[:40] not in said and m != "(none)" and not m.startswith(("My plan", "Currently:"))
        and not about_partner(_news(m), partner) and " is talking with " not in m and not m.startswith(("I decided", "I should"))
        and heuristic_importance(m) >= (5 if _STATE.match(_news(m)) else 3) and not _HEARSAY.search(m)
        and not (me and me in m)  # 'Hannah Price has had a busy stretch' is no news for Hannah to tell
    ]
    fresh.sort(key=lambda m: -heuristic_importance(m))
    closing = [(_goodbye(transcript[-1].split(": ", 1)[-1], other) if transcript else "", True),
               (f"Bye for now, {other}.", True), ("Take care!", True)]
    topic = fact(text, "Something to bring up", "")
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
    lines = [(reply, False)] * bool(reply) + [(f"{opener} Also, {_sentence(_news(m))}", False) for m in fresh]
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


@scripted_responder("chat_summary")
def _scripted_summary(msgs: list[dict], schema: type[BaseModel], rng: random.Random) -> dict[str, Any]:
    """What the talk was about, in my words: the news learned as facts with who told them, else
    the partner's news told back in brief; never their lines quoted with the names in them (Grace
    Kim remembered 'Conversation with Tom Alvarez: I'm well, thank you, Lucy. ...', issue 26)."""
    text = last_user_text(msgs)
    other = fact(text, "Partner", "someone")
    learned = [l.rstrip(".") for l in section(text, "News learned")]
    told = [l.rstrip(".") for l in section(text, "News told")]
    lines = section(text, "Conversation")
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
