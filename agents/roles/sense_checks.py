"""Checks that a resident's words make sense where and when they are said or done.

The other checks (agents/roles/checks.py) refuse answers that are no answer: a name as a line,
a loop, the instruction copied. These refuse answers that are well-formed and still nonsense
to a reader of the town (issue 30, the embedded model's quickstart morning): a talk about
translating Python code at breakfast when nothing in anyone's life mentions code, Maria making
coffee four times in fifty minutes, toast made in the living room, a bank's emoji for toast, an
object whose "state" is a place's name ('kitchen table is Cafe'), and a talk remembered as a
critic's commentary on it ('Tom Alvarez's message conveys a genuine concern for the topic').

Each check is a pure function returning the problem in words (or None), so a schema's validator
can refuse with it (the gateway retries, then falls back) and agents/believability.py can score a
recorded run with the same words. No model, no embeddings here: the scorer adds the embedding
similarity for the off-topic judgement.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

_WORD = re.compile(r"[a-z][a-z']+")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def stem(word: str) -> str:
    """A crude stem, enough to match 'coding' with 'code' and 'translated' with 'translate'."""
    w = word.lower().strip("'")
    if w.endswith("'s"):
        w = w[:-2]
    for suffix in ("ations", "ation", "ings", "ing", "ies", "ied", "ers", "er", "ed", "es", "s", "ly", "e", "y"):
        if len(w) - len(suffix) >= 3 and w.endswith(suffix):
            w = w[: -len(suffix)]
            break
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiou":
        w = w[:-1]  # 'jogg' (jogging) is 'jog' (jogs)
    return w


# ---------------------------------------------------------------------------------------------
# A line on the topic of the people, the place and the moment
# ---------------------------------------------------------------------------------------------

# Words of ordinary talk between neighbours and family: greetings, feelings, the day, the home,
# food, work and town life. A line made of these (and of the speakers' own words) is small talk,
# never off topic; a line whose other words nobody's life mentions is ('translate the code').
EVERYDAY = frozenset(stem(w) for w in """
    about after again ago all almost already also always another anyone anything around away back bad
    bit busy came can't come coming could couldn't day days dear did didn't does doesn't doing done
    don't down during each early else enough even evening ever every everyone everything fine first
    for from get getting give glad going gone good got great guess had hard have having hear heard
    hello help here hey home hope how i'd i'll i'm i've idea isn't it's just keep kind know last late
    later let let's lately like little long look looking lot lots love made make making many maybe
    mean meet morning much must need never new next nice night nothing now off okay once only other
    our out over own part people place plan plans pretty probably put quite rather ready really right
    said same say see seen should since some someone something soon sorry sound sounds still sure take
    talk talking tell than thank thanks that's then there's these thing things think this those though
    thought through time today told tomorrow tonight too took try trying want wanted way we'll we're
    week weekend well went what's while who's why will wish with without won't wonder wonderful work
    working would wouldn't yeah year years yes yesterday yet you'd you'll you're you've
    afternoon breakfast lunch dinner supper coffee tea food eat eating hungry meal cook cooking toast
    eggs bread cereal sleep slept tired rest bed awake wake woke weather rain sunny cold warm hot
    family husband wife mother father mom mum dad daughter son brother sister friend friends neighbour
    neighbor kids children child parents house room kitchen garden town shop cafe school college
    class classes study studying homework job shift office busy day's feel feeling felt happy sad
    worried worry excited nervous fun lovely beautiful weather news heard hear story funny laugh
    shared share details detail confused sure mind question questions answer problem problems reason
    matter word words talked chat chatting listen listening care careful careful walk walking run
    exam exams test tests game music book books read reading film movie watch tv phone call called
    birthday party weekend holiday trip visit visiting dinner together alone quiet noisy early late
    old young money pay paid price cheap expensive buy bought sell new open closed busy quiet
""".split())

_STOP = frozenset(
    "a an the is are was were be been being to of in on at and or for with by it its this that i me my you "
    "your he she his her they them their we our as from about into than then so do does did has have had "
    "will would can could just not no yes what who when where how some there here all very also am if but "
    "up".split()
)


def topical_words(text: str, names: Iterable[str] = ()) -> list[str]:
    """The words of a line that carry a topic: not stop words, not everyday talk, not names."""
    named = {stem(w) for name in names for w in _words(name)}
    out = []
    for w in _words(text):
        s = stem(w)
        if len(w) > 3 and w not in _STOP and s not in EVERYDAY and s not in named:
            out.append(w)
    return list(dict.fromkeys(out))


def grounded_stems(texts: Iterable[str]) -> set[str]:
    """The stems of every word in what grounds a talk (personas, memories, the place, the lines)."""
    out: set[str] = set()
    for text in texts:
        out |= _stems_of(text)
    return out


@lru_cache(maxsize=50_000)
def _stems_of(text: str) -> frozenset[str]:
    """One text's stems, kept: a day's talks share their speakers' memories."""
    return frozenset(stem(w) for w in _words(text))


OFF_TOPIC_MIN_WORDS = 2  # topical words a line needs before it can be called off topic


def ungrounded_words(line: str, grounding: set[str], names: Iterable[str] = ()) -> list[str]:
    """The topical words of ``line`` that nothing in ``grounding`` (stems) mentions."""
    return [w for w in topical_words(line, names) if stem(w) not in grounding]


def off_topic(line: str, grounding: set[str], names: Iterable[str] = ()) -> str | None:
    """A problem when a line talks of things no one's life, memories or surroundings mention:
    at least two topical words and none of them grounded ('translate the code' at breakfast in a
    town with no programmer). Small talk has no topical words; a line that takes up any word of
    the speakers' lives is on topic. The scorer adds an embedding similarity to this."""
    topical = topical_words(line, names)
    if len(topical) < OFF_TOPIC_MIN_WORDS:
        return None
    missing = [w for w in topical if stem(w) not in grounding]
    if len(missing) == len(topical):
        return f"talks of {', '.join(missing[:3])}: nothing in the speakers' lives or surroundings mentions it"
    return None


# ---------------------------------------------------------------------------------------------
# Activities: the same one again, a meal away from food, an emoji that says something else
# ---------------------------------------------------------------------------------------------

_PLACE_TAIL = re.compile(r"\s+(?:at|in|on)\s+(?:the\s+)?[A-Z].*$")
_ACTIVITY_STOP = frozenset("a an the some my his her their of for and with to at in on up".split())


def activity_key(description: str) -> frozenset[str]:
    """What an activity is, without its place or filler words: 'making coffee at Oak House
    kitchen' and 'make coffee' are one activity."""
    text = _PLACE_TAIL.sub("", description.strip())
    return frozenset(stem(w) for w in _words(text) if w not in _ACTIVITY_STOP)


# the engine's own words between steps: talking, waiting, walking to a place, sleeping
_INTERRUPTION = re.compile(r"^(talking|chatting|waiting|walking|going|heading|sleeping|asleep)\b", re.I)


def is_interruption(description: str) -> bool:
    """An action the engine puts between a resident's steps (a talk, a wait, a walk)."""
    return bool(_INTERRUPTION.match(description.strip()))


def same_activity(a: str, b: str) -> bool:
    """Whether two action descriptions are the same activity (place and filler aside)."""
    ka, kb = activity_key(a), activity_key(b)
    return bool(ka) and ka == kb


# Making food needs a kitchen or a place that serves it; eating needs somewhere one eats.
_PREPARES = re.compile(r"\b(making|make|cooking|cook|baking|bake|frying|fry|toasting|brewing|brew|boiling|"
                       r"preparing|prepare|grilling|roasting|chopping|toast)\b", re.I)
# (a cup of coffee or tea may be made wherever there is a kettle: not judged)
_FOOD = re.compile(r"\b(breakfast|brunch|lunch|dinner|supper|meal|toast|eggs?|porridge|cereal|"
                   r"sandwich(es)?|soup|stew|pancakes?|bread|pasta|rice|snack|food|omelett?e|bacon|pie|cake)\b", re.I)
_EATS = re.compile(r"\b(eat|eating|having|has|drinking|drink|sipping|finishing|enjoying)\b", re.I)
# rooms where food is made (home kitchens, a cafe's or a pub's, a staff room's kettle)
_KITCHEN = re.compile(r"kitchen|cafe|caf\u00e9|pub|bar|bakery|restaurant|canteen|cafeteria|diner|pantry|"
                      r"staff room|break room|stove|oven", re.I)
# rooms where nobody eats a meal
_NO_MEAL = re.compile(r"bath|toilet|shower|classroom|lecture|exam room|ward|vault|teller|council|pharmacy|"
                      r"cellar|storeroom|wardrobe", re.I)


def meal_away_from_food(action: str, place: str) -> str | None:
    """A problem when food is made outside a kitchen ('making toast' in the living room) or a meal
    eaten where nobody eats (breakfast in the bathroom). A place with no room named (a building,
    the street) is not judged: the room is not known; nor is a step that names its room ('make
    breakfast in the kitchen' is taken to the kitchen, agents.minds.cognition.planning.room_named)."""
    if ":" not in place or not _FOOD.search(action) or _KITCHEN.search(action):
        return None  # no room known, no food, or the step names its room ('in the kitchen': taken there)
    room = place.split(":", 1)[1]
    if _PREPARES.search(action) and not _EATS.search(action) and not _KITCHEN.search(room):
        return f"'{action}' is made in the {room}, not a kitchen"
    if _NO_MEAL.search(room):
        return f"'{action}' is eaten in the {room}"
    return None


def food_room(action: str, place: str, places: Iterable[str]) -> str:
    """Where a step that makes or eats food happens: ``place``, unless :func:`meal_away_from_food`
    refuses it there or names no room for making food, then the first room of the same building
    where food is made (the kitchen, a pub's kitchen, a staff room), if it has one. SmolLM2 made
    Hannah's toast in the living room (a step at 'Maple House', done where she stood)."""
    unplaced = ":" not in place and bool(_FOOD.search(action) and _PREPARES.search(action)) \
        and not _EATS.search(action) and not _KITCHEN.search(action)  # 'making toast' at 'Maple House'
    if not unplaced and not meal_away_from_food(action, place):
        return place
    building = place.split(":")[0]
    rooms = [p for p in places if ":" in p and p.split(":")[0] == building and not meal_away_from_food(action, p)]
    rooms.sort(key=lambda p: "kitchen" not in p.lower())
    return rooms[0] if rooms else place


# What each of the engine's emoji means, and the words that call for it.
_EMOJI_KINDS: dict[str, str] = {
    "😴": "sleep", "🍳": "food", "🥪": "food", "🍲": "food", "🥐": "food", "☕": "food", "🍺": "drink",
    "💼": "work", "📖": "reading", "📚": "reading", "🧑\u200d🏫": "teaching", "🚶": "walk", "🎉": "party",
    "🩺": "medical", "🏦": "bank", "🛋": "relax", "🚿": "wash", "🪥": "wash", "💬": "talk", "🛒": "shop",
}
_KIND_WORDS: dict[str, re.Pattern[str]] = {kind: re.compile(rf"\b({words})", re.I) for kind, words in {
    "sleep": r"sleep|nap|bed\b|doz|asleep|rest\b",
    "food": r"breakfast|brunch|lunch|dinner|supper|cook|bak|toast|coffee|tea\b|eat|meal|cereal|snack|sandwich|soup|"
            r"stew|egg|bread|pastr|croissant|fry|kitchen|food|juice|milk|dough|oven|stove|dish|pancake|porridge|"
            r"cafe|serving|kettle|fridge|grocer",
    "drink": r"beer|pint|ale\b|wine|pub\b|bar\b|drink|cider|whisk",
    "work": r"work|office|meeting|shift|job|desk|email|paperwork|report|customer|counter|till\b|council|clinic|"
            r"serv|open|clos|stock|account",
    "reading": r"read(?:s|ing)?\b|book|stud|homework|library|class|lectur|revis|learn|newspaper|essay|notes|research|"
               r"lesson",
    "teaching": r"teach|lectur|class|tutor|lesson|school|college|mark|grad",
    "walk": r"walk|go\b|going|head|stroll|commut|jog|run|leav|return|errand|park|way to",
    "party": r"party|celebrat|birthday|festiv|danc|gather|event|wedding|concert|recital|perform|match|game\b|"
             r"tournament|picnic|fair\b|funeral|memorial|vigil|ceremon|reunion|barbecue|potluck|screening|quiz|"
             r"hosting|attending",
    "medical": r"patient|clinic|doctor|nurs|exam|medic|health|pharm|ward|consult|surgery|prescri",
    "bank": r"bank|deposit|withdraw|loan|teller|money|cash|vault|financ|mortgage|saving|accounts?\b",
    "relax": r"relax|rest\b|sofa|tv\b|television|watch|lounge|unwind|music|radio|living room|armchair|nap",
    "wash": r"wash|shower|bath|teeth|brush|dress|ready|groom|shav|toilet|clean",
    "talk": r"talk|chat|convers|tell|ask|discuss|call|phone|greet|visit|meet|gossip|say",
    "shop": r"shop|buy|grocer|store|market|purchas|stock|shel|till\b|errand",
}.items()}
# kinds that sit well together: a coffee at the pub, reading on the sofa, a chat over dinner
_GO_TOGETHER = {frozenset(p) for p in [
    ("food", "drink"), ("reading", "teaching"), ("reading", "relax"), ("relax", "talk"), ("party", "food"),
    ("party", "drink"), ("party", "talk"), ("medical", "work"), ("bank", "work"), ("shop", "food"),
    ("shop", "work"), ("teaching", "work"), ("reading", "work"), ("food", "talk"), ("drink", "talk"),
    ("relax", "sleep"), ("walk", "relax"), ("talk", "work"), ("food", "work"),
]}


def emoji_kind(emoji: str) -> str | None:
    """What one of the engine's emoji stands for (None for the smile and any other)."""
    return _EMOJI_KINDS.get(emoji.replace("\ufe0f", "").strip())


def activity_kinds(text: str) -> set[str]:
    """The kinds of activity a description's words name (sleep, food, bank, ...)."""
    return {kind for kind, pattern in _KIND_WORDS.items() if pattern.search(text)}


def emoji_contradicts(emoji: str, activity: str, place: str = "") -> str | None:
    """A problem when an activity's emoji stands for something else: a bank's 🏦 for 'making
    toast' in the living room, a sleeper's 😴 for breakfast. An activity whose words name no kind,
    and an emoji the engine does not know, are not judged; a place may call for the emoji too
    (🏦 for 'serving customers' at the bank)."""
    kind = emoji_kind(emoji)
    doing = activity_kinds(_PLACE_TAIL.sub("", activity))
    if kind is None or not doing or kind in doing:
        return None
    if kind in activity_kinds(place) or any(frozenset((kind, d)) in _GO_TOGETHER for d in doing):
        return None
    if kind == "work" and not doing & {"sleep", "wash", "food"}:
        return None  # a briefcase suits most of a working day
    return f"{emoji} ({kind}) does not fit '{activity}'"


# ---------------------------------------------------------------------------------------------
# An object's state
# ---------------------------------------------------------------------------------------------

# words that say how a thing is: on, off, open, full of books, in use, being used for breakfast
_STATE_WORDS = frozenset("""
    on off open opened closed shut clean dirty empty full idle busy hot cold warm cool lit unlit ready broken
    clear cleared stocked tidy messy untidy set occupied free used unused wet dry locked unlocked running
    stopped unplugged plugged loud quiet silent crowded vacant made unmade ringing playing boiling brewing
    burning cooking baking heating cooling charging dripping leaking flickering humming whistling steaming
    being use mess half blank fresh stale sticky dusty spotless packed sorted stacked switched turned
    covered filled laid done finished waiting working out low high new old fixed jammed stuck sleeping
    reserved booked available stale ajar spilled spilt
""".split())
_NOT_VERBS = frozenset("existing morning evening building ceiling something nothing anything everything thing "
                       "ring king spring string wing sibling pudding stuffing during".split())


def _says_how(word: str) -> bool:
    return word in _STATE_WORDS or (word not in _NOT_VERBS and len(word) > 4 and word.endswith(("ing", "ed")))


def no_state(state: str, places: Iterable[str] = ()) -> str | None:
    """A problem when an object's new state says nothing of how it is: a place's name ('Cafe',
    'Kitchen'), a label ('Existing role in a workday', SmolLM2's kitchen table, issue 30), or no
    words. A state has a word of state ('off', 'full of books', 'being used for breakfast',
    'brewing coffee'); the town's place names are passed in ``places`` to name the mistake."""
    found = _words(state)
    if not found:
        return "is no words, not a state"
    bare = " ".join(found)
    for place in places:
        if bare and bare in {" ".join(_words(part)) for part in place.split(":") if part}:
            return f"is the name of a place ('{state}'), not a state"
    if not any(_says_how(w) for w in found):
        return f"'{state}' says nothing of how the object is"
    return None


# ---------------------------------------------------------------------------------------------
# A talk's memory
# ---------------------------------------------------------------------------------------------

_ABOUT_THE_TEXT = re.compile(
    r"\b(?:(?:the|this|that|his|her|their|my) |[a-z]+'s )(?:message|messages|response|reply|statement|text|passage|"
    r"utterance|tone|remark|remarks|dialogue|exchange|conversation|words|line)\b[^.;]{0,60}?\b(?:conveys?|conveyed|"
    r"reflects?|reflected|demonstrates?|demonstrated|highlights?|highlighted|suggests?|indicates?|expresses?|"
    r"expressed|implies|reveals?|captures?|portrays?|showcases?|emphasi[sz]es?|illustrates?|exhibits?)\b",
    re.I,
)
_CRITIC = re.compile(
    r"\b(?:[a-z]+'s (?:point of view|perspective|message|response|tone) (?:is|was|to)\b|in this conversation\b|"
    r"the (?:speaker|user|author|narrator|assistant|topic at hand)|for the topic|offering guidance|"
    r"how to implement|a specific functionality|the overall tone|in this (?:dialogue|exchange|passage|text)|"
    r"the (?:conversation|dialogue) (?:revolves|centers|centres|focuses)|genuine (?:concern|interest) (?:for|in) the)\b",
    re.I,
)


def commentary(text: str) -> str | None:
    """A problem when a talk's memory comments on the talk instead of keeping what was said:
    "Tom Alvarez's message conveys a genuine concern for the topic, offering guidance on how to
    implement a specific functionality" (SmolLM2, issue 30) reads as a critic's note on a text."""
    if _ABOUT_THE_TEXT.search(text) or _CRITIC.search(text):
        return "comments on the talk instead of saying what was said"
    return None


# ---------------------------------------------------------------------------------------------
# A line that is no line a person says
# ---------------------------------------------------------------------------------------------

# a chatbot's talk about the talk itself: 'I am going to leave the conversation', 'I am not sure if
# I should continue the conversation', 'I am not in the mood for a conversation' (SmolLM2's
# quickstart breakfast, 2026-11-27); a closing 'thanks for the chat' is not this
_ABOUT_THE_TALK = re.compile(
    r"\b(?:continue|leave|end|exit|quit|stop|resume|restart)\b[^.!?]{0,20}\b(?:the|this|our) conversation\b|"
    r"\b(?:in the mood for|trying to have|want to have|going to have) a conversation\b",
    re.I,
)
_FIRST_PERSON_CLAUSE = re.compile(r"\b(?:I am|I'm|I will|I'll|I would|I'd|I can't|I cannot)\b")
RAMBLE_CLAUSES = 4  # first-person clauses in one line ('I am trying, and I am trying again, and I will ...')
RAMBLE_REPEATS = 3  # times one run of three words comes back in one line


def nonsense_line(text: str, names: Iterable[str] = ()) -> str | None:
    """A problem when a talk's line is no line a person says: only names, talk about the
    conversation as a thing, or a ramble that goes round one clause ('I am trying, and I am trying
    again, and I will continue, and I would like to share what I am going to share'). Small talk
    passes."""
    rest = text
    for name in sorted(names, key=len, reverse=True):
        rest = rest.replace(name, " ")
    if not _WORD.search(rest.lower()):
        return "says only a name" if rest != text else "says no words"
    if _ABOUT_THE_TALK.search(text):
        return "talks about the conversation instead of having it"
    if len(_FIRST_PERSON_CLAUSE.findall(text)) >= RAMBLE_CLAUSES:
        return "rambles (one first-person clause after another)"
    words = _WORD.findall(text.lower())
    runs = [" ".join(words[i:i + 3]) for i in range(len(words) - 2)]
    if runs and max(runs.count(r) for r in set(runs)) >= RAMBLE_REPEATS:
        return "rambles (says the same words again and again)"
    return None
