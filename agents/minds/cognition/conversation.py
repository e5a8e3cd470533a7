"""Conversations through the engine's say/heard mechanism.

A conversation is a bounded exchange (at most ``max_lines`` lines, 8 by default, counting
both sides). Before each line the speaker retrieves memories about the other person and what
is on its mind; each line is an Intent(kind='say'), and the engine delivers it into the
listener's next Perception.heard. When either side ends it, the partner leaves, no answer
comes, or the line budget is spent, each side writes a summary memory (and a planning
thought when there is one) and updates its tie to the other in the social graph.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING


from maps.contracts import ChatLine, Intent, Perception
from agents.roles.checks import object_state
from agents.roles.wording import about_partner, in_third_person
from agents.roles.conversation import (
    Line,
    chat_summary_fallback,
    converse_prompt,
    line_fallback,
    line_schema,
    summary_schema,
    summary_prompt,
)
from agents.minds.cognition.events import describe, event_words, refers_to
from agents.minds.cognition.gatherings import (goal_topic, hear_of_people, heard_event, learn, mark_told, no_longer_news,
                                               spoken_of, unmark_told)
from maps.contracts import ChatPayload
from memory.store import MemoryRecord
from agents.minds.state import Conversation

if TYPE_CHECKING:
    from agents.minds.generative import Resident




_PREFIX = re.compile(r"^(conversation with [^:]+:\s*|i heard that\s*|thought:\s*|announcement:\s*)", re.IGNORECASE)


# kinds of memory that are no news to tell: a plan; a talk's summary (another's words); a thought
# or a reflection, my own inference about my life ('Viktor Novak plays a real part in Clara
# Novak's life lately', told by Clara as news, issue 26)
NOT_NEWS = ("plan", "chat", "thought", "reflection")


def pick_topic(memories: list[MemoryRecord], partner: str, transcript: list[str], min_importance: int = 5,
               speaker: str = "") -> str:
    """What to bring up, chosen by the engine among the retrieved memories (a tiny model cannot
    choose): the most important one that is news (not a plan, an idle thing, anything naming the
    partner — their own news —, the speaker's own description of themselves, or this talk) and not
    yet said in this conversation; '' when nothing qualifies. Thoughts and reflections are mine,
    not news (:data:`NOT_NEWS`)."""
    spoken = " ".join(transcript).lower()
    best: tuple[int, int, str] | None = None
    for rank, memory in enumerate(memories):
        text = _PREFIX.sub("", " ".join(memory.text.split())).strip().rstrip(".")
        lower = text.lower()
        # a talk's summary or news told me is another's words: news travels as the fact, through
        # the conversation's goal (gatherings.goal_topic), never as their line retold
        if (memory.importance < min_importance or not text or memory.kind in NOT_NEWS
                or lower.startswith(("my plan", "currently:", "i should", "i decided")) or about_partner(text, partner)
                or (speaker and lower.startswith(speaker.lower() + " "))  # 'Maria Alvarez is warm, organised, ...'
                or lower.endswith(" is idle") or " is talking with " in lower or lower[:40] in spoken
                or object_state(text)  # 'stove is off': a thing seen, no news to bring up
                or not re.search(r"[a-z]{3}", lower)):
            continue
        if best is None or (memory.importance, -rank) > (best[0], -best[1]):
            best = (memory.importance, rank, text)
    return best[2] if best else ""


async def _next_line(mind: "Resident", convo: Conversation, p: Perception) -> Line:
    other = convo.partner
    queries = [other, f"{other} news plans party events"]
    # news of a gathering that has begun is no news: not 'I am planning a party' at the party
    records = [m for m in await mind.memory_for(queries, 6) if not no_longer_news(mind, m)]
    memories = [m.text for m in records]
    topic, convo.goal = goal_topic(mind, other)  # invite, pass news on, ask them along
    if not topic:
        topic = pick_topic(records, other, convo.lines, speaker=mind.name)
    relation = mind.social.describe(other)
    current = mind.state.current.description if mind.state.current else "nothing in particular"
    previous = next((l.split(": ", 1)[1] for l in reversed(convo.lines) if l.startswith(other + ": ")), "")
    # every earlier line of the talk, the partner's too: SmolLM2's Tom said Lucy's opening line back
    # to her, word for word, two lines later (quickstart, 2026-11-26)
    said = tuple(l.split(": ", 1)[1] for l in convo.lines if ": " in l)
    acquainted = mind.social.tie(other) is not None  # no 'I am Tom Alvarez' to one's wife
    bring_up = goal_words(mind, convo)
    not_mine = others_event_words(mind)
    return await mind.caller.ask(
        "converse",
        converse_prompt(
            mind.summary, mind.name, other, relation, f"{p.time:%H:%M}", current, mind.arena_here(p),
            memories, convo.lines, mind.tuning.max_chat_lines, topic,
        ),
        line_schema(mind.name, other, previous, said, acquainted, bring_up, not_mine),
        line_fallback(other, len(convo.lines), mind.name, previous, topic, said, current, acquainted, bring_up,
                      not_mine),
        max_tokens=160,
    )


def goal_words(mind: "Resident", convo: Conversation) -> tuple[str, ...]:
    """What my first line of a talk must speak of when the talk has a goal (the engine's: invite,
    pass news on), so that a model which words something else is asked again and then falls back
    to the news said plainly: the news is the engine's structure, the model only words it. Later
    lines are free (a talk is not a broadcast), and so is a talk with one line left."""
    known = mind.state.events.get(convo.goal) if convo.goal else None
    mine = any(line.startswith(mind.name + ": ") for line in convo.lines)
    if known is None or mine or len(convo.lines) + 1 >= mind.tuning.max_chat_lines:
        return ()
    return tuple(event_words(known.event))


def others_event_words(mind: "Resident") -> tuple[str, ...]:
    """The words of the events I know and someone else holds, less those of any I hold: a line
    of mine may not say I hold them (SmolLM2's Sophie, told of Maria's party: 'I am planning a
    Valentine's Eve party at Willow Cafe, kitchen', society bench seed 0, 2026-11-28)."""
    mine: set[str] = set()
    others: set[str] = set()
    for known in mind.state.events.values():
        (mine if known.event.host == mind.name else others).update(event_words(known.event))
    return tuple(sorted(others - mine))


def _say(mind: "Resident", convo: Conversation, text: str, p: Perception) -> Intent:
    text = " ".join(text.split())[:400] or "..."
    convo.lines.append(f"{mind.name}: {text}")
    convo.owed = False
    convo.last_tick = p.tick
    mind.learn_places_from(text)
    news = None
    known = mind.state.events.get(convo.goal) if convo.goal else None
    if known is not None and refers_to(text, known.event):
        # the line speaks of the goal's event: the partner hears the fact as I know it (host, place,
        # time), however the model worded it, and knows it from me
        news = describe(known.event)
        mark_told(mind, convo.goal, convo.partner)
        if known.source != convo.partner:
            fact = _told_fact(mind, news)
            convo.told += [fact] if fact not in convo.told else []
    elif (spoken := spoken_of(mind, text)) is not None:
        news = describe(spoken.event)  # another event I know, spoken of: as I know it, not as worded
    return Intent(
        kind="say", to=convo.partner, utterance=text, news=news, description=f"talking with {convo.partner}",
        emoji="💬", event=(mind.name, "talking with", convo.partner),
    )


def _told_fact(mind: "Resident", news: str) -> str:
    """What a talk's summary says I told: mine in my words ('I am running for mayor')."""
    return "I am " + news.removeprefix(f"{mind.name} is ") if news.startswith(f"{mind.name} is ") else news


def take_back(mind: "Resident", unsaid: list[ChatLine]) -> None:
    """My lines the world did not say (Perception.unsaid: my partner spoke to me at the same
    moment, or was talking with someone else): out of my talk's transcript, and nobody was told
    by them. A talk left without a line never happened (no summary, no tie): I answer the line
    that crossed mine as a talk of theirs."""
    convo = mind.state.convo
    for line in unsaid:
        if convo is None or line.listener != convo.partner:
            continue
        mine = f"{mind.name}: {line.text}"
        if mine in convo.lines:
            del convo.lines[len(convo.lines) - 1 - convo.lines[::-1].index(mine)]
        if line.news:
            unmark_told(mind, line.news, convo.partner)
            fact = _told_fact(mind, line.news)
            convo.told = [t for t in convo.told if t != fact]
        if not convo.lines:
            mind.state.convo = convo = None
        elif not convo.lines[-1].startswith(mind.name + ": "):
            # an answer held back because someone else spoke to my partner first: it is still my
            # turn, and waiting left both talks unanswered (Paul answered Viktor as Eleanor greeted
            # him; all three waited out the talk, a scripted bench, 2026-11-27). Answered again
            # once (:func:`answer_again`); a partner still busy after that is left to them.
            convo.held += 1
            convo.owed = convo.held == 1


async def open_conversation(mind: "Resident", partner: str, p: Perception) -> Intent:
    convo = Conversation(
        partner=partner, conversation_id=f"{mind.name}>{partner}@{p.tick}", last_tick=p.tick, started=p.time,
    )
    mind.state.convo = convo
    mind.state.last_talk[partner] = p.time
    line = await _next_line(mind, convo, p)
    if line.end and len(convo.lines) == 0:
        line.end = False  # an opener never ends a conversation before the partner speaks
    return _say(mind, convo, line.utterance, p)


async def on_heard(mind: "Resident", heard: list[ChatLine], p: Perception) -> Intent | None:
    """Lines addressed to me: join or continue the conversation, answer or close it."""
    speakers = [h.speaker for h in heard]
    busy = mind.state.convo.partner if mind.state.convo is not None else ""
    for h in heard:
        if busy and h.speaker != busy:
            # busy talking with someone else: the line goes unanswered, but it was heard, and is
            # remembered with who said it (it had been lost: issue 26's Tom and Maria)
            mind.remember_pending("chat", f"{h.speaker} said to me, while I was talking with {busy}: {h.text}")
            learn(mind, h.news or h.text, h.speaker, h.speaker, tuple(p.nearby), h.text)
    if busy and busy not in speakers:
        return None
    partner = mind.state.convo.partner if mind.state.convo is not None else speakers[0]
    if mind.state.convo is None:
        closed = mind.state.recently_closed.get(partner)
        # (a default of -1 read every line of a run's first ticks as said after a close)
        if closed is not None and closed >= p.tick - mind.tuning.reply_timeout_ticks:
            for h in heard:  # a parting line after I closed: nothing to answer, but news in it is heard
                if learn(mind, h.news or h.text, h.speaker, h.speaker, tuple(p.nearby), h.text) is not None or len(h.text.split()) >= 12:
                    mind.remember_pending("chat", f"{h.speaker} said to me as we parted: {h.text}")
            return None
        mind.state.convo = Conversation(
            partner=partner, conversation_id=f"{partner}>{mind.name}@{p.tick}", last_tick=p.tick, started=p.time,
        )
        mind.state.last_talk[partner] = p.time
    convo = mind.state.convo
    crossed = crossed_lines(convo, mind.name, p.tick)
    for h in heard:
        if h.speaker == partner:
            _take_in_line(mind, convo, h, p)
    convo.last_tick = p.tick
    if len(convo.lines) >= mind.tuning.max_chat_lines or partner not in p.nearby:
        await close_conversation(mind, p)  # budget spent, or they walked off: no answer
        return None
    if crossed and mind.name > partner:
        # we both spoke at once: one answers (the name first in order), the other listens, so
        # the two do not talk past each other saying the same thing in parallel
        return Intent(kind="wait", description=f"talking with {partner}", emoji="💬")
    return await _answer(mind, convo, p)


async def answer_again(mind: "Resident", p: Perception) -> Intent | None:
    """My answer was held back (:func:`take_back`) and nothing new was said to me: answer now,
    or close the talk when the partner has gone."""
    convo = mind.state.convo
    if convo is None:
        return None
    if convo.partner not in p.nearby:
        await close_conversation(mind, p)
        return None
    return await _answer(mind, convo, p)  # (saying it settles what was owed: _say)


async def _answer(mind: "Resident", convo: Conversation, p: Perception) -> Intent:
    """My next line in the talk, said; the talk closed after it when it ends it or fills the budget."""
    line = await _next_line(mind, convo, p)
    intent = _say(mind, convo, line.utterance, p)
    if line.end or len(convo.lines) >= mind.tuning.max_chat_lines:
        convo.ended_by_me = True
        await close_conversation(mind, p)
    return intent


def _take_in_line(mind: "Resident", convo: Conversation, h: ChatLine, p: Perception) -> None:
    """The partner's line into the talk: its words, the places and news in it, what it taught me."""
    convo.lines.append(f"{h.speaker}: {h.text}")
    mind.learn_places_from(h.text)
    # news the speaker passed on is the fact as they know it (Intent.news); only a line that
    # passes none on is read for a gathering of its own (a new one, or one of the speaker's)
    learn(mind, h.news or h.text, h.speaker, h.speaker, tuple(p.nearby), h.text)
    event = heard_event(mind, h.news or h.text, h.speaker)  # new to me or not: what the talk was about
    if event is not None and describe(event) not in convo.learned:
        convo.learned.append(describe(event))
    told = [in_third_person(s, h.speaker) for s in hear_of_people(mind, h.text, h.speaker)]
    convo.learned += [s for s in told if s and s not in " ".join(convo.learned)]


def crossed_lines(convo: Conversation, me: str, tick: int) -> bool:
    """Did the partner's line cross mine (said in the same tick, before they heard mine)? A line
    is heard the tick after it is said, so an answer to mine arrives two ticks later at the soonest."""
    return bool(convo.lines) and convo.lines[-1].startswith(me + ": ") and convo.last_tick == tick - 1


def timed_out(mind: "Resident", p: Perception) -> bool:
    convo = mind.state.convo
    if convo is None:
        return False
    if convo.partner not in p.nearby and p.tick > convo.last_tick:
        return True
    return p.tick - convo.last_tick > mind.tuning.reply_timeout_ticks


async def close_conversation(mind: "Resident", p: Perception) -> None:
    """Summary memory (+ planning thought) and a stronger tie; no-op without a conversation."""
    convo = mind.state.convo
    if convo is None:
        return
    mind.state.convo = None
    mind.state.recently_closed[convo.partner] = p.tick
    mind.state.last_talk[convo.partner] = p.time
    mind.state.last_chat_end = p.time
    if not convo.lines:
        return
    answer = await mind.caller.ask(
        "chat_summary",
        summary_prompt(mind.summary, mind.name, convo.partner, convo.lines, convo.learned,
                       [t for t in convo.told if t not in convo.learned]),  # we told each other: heard it
        summary_schema(mind.name, convo.partner),
        chat_summary_fallback(convo.partner, convo.lines, mind.name),
        max_tokens=200,
    )
    mind.remember_fixed("chat", answer.summary.strip()[:500] or f"I talked with {convo.partner}", answer.importance)
    if answer.thought.strip():
        mind.remember_fixed("thought", answer.thought.strip()[:300], answer.importance)
    mind.social.met(convo.partner, p.tick, answer.summary.strip()[:200])
    if answer.thought.strip() and answer.importance >= 6:
        mind.state.replan_reason = answer.thought.strip()


def chat_record(mind: "Resident", convo: Conversation, text: str) -> dict:
    return ChatPayload(speaker=mind.name, listener=convo.partner, text=text,
                       conversation_id=convo.conversation_id).model_dump()
