"""Checks that turn a well-formed but useless answer into a validation error.

A small model fills a schema with things that parse but mean nothing: the instruction or
the worked example copied back, a name instead of a chat line, the partner's line said
again, an action that does not fit its place ('sleeping' at the bank), or the same rating
for a brawl and for an idle chair. Each check here is a pure function returning the problem
in words (or None); schemas call them in validators, so the gateway retries with a new seed
and then falls back to the skeleton, as for any invalid answer.
"""

from __future__ import annotations

import re
from functools import lru_cache

from maps.contracts import MONTHS, WEEKDAYS

_WORD = re.compile(r"[a-z0-9']+")

def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def copied_from(answer: str, source: str, run: int = 7, allowed: tuple[str, ...] = ()) -> str | None:
    """A problem when ``answer`` repeats ``run`` consecutive words of ``source`` (an instruction)
    that none of ``allowed`` has: words the answer may repeat because it draws on them (asked
    'Do you know who is opening a bakery on Main Street next month?', a resident who remembers
    'Pip told me that Pip is opening a bakery on Main Street next month' says it, no echo)."""
    a, s = words(answer), words(source)
    if len(a) < run or len(s) < run:
        return None
    grams = {tuple(s[i : i + run]) for i in range(len(s) - run + 1)}
    for text in allowed:
        w = words(text)
        grams -= {tuple(w[i : i + run]) for i in range(len(w) - run + 1)}
    for i in range(len(a) - run + 1):
        if tuple(a[i : i + run]) in grams:
            return "copies the instruction instead of answering it"
    return None


def _bare_line(line: str) -> str:
    """A chat line lower-cased, its punctuation and spacing collapsed to single spaces."""
    return re.sub(r"[\s:,.!?\"'-]+", " ", line).strip().lower()


def just_a_name(line: str, names: tuple[str, ...]) -> str | None:
    """A problem when a chat line is only a name (or 'Name:'), not something said."""
    stripped = _bare_line(line)
    if not stripped:
        return "is empty"
    for name in names:
        parts = {name.lower(), *name.lower().split()}
        if stripped in parts:
            return "is a name, not a line of speech"
    return None


def only_a_label(line: str, names: tuple[str, ...]) -> str | None:
    """A problem when a chat line is a speaker's label and nothing said ('Maria Alvarez says,')."""
    pattern = _label_pattern(tuple(names))
    if pattern is not None and pattern.fullmatch(_bare_line(line)):
        return "is a speaker's label, nothing said"
    return None


@lru_cache(maxsize=16)
def _label_pattern(names: tuple[str, ...]) -> re.Pattern[str] | None:
    """The speaker-label pattern of these names, built once per town (not once per line)."""
    labels = {label for name in names for label in (name.lower(), *name.lower().split()[:1]) if label}
    if not labels:
        return None
    label = "(?:" + "|".join(re.escape(x) for x in sorted(labels, key=len, reverse=True)) + ")"
    # 'Maria Alvarez says,' and 'Lucy Alvarez says to Tom Alvarez,' (SmolLM2, 2026-11-25)
    verb = "(?:says|said|asks|asked|replies|replied|tells|told)"
    return re.compile(rf"{label}(?: {verb}(?: to {label})?)?")


def addresses_itself(line: str, name: str) -> str | None:
    """A problem when the speaker calls itself by name ('What do you think, Tom Alvarez?' said by
    Tom) or speaks of itself in the third person ('Lucy Alvarez is idle' said by Lucy): a small
    model losing track of who is speaking. Mid-line too, when the full name does something or owns
    something ('... so I will say it: Clara Novak is running for mayor' said by Clara; the host
    answering 'Tom told me that Maria Alvarez is hosting a party', SmolLM2 society bench
    2026-11-28)."""
    if names_in_third_person(line, name):
        return "speaks of the speaker in the third person"
    patterns = _self_patterns(name)
    if patterns is None:
        return None
    _third, named, greeted, _acting = patterns
    if named.search(line.strip()):
        return "addresses the speaker by its own name"
    # 'Hi Maria! How are you today?' said by Maria (SmolLM2, bench seed 1, 2026-11-26)
    if greeted.search(line):
        return "addresses the speaker by its own name"
    return None


def speaks_of_listener(line: str, listener: str) -> str | None:
    """A problem when a line speaks of the one it is said to in the third person, by full name
    ("I'm making a plan to celebrate Tom Alvarez's 25th birthday", SmolLM2's Omar to Tom, society
    bench 2026-11-28): the test :func:`addresses_itself` makes of the speaker."""
    return "speaks of the one spoken to in the third person" if names_in_third_person(line, listener) else None


def names_in_third_person(line: str, person: str) -> bool:
    """Does ``line`` speak of ``person`` by full name in the third person: opening with it ('Lucy
    Alvarez is idle'), or anywhere with it doing or owning something ('... Clara Novak is running',
    "Tom Alvarez's birthday")? A one-word name never does (it may be a greeting)."""
    patterns = _self_patterns(person)
    if patterns is None or patterns[0] is None:
        return False
    third, _named, _greeted, acting = patterns
    return bool(third.match(line) or acting.search(line))


_DOES = ("is|was|has|had|will|would|can|could|wants?|plans?|planning|thinks?|says?|said|told|hopes?|"
         "loves?|likes?|hosts?|hosting|runs?|running|invites?|invited")


@lru_cache(maxsize=4096)
def _self_patterns(name: str) -> tuple[re.Pattern[str] | None, re.Pattern[str], re.Pattern[str],
                                       re.Pattern[str]] | None:
    """:func:`addresses_itself`'s four patterns for one speaker, compiled once: built on every
    line they were a third of a 1,000-resident day's summary (re's own cache holds 512)."""
    first = name.split()[0] if name.split() else ""
    if not first:
        return None
    third = re.compile(rf"\s*{re.escape(name)}(?:'s)?\b", re.IGNORECASE) if len(name.split()) > 1 else None
    who = rf"(?:{re.escape(name)}|{re.escape(first)})"
    named = re.compile(rf"(?:^|[,.!?]\s*){who}\s*[,!?]|,\s*{who}\s*[.!?]*\s*$", re.IGNORECASE)
    greeted = re.compile(rf"\b(?:hi|hello|hey|dear|good (?:morning|afternoon|evening)|morning),?\s+{who}\b",
                         re.IGNORECASE)
    acting = re.compile(rf"\b{re.escape(name)}(?:'s\s+\w|\s+(?:{_DOES})\b)", re.IGNORECASE)
    return third, named, greeted, acting


def introduces_itself(line: str, name: str) -> str | None:
    """A problem when the speaker tells its own name ('I am Tom Alvarez and I would love to
    discuss my plans ...', Tom to his wife in SmolLM2's quickstart, 2026-11-26). Only asked of
    a talk between people who know each other: a stranger may well say who they are."""
    first = name.split()[0] if name.split() else ""
    if first and re.search(rf"\b(?:i am|i'm|im|my name is|my name's|call me)\s+{re.escape(first)}\b", line, re.IGNORECASE):
        return "tells its own name to someone who knows it"
    return None


_CLOCK = re.compile(r"\b\d{1,2}:\d{2}\b")
_ABOUT_THE_TALK = re.compile(r"\b(?:conversation is over|the last sentence|this conversation ends)\b", re.I)
# an exercise sheet's words, not a neighbour's: SmolLM2's Hannah Price opened two talks (society bench,
# seeds 0 and 1, 2026-11-28) with 'Hint: What is the answer to this question? 1. The answer is:'
_WORKSHEET = re.compile(r"^\W*(?:hint|answer|question|note|example|output|input)\s*\d*\s*:|"
                        r"\b(?:the answer is\s*:|answer (?:to )?this question)", re.I)


# A help desk's phrases, not a neighbour's: an instruction-tuned small model falls back on them
# ('I am really sorry for the inconvenience you've experienced. I'll be happy to help you resolve
# the situation', 'I'm here to support you in any way I can': SmolLM2 at breakfast, 2026-11-26).
_HELP_DESK = re.compile(
    r"\b(sorry for (the|any) inconvenience|here to (help|assist|support) you|in any way i can|"
    r"resolve (the|this|your) (situation|issue|concern)|further assistance|(how|what) (can|may) i assist|"
    r"thank you for (reaching out|contacting|your patience))\b",
    re.I,
)


def not_said_aloud(line: str) -> str | None:
    """A problem when a chat line is a schedule read out ('Dinner at Oak House kitchen, late to bed,
    19:00, ..., 20:00, ...') or talk about the conversation rather than in it ('The conversation is
    over.'), both SmolLM2 in the quickstart of 2026-11-25, an exercise sheet's words ('Hint: ...
    The answer is:') or a help desk's phrase (:data:`_HELP_DESK`) where a resident would just talk."""
    if len(_CLOCK.findall(line)) >= 2:
        return "reads out times like a schedule"
    if _ABOUT_THE_TALK.search(line):
        return "talks about the conversation instead of in it"
    if _WORKSHEET.search(line):
        return "reads like an exercise sheet (a hint, a question to answer), not talk"
    return help_desk(line)


# an object's state as observed: 'stove is off', 'kitchen table is being used for having breakfast'
# (an object is lower case where it opens a memory; residents' names are capitalised)
_OBJECT_STATE = re.compile(r"[a-z][a-z' -]*? is\b")


def object_state(text: str) -> bool:
    """Whether a memory is only an object's state as seen ('stove is off'): nothing to tell."""
    return bool(_OBJECT_STATE.match(text.strip()))


def help_desk(text: str) -> str | None:
    """A problem when a resident's line or answer uses a help desk's phrase (:data:`_HELP_DESK`)."""
    return "sounds like a help desk, not a resident" if _HELP_DESK.search(text) else None


# Words that make even a one- or two-word line speech: greetings, answers, interjections,
# pronouns. A short line with none of them says nothing ('Lemonade', 'Santa Yarra').
_SHORT_SPEECH = frozenset(
    "yes no yeah yep nope sure ok okay alright thanks thank hi hello hey bye goodbye morning evening night "
    "sorry please oh ah ha haha hmm huh wow great really right maybe indeed cheers welcome congratulations "
    "good nice fine well absolutely definitely certainly exactly agreed true totally perfect lovely cool "
    "course i me my you your we us it that this what why how when where who not".split()
)


def says_nothing(line: str) -> str | None:
    """A problem when a chat line is a word or two that neither greet, answer nor say anything:
    'Lemonade', 'Santa Yarra' and 'Mari-El' were SmolLM2's replies in the quickstart of
    2026-11-25. Short speech ('Yes!', 'Me too', 'Morning, Lucy') holds one of :data:`_SHORT_SPEECH`."""
    found = words(line)
    if 0 < len(found) <= 2 and not any(w in _SHORT_SPEECH for w in found):
        return "is a word or two that say nothing"
    return None


_SENTENCE_END = re.compile(r"(?<=[.!?,;])\s+|\n+")  # clauses too: 'I will never be happy, I will never be happy, ...'


LOOP_SHARE = 0.25  # share of a line's words in sentences it already said: past this, it loops
LOOP_OVERLAP = 0.75  # share of a sentence's distinct words found in an earlier one: said again
# words two sentences share without saying the same thing ('I went to the cafe, then I went to the pub')
_LOOP_STOP = frozenset("a an the to of and or but i i'm i've i'll me my you you're your we our it it's is am are "
                       "was were be so too at in on for with that this just very really then there here".split())


def _said_before(sentence: set[str], before: set[str]) -> bool:
    """Whether a sentence's words (stop words left out) are an earlier sentence's, nearly all."""
    if sentence == before:
        return True
    shared = len(sentence & before)
    return shared >= 3 and shared >= LOOP_OVERLAP * min(len(sentence), len(before))


def repeats_itself(line: str) -> str | None:
    """A problem when a line loops: sentences (or clauses) of three words or more said again make up
    :data:`LOOP_SHARE` of its words or more ('I love you. I love you. I am a kind person. I am a
    kind person.'); a phrase said twice in a long line ('Did you hear?') is not a loop. Again
    means nearly word for word too (:data:`LOOP_OVERLAP` of the shorter sentence's words):
    SmolLM2 rambled 'I'm so glad you're enjoying the work at Oak House kitchen. I'm so glad
    you're enjoying the work there, too. I'm just glad you're enjoying the work there, too.'"""
    seen: list[set[str]] = []
    total = again = 0
    for sentence in _SENTENCE_END.split(line):
        words = re.findall(r"[^\W\d_]+", sentence.lower())
        total += len(words)
        if len(words) < 3:
            continue
        distinct = set(words) - _LOOP_STOP or set(words)
        if any(_said_before(distinct, before) for before in seen):
            again += len(words)
        seen.append(distinct)
    return "says the same sentence twice" if total and again >= LOOP_SHARE * total else None


NEAR_REPEAT_OVERLAP = 0.8  # share of distinct words two lines have in common (names left out)


def repeats(line: str, previous: str, names: tuple[str, ...] = ()) -> str | None:
    """A problem when a line says the partner's previous line again: word for word, or with
    only the names swapped or a word changed ('Hi, Maria! I just wanted to say ...' answered by
    'Hi, Lucy! I just wanted to say ...', seen from Qwen). Lines of 4+ words (names left out)
    whose distinct words overlap by NEAR_REPEAT_OVERLAP or more are a repeat, not an answer."""
    a, b = words(line), words(previous)
    if a and a == b:
        return "repeats the previous speaker's line"
    dropped = {w for name in names for w in words(name)}
    mine, theirs = {w for w in a if w not in dropped}, {w for w in b if w not in dropped}
    if len(mine) >= 4 and len(theirs) >= 4 and len(mine & theirs) / len(mine | theirs) >= NEAR_REPEAT_OVERLAP:
        return "says the previous speaker's line again"
    # a shorter line made of the partner's words ('Have you heard about the medical school application? How
    # about the medical school application?' answered with its own first half, SmolLM2 2026-11-25)
    if len(mine) >= ECHO_MIN_WORDS and len(mine & theirs) / len(mine) >= ECHO_SHARE:
        return "echoes the previous speaker's line"
    # the partner's line taken up word for word and carried on ('I am happy to share with you that the
    # roof of the shed is leaking again ... I would l...', SmolLM2 under the speech openings, 2026-11-25)
    # names left out: 'I am Maria Alvarez and I would love to discuss my plans ...' opened Maria's
    # answer to Tom's 'I am Tom Alvarez and I would love to ...' (SmolLM2's quickstart, 2026-11-26)
    a, b = [w for w in a if w not in dropped], [w for w in b if w not in dropped]
    n = min(OPENS_WITH_WORDS, len(b))
    if n >= ECHO_MIN_WORDS and len(a) >= n and a[:n] == b[:n]:
        return "opens with the previous speaker's words"
    return None


ECHO_MIN_WORDS = 6  # distinct words (names left out) a line needs before it can be called an echo
ECHO_SHARE = 0.9  # share of them taken from the partner's previous line
# a line that opens with the partner's first eight words (or all of a shorter line of six or more) took
# the line up; eight, not six, so two lines on one pattern ('Really? I had not heard that ...') differ
OPENS_WITH_WORDS = 8


def has_any_word(text: str, keywords: frozenset[str] | tuple[str, ...]) -> bool:
    """Whether ``text`` has one of ``keywords`` as a whole word (lower-case words, apostrophes
    kept: 'party's' is not 'party'). Stricter than roles/interview.mentions, which finds a term
    inside a possessive; event matching has always been by whole words."""
    return bool(set(words(text)) & set(keywords))


def leaves_out(line: str, keywords: tuple[str, ...]) -> str | None:
    """A problem when a line that is to bring news up (the talk's goal: an invitation, news passed
    on) has none of its ``keywords``: SmolLM2's Lucy knew of Maria's party from 07:00 on Friday
    and, in the five talks she opened that day, spoke of a special day, a cup of coffee and a trip
    to Italy; nobody learned of the party from her (society bench seed 0, 2026-11-27). No
    keywords: nothing to bring up, no problem."""
    if not keywords or has_any_word(line, keywords):
        return None
    return f"does not bring up what this talk is for (say it with one of: {', '.join(sorted(keywords))})"


# the speaker saying it holds something: 'I am planning a ...', "I'm hosting ...", 'I will be running for ...'
# ('I am planning to go to ...' is a guest's; 'giving' and 'holding' are left out: 'holding the cake').
# Narrower on purpose than the verbs events.find_host reads a host from (agents/minds/cognition/events.py
# _HOSTING, with 'having', 'giving', 'playing'): that one reads who holds an event a line announces; this
# one refuses a line, where "I'm having fun at Maria's party" must pass.
_CLAIMS_TO_HOLD = re.compile(r"\b(?:I|we)(?:\s+am|'m|\s+are|'re|\s+will\s+be|'ll\s+be)?\s+"
                             r"(?:planning(?!\s+(?:to|on)\b)|hosting|throwing|organi[sz]ing|running\s+for)\b([^.!?]*)",
                             re.IGNORECASE)


def claims_as_own(line: str, others: tuple[str, ...]) -> str | None:
    """A problem when a line passes someone else's event off as the speaker's own: 'I am planning
    a Valentine's Eve party at Willow Cafe ...' said by Sophie Bell of the party Maria Alvarez
    told her about (SmolLM2, society bench seed 0, 2026-11-28). ``others``: the words of events
    the speaker knows and does not hold (events.event_words), not those of one it holds itself.
    The listener is told the fact as the speaker knows it whatever the words; this keeps the
    words from saying otherwise."""
    if not others:
        return None
    for m in _CLAIMS_TO_HOLD.finditer(line):
        if has_any_word(m.group(1), others):
            return "says the speaker holds an event someone else holds (say whose it is)"
    return None


# verbs of going somewhere on foot, shared by the checks below that read where an action leads
_GOING = r"go|goes|going|head|heads|heading|walk|walks|walking"

# a verb of setting off to somewhere ('heading to the party', 'go and join the concert')
_SETS_OFF = re.compile(rf"\b(?:{_GOING}|attend|attends|attending|join|joins|joining|arrive|arriving|off to)\b", re.I)


# where a verb of setting off leads: 'going to the party', 'heading over to Maria's party', 'joining the
# concert'; not 'going to tell Tom about the party' (the words after 'to' must start with a determiner,
# a possessive or a name)
_SETS_OFF_TO = re.compile(rf"\b(?:(?:{_GOING}|off|arrive|arriving)"
                          r"(?:\s+(?:over|out|back|down|along))?\s+(?:to|for|towards|into)|attend|attends|attending|"
                          r"join|joins|joining)\s+((?:the|a|an|my|our|his|her|their|this|[\w]+'s|(?-i:[A-Z]\w*))\b"
                          r"(?:\s+[\w']+){0,4})", re.I)


def goes_out_of_time(action: str, place: str, not_now: tuple[tuple[str, tuple[str, ...]], ...]) -> str | None:
    """A problem when an action sets off to a gathering when it is not on: 'heading to the
    Valentine's Day party' at 11:00 for a party from 17:00 (the society bench's wrong-time guest,
    SmolLM2, 2026-11-27), wherever it is said, or any going at the venue with the gathering's
    words. ``not_now``: (venue building, words) of the gatherings the resident knows whose time
    it is not (events.event_words); the plan gives each its slot. 'Going to tell Tom about the
    party' at Tom's house passes."""
    if not not_now:
        return None
    building = place.split(":")[0].lower()
    led_to = " ".join(m.group(1) for m in _SETS_OFF_TO.finditer(action))
    for venue, words in not_now:
        at_venue = venue.lower() == building and _SETS_OFF.search(action)
        if (at_venue or led_to) and has_any_word(action if at_venue else led_to, words):
            return "sets off to a gathering that is not on now (the plan has its time)"
    return None


_ANOTHER_DAY = re.compile(
    rf"\b(?:tomorrow(?!'s)|yesterday(?!'s)|(?:on|this|next|last) (?:{'|'.join(WEEKDAYS)})\b(?!'s)|"
    r"(?:next|last) (?:week|weekend|month|year)\b(?!'s)|this weekend\b(?!'s)|"
    rf"on (?:{'|'.join(MONTHS)}) \d{{1,2}}\b)",
    re.IGNORECASE)
# an action that is being somewhere with someone: done on another day, it is no action now
_AWAY = re.compile(rf"^\s*(?:to |i am |i'm |i will |i'll )?(?:{_GOING}|go to|visit|visits|visiting|meet|meets|meeting|attend|"
                   r"attends|attending|join|joins|joining|celebrate|celebrates|celebrating|spend|spends|spending)\b",
                   re.IGNORECASE)


def names_another_day(action: str) -> str | None:
    """A problem when an action of being somewhere or with someone names another day: it is a
    plan, not what one does now ('visiting Lucy Alvarez at Willowbrook Cafe dining room on
    Saturday', a SmolLM2 reaction at 13:27 on the Friday, in a classroom; society bench,
    2026-11-28). The plan gives those their slot; 'thinking about the party on Saturday' and
    'baking a cake for tomorrow's party' are done now and pass."""
    if _AWAY.search(action) and _ANOTHER_DAY.search(action):
        return "names another day (a plan, not an action now)"
    return None


def speaks_as(line: str, other: str) -> str | None:
    """A problem when a line is written as the partner's ('Lucy Alvarez: Hi Maria! ...' said by
    Maria): the model carrying on the transcript instead of answering."""
    first = other.split()[0] if other.split() else ""
    if first and re.match(rf"\s*[\"'“]?(?:{re.escape(other)}|{re.escape(first)})\s*:", line, re.IGNORECASE):
        return "is written as the partner's line"
    return None


# A few words that tie an activity to a kind of place; an action with one of these words
# fits only a place whose address has one of the place words.
_PLACE_WORDS: dict[str, tuple[str, ...]] = {
    "sleep": ("bed", "home", "house", "apartment", "flat", "cottage", "room"),
    "shower": ("bath", "home", "house", "apartment", "flat", "cottage"),
    "bathe": ("bath", "home", "house", "apartment", "flat", "cottage"),
}


def fits_place(action: str, place: str, home: str = "") -> str | None:
    """A problem when an action plainly cannot happen at the place (sleeping at the bank)."""
    lower, where = action.lower(), place.lower()
    at_home = bool(home) and (place == home or place.startswith(home.split(":")[0] + ":") or home.startswith(place))
    for verb, places in _PLACE_WORDS.items():
        if re.search(rf"\b{verb}", lower) and not at_home and not any(p in where for p in places):
            return f"'{action}' does not fit the place {place}"
    return None


# 'at Willowbrook College'; 'going to Willow Cafe' (a step or a reaction that says it goes somewhere
# while its place is elsewhere left SmolLM2's Ben at home 'going to Willow Cafe' for an hour, 2026-11-27);
# 'go to Maple House second bedroom' too: SmolLM2's Noah Price, told to work at the grocer, wrote a
# morning of 'go to ...' steps there, all kept (society bench seed 0, 2026-11-28)
_NAMED_PLACE = re.compile(rf"\b(?:at|(?i:{_GOING}|drive|drives|driving|"
                          r"return|returns|returning|rush|rushing|hurry|hurrying|come|comes|coming) "
                          r"(?i:back |over |straight )?(?i:to)(?i: the)?) ((?:[A-Z][\w']+ ?){1,4})")


def named_place(action: str) -> str | None:
    """The capitalised place an action says it happens at ('at Willowbrook College'), if any."""
    named = _NAMED_PLACE.search(action)
    return named.group(1).strip() if named else None


def names_another_place(action: str, address: str) -> str | None:
    """A problem when an action names a place ('working at Willowbrook College') and happens
    somewhere else (Oak House:second bedroom); the first word of the name must be a word of the
    address ('Willow Cafe' is not in 'Willowbrook College': SmolLM2's step 'going to a Valentine's
    Day party at Willow Cafe dining' passed in a classroom at 08:26, society bench 2026-11-28)."""
    named = named_place(action)
    if named and address and not re.search(rf"(?<![a-z]){re.escape(named.split()[0].lower())}(?![a-z])",
                                            address.lower()):
        return f"names {named} but is at {address}"
    return None


def flat_ratings(ratings: list[int], spread: int) -> str | None:
    """A problem when 3+ memories whose plain-reading importance differs by ``spread`` >= 4
    all got the same rating (the model rated nothing, it repeated a number)."""
    if len(ratings) >= 3 and len(set(ratings)) == 1 and spread >= 4:
        return "gives the same rating to very different memories"
    return None
