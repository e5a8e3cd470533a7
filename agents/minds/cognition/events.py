"""Gatherings named in words, as structure: what, host, place (a town address), start and end
resolved against the clock, who is invited. Pure functions, no model call.

The model words and decides; the engine parses what was said or written here, resolves it
against the town (its sector and arena names) and the clock, and validates it: a place that
is not in the town, a time already past, an end before the start, a gathering with no time
at all is refused with the reason — never guessed. Nothing is special-cased on one kind: a
party, a town meeting, a funeral, a concert, a match and an election go through the same
path. A candidacy ('Sam is running for mayor') and news ('Pip is opening a bakery next month')
are notions with no place or time.

:func:`describe` writes an event back as one plain sentence that :func:`parse_event` reads
again to the same event, so news told in those words keeps its meaning as it travels.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

from pydantic import BaseModel
from agents.minds.state import Gathering
from agents.roles.checks import has_any_word
from maps.contracts import MONTHS, WEEKDAYS

# The gatherings a town has (nouns; a modifier before one is kept: 'Valentine's Day party').
KINDS = ("party", "celebration", "festival", "meeting", "assembly", "funeral", "memorial", "vigil",
         "wedding", "concert", "recital", "performance", "match", "game", "tournament", "race",
         "election", "vote", "debate", "picnic", "fair", "market", "dance", "ceremony", "reunion",
         "barbecue", "potluck", "service", "lecture", "screening", "quiz")
_KIND = "|".join(KINDS)
OFFICES = ("mayor", "council", "councillor", "town council", "sheriff", "president", "chair", "office")
DEFAULT_HOURS = 2  # a gathering given only its start lasts this long
# 'tomorrow evening': the part of the day as a window (start hour, end hour)
PARTS = {"morning": (9, 11), "noon": (12, 13), "lunchtime": (12, 13), "afternoon": (14, 16),
         "evening": (18, 20), "tonight": (19, 21), "night": (20, 22)}
_MONTH = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_STOP = {"is", "are", "was", "at", "on", "in", "there", "a", "an", "the", "to", "for", "with", "and", "of",
         "from", "i", "we", "you", "be", "will", "my", "our", "his", "her", "their", "this", "that", "it"}
_ARTICLE = r"(?:a|an|the|my|our|his|her|their|this)"
_DETERMINERS = ("my", "our", "his", "her", "their", "this")
_HOSTING = r"(?:planning|hosting|throwing|organi[sz]ing|holding|giving|having|playing|performing in|running)"
_NAME = r"[A-Z][a-z'’-]+(?: [A-Z][a-z'’-]+)?"
_CLOCK = r"(\d{1,2})(?:[:.](\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)?"
# a place named after 'at'/'in' that may not be in the town: 'at the Grand Hotel'
_NAMED_PLACE = re.compile(r"\b(?:at|in)\s+(?:the\s+)?((?:[A-Z][\w'’-]*)(?:\s+[A-Z][\w'’-]*){0,3})")
# the words of a public room, most public first: a clinic's gathering is in its waiting room, not its
# exam room (both are 'rooms'; the first listed won before, 2026-11-27); a bare 'room' comes last
_PUBLIC_ROOM = ("hall", "chamber", "dining", "lobby", "waiting", "lounge", "floor", "bar", "library", "lawn", "garden",
                "square", "room")
_PRIVATE_ROOM = ("kitchen", "pantry", "storeroom", "office", "vault", "bedroom", "cellar", "apartment")


class Parsed(BaseModel):
    """What a text names: an event, or the reason it could not be one (``problem``)."""

    event: Gathering | None = None
    problem: str = ""
    what: str = ""


def _clean(text: str) -> str:
    return _TELLING.sub(r"\1 ", " ".join(text.replace("’", "'").split()))


# someone seen telling their news ('Eleanor Ross is telling people at Willow Cafe dining room about
# running for re-election this autumn': the step of a host out to tell people, agents/minds/cognition/
# visits.py) has that news to tell; passed on as seen, it was read as news of its own, "telling people
# at ...", and travelled beside the candidacy it was about (a scripted bench, 2026-11-27)
_TELLING = re.compile(r"\b(is|am|'m)\s+(?:telling|announcing to)\s+(?:people|everyone|everybody|others|folks)"
                      r"(?:\s+(?:at|in)\s+[^.!?]*?)?\s+about\s+(?=[a-z]+ing\b)")


def find_kind(text: str) -> tuple[str, str] | None:
    """(kind, what) of the first gathering noun in ``text``: 'a Valentine's Day party' ->
    ('party', "a Valentine's Day party"), "Arthur's funeral" -> ('funeral', "Arthur's funeral");
    'my party' is 'a party' (told on, it is no longer the teller's). None when it names none."""
    match = re.search(rf"\b({_KIND})(?:es|s)?\b", text, re.IGNORECASE)
    if match is None:
        return None
    kind = match.group(1).lower()
    before = re.findall(r"[\w'-]+", text[:match.start()])
    words: list[str] = []
    article = ""
    for word in reversed(before[-5:]):
        if word.lower() in _STOP:
            article = word.lower() if word.lower() in ("a", "an", "the") else ("a" if word.lower() in _DETERMINERS else "")
            break
        words.insert(0, word)
    what = " ".join([*words, kind])
    if article in ("a", "an"):
        article = _article(what)
    return kind, f"{article} {what}".strip()


def find_candidacy(text: str, speaker: str, names: list[str]) -> Gathering | None:
    """'Sam Moore is running for mayor' / 'I am running for mayor' as a candidacy notion."""
    match = re.search(rf"(\bI(?: am|'m)|{_NAME})\s+(?:is\s+)?(?:running|standing)\s+for\s+(?:the\s+)?(?:post of\s+)?"
                      rf"({'|'.join(OFFICES)})\b", text)
    if match is None:
        return None
    who = speaker if match.group(1).startswith("I") else resolve_name(match.group(1), names)
    if not who:
        return None
    return Gathering(kind="candidacy", what=f"running for {match.group(2).lower()}", host=who)


# news that is no gathering: a subject, something under way, and a time ahead ('I am opening a
# bakery on Main Street next month', 'Pip Harbor is getting married in the spring'); the time
# ahead is what tells news from a state ('I am preparing for a science fair')
_AHEAD = re.compile(r"\b(?:next (?:week|weekend|month|year|spring|summer|autumn|fall|winter|season)|"
                    r"this (?:week|weekend|month|year|spring|summer|autumn|fall|winter)|later this (?:week|month|year)|"
                    r"soon|tomorrow|in (?:the )?(?:spring|summer|autumn|fall|winter)|"
                    r"in (?:a|one|two|three|four|five|six|a few|\d+) (?:days?|weeks?|months?|years?)|"
                    rf"in (?:{'|'.join(MONTHS)}))\b", re.IGNORECASE)
_NEWS = re.compile(rf"(\bI(?: am|'m)|{_NAME} is)\s+([a-z]+ing\b[^.!?;]*)")
# what one is doing, not news of one's life ('I am going to the cafe tomorrow')
_NOT_NEWS = {"going", "heading", "walking", "working", "thinking", "wondering", "feeling", "looking", "trying",
             "hoping", "doing", "sleeping", "eating", "having", "waiting", "staying", "reading", "talking",
             "coming", "meeting", "visiting", "seeing"}
_ROUTINE = re.compile(r"^getting (?:ready|up|dressed|some|lunch|dinner|breakfast|coffee)", re.IGNORECASE)
# SmolLM2's Clara Novak: 'I'm planning to meet you soon', passed on by Tom Alvarez to Kenji Mori as
# 'Clara Novak is planning to meet you soon' (society bench seed 1, 2026-11-28)
_TO_YOU = re.compile(r"\b(?:you|your|yours|yourself|you're|you'll|you've)\b", re.IGNORECASE)
_NOT_NAMES = {"There", "It", "This", "That", "He", "She", "What", "Who", "Everyone", "Nobody", "Someone"}


def find_news(text: str, speaker: str, names: list[str]) -> Gathering | None:
    """'I am opening a bakery on Main Street next month' / 'Pip Harbor is opening a bakery ...'
    as a piece of news (kind 'news', ``what`` its predicate, ``host`` whose news it is): a notion
    with no place or time, passed on as the fact like a candidacy."""
    for match in _NEWS.finditer(text):
        phrase = re.split(r",\s*(?:and|but|so)\b|\s+(?:and|but|so) (?:I|we)\b", match.group(2))[0].strip(" ,")
        if phrase.split()[0].lower() in _NOT_NEWS or _ROUTINE.match(phrase) or not _AHEAD.search(phrase):
            continue
        if _TO_YOU.search(phrase):  # about the one spoken to: passed on, 'you' is someone else
            continue
        subject = match.group(1)
        if subject.startswith("I") and subject[1:2] in (" ", "'"):
            who = speaker
        else:
            said = subject.removesuffix(" is")
            who = resolve_name(said, names) if said.split()[0] not in _NOT_NAMES else ""
            who = who if who in names or len(who.split()) == 2 else ""  # a name, not 'Grace' unknown
        if who:
            return Gathering(kind="news", what=" ".join(phrase.split()[:16]).rstrip(".,"), host=who)
    return None


def resolve_name(word: str, names: list[str]) -> str:
    """A full resident name for 'Maria' or 'Maria Alvarez' when exactly one known name fits,
    else the words as said (a name the hearer does not know is still a name)."""
    word = word.strip()
    if word in names:
        return word
    fits = [n for n in names if n.split()[0] == word.split()[0] and (len(word.split()) == 1 or n == word)]
    return fits[0] if len(fits) == 1 else word


def find_host(text: str, speaker: str, names: list[str]) -> str:
    """Who holds it: 'I am planning a ...' (the speaker), 'Maria is hosting a ...'. A possessive
    is not read as the host ("Arthur's funeral" is not held by Arthur)."""
    if re.search(rf"\b(?:I(?: am|'m| will be)?|we(?: are|'re)?)\s+{_HOSTING}\s+{_ARTICLE}\b", text, re.IGNORECASE):
        return speaker
    match = re.search(rf"({_NAME})\s+(?:is|will be)\s+{_HOSTING}\s+{_ARTICLE}\b", text)
    if match and match.group(1).split()[0] not in ("There", "It", "This", "That", "The"):
        return resolve_name(match.group(1), names)
    return ""


def find_invitees(text: str, speaker: str, listener: str, names: list[str]) -> list[str]:
    """Who is invited: 'everyone', names after 'invite', or the listener addressed ('you are invited',
    'would you like to come')."""
    lower = text.lower()
    if re.search(r"\binvite (?:everyone|everybody|all)\b|\b(?:everyone|everybody|anyone|anybody|all) (?:is |are )?"
                 r"(?:welcome|invited)\b|\b(?:anyone|anybody|everyone|everybody) (?:can|may|could) (?:join|come)\b|"
                 r"\bopen to (?:all|everyone|the public)\b", lower):
        return ["everyone"]
    found: list[str] = []
    match = re.search(r"\binvit(?:e|ing)\s+(.+?)(?:[.!?]|$)", text)
    if match:
        found = [n for n in names if re.search(rf"\b{re.escape(n.split()[0])}\b", match.group(1))]
    if listener and re.search(r"\byou(?:'re| are)? (?:invited|welcome)\b|\blike to come\b|\bcome along\b|\bjoin (?:me|us)\b",
                              lower):
        found.append(listener)
    return list(dict.fromkeys(n for n in found if n != speaker))


_PERSON = re.compile(r"\b([A-Z][a-z'-]+ [A-Z][a-z'-]+)(?:'s)?\s+(?:is|was|has|had|told|wants|works|runs|said|will|"
                     r"invited|knows|lives|owns|asked)\b")


def people_named(text: str, places: dict[str, list[str]], exclude: tuple[str, ...] = ()) -> list[str]:
    """Full names of people a line tells something about ('Priya Shah is ...', 'Lucy Alvarez told
    me'): a name followed by what they are or did; a town place ('Willow Cafe is ...') is no one."""
    place_words = {s.lower() for s in places} | {a.lower() for arenas in places.values() for a in arenas}
    found = []
    for match in _PERSON.finditer(_clean(text)):
        name = match.group(1)
        lower = name.lower()
        if name in exclude or lower in place_words or any(lower in p or p in lower for p in place_words):
            continue
        if name.split()[0] in ("The", "There", "This", "That", "Also", "Did", "Hi", "Oh", "Good", "Well"):
            continue
        found.append(name)
    return list(dict.fromkeys(found))


# -- the town ------------------------------------------------------------------------------------


def town_places(addresses: list[str]) -> dict[str, list[str]]:
    """{sector: [arena, ...]} from every 'sector:arena:object' address of the town."""
    out: dict[str, list[str]] = {}
    for address in addresses:
        parts = address.split(":")
        arenas = out.setdefault(parts[0], [])
        if len(parts) > 1 and parts[1] not in arenas:
            arenas.append(parts[1])
    return out


def venue(sector: str, arenas: list[str], named: str = "") -> str:
    """The 'sector:arena' a gathering is held in: the arena named, else the sector's most
    public room (a cafe's dining room, the town hall's chamber), never its kitchen or office."""
    if named:
        return f"{sector}:{named}"
    others = [a for a in arenas if not any(w in a.lower() for w in _PRIVATE_ROOM)]
    public = sorted((min(i for i, w in enumerate(_PUBLIC_ROOM) if w in a.lower()), n, a) for n, a in enumerate(others)
                    if any(w in a.lower() for w in _PUBLIC_ROOM))
    chosen = (public[0][2] if public else "") or (others or arenas or [""])[0]
    return f"{sector}:{chosen}" if chosen else sector


def buildings_named(lower: str, places: dict[str, list[str]]) -> list[str]:
    """The town's buildings a (lower-case) text names, longest names first, a name inside a longer
    one named there not counted again ('Elm' in 'Elm Apartments')."""
    taken: list[tuple[int, int]] = []
    named = []
    for sector in sorted(places, key=len, reverse=True):
        for match in re.finditer(rf"\b{re.escape(sector.lower())}\b", lower):
            if not any(a <= match.start() and match.end() <= b for a, b in taken):
                taken.append(match.span())
                if sector not in named:
                    named.append(sector)
    return named


def find_place(text: str, places: dict[str, list[str]], kind: str = "") -> tuple[str, str]:
    """(address, problem): the town place the text names, resolved to 'sector:arena'; a
    capitalised place after 'at'/'in' that is no place of the town is the problem. Of several
    buildings named, the one the gathering's noun (``kind``) is said at ('the meeting at Town
    Hall; the bus leaves from Willow Park'); more than one so, or none, is not guessed."""
    lower = text.lower()
    named = buildings_named(lower, places)
    if len(named) > 1:
        # SmolLM2's 'the Valentine's Day Party at Willow Cafe tonight ... meet me on a Valentine Day
        # Party at the Willowbrook College library' made a second party at the library (seed 1)
        at = {b for b in named if kind and re.search(
            rf"\b{re.escape(kind)}(?:es|s)?\s+(?:(?:is|are|will be)\s+)?(?:at|in)\s+(?:the\s+)?{re.escape(b.lower())}\b",
            lower)}
        if len(at) != 1:
            return "", f"names more than one place ({' and '.join(named)}): which one is not clear"
        named = sorted(at)
    if named:
        sector = named[0]
        after = lower[lower.find(sector.lower()):][:60]
        room = next((a for a in places[sector] if re.search(rf"\b{re.escape(a.lower())}\b", after)), "")
        return venue(sector, places[sector], room), ""
    for match in re.finditer(r"\b(?:at|in)\s+the\s+([a-z][\w'-]*)(?:\s+([a-z][\w'-]*))?", lower):
        first, second = match.group(1), match.group(2) or ""
        for said in ([f"{first} {second}"] if second else []) + [first]:
            if said.split()[-1] in _STOP:
                continue
            fits = [s for s in places if s.lower().endswith(said) or said in s.lower().split()]
            if len(fits) == 1:
                return venue(fits[0], places[fits[0]]), ""
            rooms = [(s, a) for s in places for a in places[s] if a.lower() == said]
            if len(rooms) == 1:
                return venue(rooms[0][0], places[rooms[0][0]], rooms[0][1]), ""
    for match in _NAMED_PLACE.finditer(text):
        name = match.group(1)
        first = name.split()[0]
        if first in ("I", "Feb", "February", "Saturday") or first.lower() in WEEKDAYS + MONTHS:
            continue
        return "", f"unknown place {name!r} (not a place of this town)"
    return "", ""


# -- the clock -----------------------------------------------------------------------------------


def _hour(hour: int, minute: int, suffix: str, part: str) -> tuple[int, int]:
    """A clock time read as 24-hour: pm/am, else the part of day ('tonight at 8' is 20:00),
    else a small hour (1-7) as the afternoon's."""
    suffix = suffix.lower().replace(".", "")
    if suffix == "pm" and hour < 12:
        hour += 12
    elif suffix == "am" and hour == 12:
        hour = 0
    elif not suffix and hour < 12 and (part in ("afternoon", "evening", "tonight", "night") or 1 <= hour <= 7):
        hour += 12
    return hour, minute


def find_day(text: str, now: datetime) -> tuple[date | None, str]:
    """(day, problem) the text names: 'February 14', '14 Feb', 'today', 'tonight', 'tomorrow',
    'Saturday' (the next one, today included); (None, '') when no day is named."""
    lower = text.lower()
    match = re.search(rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?\b", lower) or \
        re.search(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}", lower)
    if match:
        groups = match.groups()
        month_word, day_word = (groups[0], groups[1]) if not groups[0].isdigit() else (groups[1], groups[0])
        month = next(i for i, m in enumerate(MONTHS, 1) if m.startswith(month_word[:3]))
        try:
            when = date(now.year, month, int(day_word))
        except ValueError:
            return None, f"no such day ({match.group(0)!r})"
        if (now.date() - when).days > 180:  # 'January 5' said in December: next year's
            when = date(now.year + 1, month, int(day_word))
        return when, ""
    if re.search(r"\b(today|tonight|this (?:morning|afternoon|evening))\b", lower):
        return now.date(), ""
    if re.search(r"\btomorrow\b", lower):
        return now.date() + timedelta(days=1), ""
    for i, name in enumerate(WEEKDAYS):
        if re.search(rf"\b{name}\b", lower):
            return now.date() + timedelta(days=(i - now.weekday()) % 7), ""
    return None, ""


def find_hours(text: str) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
    """(start, end) as (hour, minute) from 'from 5pm to 7pm', '17:00-19:00', 'between 5 and 7 pm',
    'at noon', 'at 8', 'tomorrow evening' (the part of day's window)."""
    lower = re.sub(r"\b(?:12 )?noon\b|\bmidday\b", "12pm", text.lower())  # 'from noon to 2pm'
    lower = re.sub(r"\bmidnight\b", "12am", lower)
    part = next((p for p in PARTS if re.search(rf"\b{p}\b", lower)), "")
    span = re.search(rf"\b(?:from|between)?\s*{_CLOCK}\s*(?:-|–|to|until|till|and)\s*{_CLOCK}", lower)
    if span and (span.group(3) or span.group(6) or span.group(2) or span.group(5) or "from" in span.group(0)
                 or "between" in span.group(0)):
        end_suffix = span.group(6) or ""
        start_suffix = span.group(3) or ("" if int(span.group(1)) > int(span.group(4)) else end_suffix)
        start = _hour(int(span.group(1)), int(span.group(2) or 0), start_suffix, part)
        end = _hour(int(span.group(4)), int(span.group(5) or 0), end_suffix, part)
        if start[0] > 23 or end[0] > 24:
            return None, None
        return start, end
    at = re.search(rf"\b(?:at|from|by)\s+{_CLOCK}(?:\s*o'clock)?\b", lower)
    if at and (at.group(2) or at.group(3) or part or int(at.group(1)) <= 12):
        start = _hour(int(at.group(1)), int(at.group(2) or 0), at.group(3) or "", part)
        return (start if start[0] <= 23 else None), None
    if part:
        return (PARTS[part][0], 0), (PARTS[part][1], 0)
    return None, None


def find_times(text: str, now: datetime) -> tuple[datetime | None, datetime | None, str]:
    """(start, end, problem): the day and hours the text names, resolved against ``now``."""
    day, problem = find_day(text, now)
    if problem:
        return None, None, problem
    start_hm, end_hm = find_hours(text)
    if start_hm is None:
        return None, None, ("a day but no time of day" if day else "no time given")
    day = day or now.date()
    start = datetime(day.year, day.month, day.day, *start_hm, tzinfo=now.tzinfo)
    if end_hm is None:
        end = start + timedelta(hours=DEFAULT_HOURS)
    else:
        end = datetime(day.year, day.month, day.day, tzinfo=now.tzinfo) + timedelta(hours=end_hm[0], minutes=end_hm[1])
    if end <= start:
        return start, end, f"it ends ({end:%H:%M}) before it starts ({start:%H:%M})"
    if end <= now:
        return start, end, f"the time is past ({start:%a %d %b %H:%M}-{end:%H:%M} is before {now:%a %d %b %H:%M})"
    return start, end, ""


# -- the whole -----------------------------------------------------------------------------------


def parse_event(text: str, now: datetime, places: dict[str, list[str]], *, speaker: str = "",
                listener: str = "", names: list[str] | None = None) -> Parsed | None:
    """The gathering (or candidacy) ``text`` names, resolved, or why it cannot be one; None when
    it names none. ``speaker`` said or wrote it (the host of 'I am planning a ...'), ``listener``
    heard it (invited by 'would you like to come?'), ``names`` are the residents the reader knows."""
    text = _clean(text)
    names = list(names or [])
    found = find_kind(text)
    if found is None:
        notion = find_candidacy(text, speaker, names) or find_news(text, speaker, names)
        return Parsed(event=notion, what=notion.what) if notion else None
    kind, what = found
    start, end, time_problem = find_times(text, now)
    if time_problem == "no time given":
        # ('I am running for re-election this autumn' names an election, at no time: news)
        notion = find_candidacy(text, speaker, names) or find_news(text, speaker, names)
        if notion:
            return Parsed(event=notion, what=notion.what)
        return None  # a gathering talked about with no time is no announcement ('the meeting went well')
    place, place_problem = find_place(text, places, kind)
    problem = time_problem or place_problem or ("" if place else "no place given")
    if problem:
        return Parsed(problem=problem, what=what)
    host = find_host(text, speaker, names)
    event = Gathering(kind=kind, what=what, host=host, place=place, start=start, end=end,
                      invitees=find_invitees(text, speaker, listener, names))
    return Parsed(event=event, what=what)


def _article(what: str) -> str:
    return "an" if what[:1].lower() in "aeiou" else "a"


def spoken_time(when: datetime) -> str:
    """A time as said aloud: '5pm', '5:30pm', '9am', 'noon' (a line reading '17:00' twice reads
    like a schedule, and the conversation checks refuse it)."""
    if (when.hour, when.minute) == (12, 0):
        return "noon"
    hour = when.hour % 12 or 12
    minutes = f":{when.minute:02d}" if when.minute else ""
    return f"{hour}{minutes}{'am' if when.hour < 12 else 'pm'}"


def refers_to(text: str, event: Gathering) -> bool:
    """Does a line speak of ``event``: its noun ('party', 'concert') or a word of its name
    ('Valentine's', 'mayor')? A model's line passing news on words it its own way (SmolLM2's Tom
    told Ben of Maria's party as 'I'll have a Valentine's Day party tonight at Willow Cafe'): what
    it refers to is taken as the speaker knows it, not re-read from the words."""
    return has_any_word(text, event_words(event))


# words no line speaking of a notion needs: its kind's name, and a time ahead ('next month')
_NOTION_WORDS = {"candidacy", "news", "next", "this", "later", "soon", "tomorrow", "week", "weekend", "month",
                 "year", "season", "spring", "summer", "autumn", "fall", "winter", "days", "weeks", "months", "years"}


def event_words(event: Gathering) -> frozenset[str]:
    """The words a line speaking of ``event`` has one of (:func:`refers_to`): its kind's and its
    name's words of four letters or more, not 'candidacy' (nobody says it); of three letters
    when it has no longer one ('a gig', 'the BBQ'), so that such an event is spoken of too. The
    verb news opens with ('running for mayor', 'opening a bakery ...') counts only when nothing
    else is left: 'I'm running late' passed Eleanor's re-election on (2026-11-27)."""
    words = [w for w in re.findall(r"[a-z']+", f"{event.kind} {event.what}".lower())
             if w not in _STOP and w not in _NOTION_WORDS]
    if event.news and event.what:  # a candidacy or news of a life
        verb = event.what.split()[0].lower()
        words = [w for w in words if w != verb] if any(len(w) > 3 and w != verb for w in words) else words
    return frozenset(w for w in words if len(w) > 3) or frozenset(w for w in words if len(w) == 3)


def describe(event: Gathering) -> str:
    """One plain sentence with everything needed to be there (read back by :func:`parse_event`)."""
    if event.candidacy:
        return f"{event.host} is running for {event.what.removeprefix('running for ')}"
    if event.news:
        return f"{event.host} is {event.what}"
    where = event.place.replace(":", " ")
    when = f"on {event.start:%A} {event.start:%B} {event.start.day} from {spoken_time(event.start)} to " \
        f"{spoken_time(event.end)}" if event.start and event.end else ""
    if event.host:
        head = f"{event.host} is hosting {event.what}"
    elif event.what.startswith("the "):
        head = f"The {event.what[4:]} is"
    else:
        head = f"There is {event.what}"
    return f"{head} at {where} {when}".strip()
