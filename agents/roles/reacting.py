"""Reacting to what was just perceived: carry on, do something else, or talk to someone.

Purpose: ``react``. Talk partners and places are enumerations (only residents in view, only
known places), so the answer is always actionable. The scripted answer (at the end) reacts to
a fire or an announcement, talks to someone it has news for or at a gathering, else carries on.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, ClassVar

from pydantic import BaseModel, Field, model_validator

from agents.llm.schemas import WORDS_ONLY
from agents.llm.task import Prompt, Task
from agents.roles.checks import copied_from, fits_place, goes_out_of_time, names_another_day, names_another_place
from agents.roles.common import Patched, require_action, bullet, choice_type, facts, first_line, make_model, messages
from agents.roles.planning import DEFAULT_EMOJI, EMOJI_HINT, emoji_for, pick_place

NOBODY = "nobody"
ACTION_MAX = 120  # a few words (the engine adds a reason), and a bounded decode for a small model


class ReactionAnswer(Patched):
    """A reaction whose action is no activity ('Lucy Alvarez', 'nope', a digit list), cannot
    happen at its place (sleeping at the bank), names another place than its own ('going to
    Willow Cafe' at home), is a plan for another day ('visiting Lucy on Saturday') or sets off
    to a gathering that is not on is patched to carrying on, and counted: the
    model's choice to react stands refused, the resident keeps to its plan."""

    decision: str  # the fields of the schema, in its order (the grammar writes them so)
    talk_to: str = NOBODY
    action: str = ""
    place: str = ""
    not_now: ClassVar[tuple[tuple[str, tuple[str, ...]], ...]] = ()  # (venue, words) of gatherings not on now

    @model_validator(mode="after")
    def _carry_on_unless_an_activity(self) -> "ReactionAnswer":
        if self.decision != "react":
            return self
        try:
            require_action(self.action)
            problem = (fits_place(self.action, self.place) or names_another_place(self.action, self.place)
                       or copied_from(self.action, REACT_WORDS, run=4) or names_another_day(self.action)
                       or goes_out_of_time(self.action, self.place, self.not_now))
        except ValueError as exc:
            problem = str(exc)
        if problem:
            self.decision, self.action = "continue", ""
            self._patches = [f"action {problem}"]
        return self


# The fixed words of the reaction prompt: an action that copies four of them in a row ('picking one
# of the people here (and last talk: never)', SmolLM2 2026-11-25) is the prompt said back.
REACT_WORDS = ("People here (and last talk): Should continue, react by doing something else (give the action, "
               "place and minutes), or talk to one of the people here? Only react or talk when it matters.")


def talk_partner(answer: Any, people: list[str], observed: Sequence[str] = ()) -> str | None:
    """Whom the resident starts talking to, if anyone: the person the model named, when it chose
    to talk or to carry on (chatting over breakfast is carrying on). A reaction with its own
    action keeps that action. SmolLM2, shown the family at breakfast, named Lucy in 8 of 8
    answers but chose 'react' with the action 'not today' (refused, so carrying on): with only
    'talk' opening a conversation, the quickstart's four residents never spoke in two hours."""
    partner = answer.talk_to
    if answer.decision == "talk" and (partner == NOBODY or partner not in people):
        # 'talk' to 'nobody' (SmolLM2 at 07:00, the family in view, quickstart 2026-11-26): the
        # first of the people here that the observations name (they are in the order seen)
        seen = [n for text in observed for n in people if n in text]
        return seen[0] if seen else None
    if partner == NOBODY or partner not in people:
        return None
    return partner if answer.decision in ("talk", "continue") else None


def reaction_places(places: list[str], here: str, home: str, work: str, observed: list[str]) -> list[str]:
    """Where a reaction may take a resident: here, home, the workplace, or a place named in what
    was just observed (an invitation to the cafe, a fire at the bank). With the whole town to
    choose from, SmolLM2 sent a doctor to the pub cellar at 07:00 to 'move'."""
    buildings = {home.split(":")[0], work.split(":")[0]}
    seen = " ".join(observed).lower()
    keep = [p for p in places
            if p == here or p.split(":")[0] in buildings or p.split(":")[0].lower() in seen]
    return keep or list(places)


def reaction_schema(people: tuple[str, ...], places: tuple[str, ...],
                    not_now: tuple[tuple[str, tuple[str, ...]], ...] = ()) -> type[BaseModel]:
    """``not_now``: (venue building, words) of the gatherings the resident knows whose time it is not
    (cognition.gatherings.not_now_words): a reaction setting off to one is refused. One class
    per (people, places, not_now), however it is called (the fallback must be an instance)."""
    return _reaction_schema(tuple(people), tuple(places), tuple(not_now))


@lru_cache(maxsize=512)
def _reaction_schema(people: tuple[str, ...], places: tuple[str, ...],
                     not_now: tuple[tuple[str, tuple[str, ...]], ...]) -> type[BaseModel]:
    model = make_model(
        "Reaction",
        __base__=ReactionAnswer,
        decision=(choice_type(("continue", "react", "talk")), Field(description="what to do now")),
        talk_to=(choice_type(people + (NOBODY,)), Field(default=NOBODY)),
        action=(str, Field(default="", max_length=ACTION_MAX, description="the new action when reacting",
                           json_schema_extra=WORDS_ONLY)),
        place=(choice_type(places), Field(description="where the new action happens")),
        minutes=(int, Field(default=15, ge=5, le=60)),
        emoji=(str, Field(default=DEFAULT_EMOJI, max_length=8, json_schema_extra=EMOJI_HINT)),
    )
    model.not_now = tuple(not_now)
    return model


def reaction_fallback(people: tuple[str, ...], places: tuple[str, ...], here: str,
                      not_now: tuple[tuple[str, tuple[str, ...]], ...] = ()) -> BaseModel:
    """The typed fallback of ``react``: carry on, here (or the first known place)."""
    schema = reaction_schema(people, places, not_now)
    return schema.model_validate(
        {"decision": "continue", "talk_to": NOBODY, "action": "", "place": here if here in places else places[0],
         "minutes": 15, "emoji": DEFAULT_EMOJI}
    )


def react_prompt(
    summary: str, name: str, time: str, current: str, place: str, observed: list[str],
    memories: list[str], people: list[str], places: list[str], home: str, work: str,
    news_for: list[str] | None = None, gathering: str = "",
) -> Prompt:
    """``news_for``: the people here who have not heard of a gathering {name} knows of (someone to
    invite or to tell: a reason to talk); ``gathering``: the one {name} is at now (people come to
    one to talk)."""
    user = "\n".join(
        [
            summary,
            facts(name=name, home=home, workplace=work),
            "Known places:",
            bullet(places),
            "",
            facts(time=time, current_action=current, current_place=place),
            "Just observed:",
            bullet(observed),
            "Relevant memories:",
            bullet(memories),
            "People here (and last talk):",
            bullet(people, "nobody"),
            facts(has_news_for=", ".join(news_for or []), at_a_gathering=gathering),
            "",
            f"Should {name} continue ({current}), react by doing something else (give the action, "
            f"place and minutes), or talk to one of the people here? Only react or talk when it "
            f"matters to {name}.",
        ]
    )
    task = Task({"observed": tuple(observed), "people": tuple(people), "places": tuple(places), "home": home, "work": work,
                 "place": place, "news_for": tuple(news_for or ()), "gathering": gathering}, scripted_reaction)
    return Prompt(messages(user), task)


def _least_recent(people: list[str]) -> str:
    """The person here talked to longest ago ('Tom Alvarez (last talk: never)' first)."""
    def ago(line: str) -> float:
        if "never" in line:
            return 1e9
        number = re.search(r"(\d+) (hours|min)", line)
        return float(number.group(1)) * (60 if number.group(2) == "hours" else 1) if number else 0.0
    return max(people, key=ago).split(" (")[0]


def scripted_reaction(fields: Mapping[str, Any], schema: type[BaseModel], rng: random.Random) -> dict[str, Any]:
    """The scripted backend's reaction: deal with a fire, go where an announcement calls, talk to
    someone with news to tell or at a gathering, sometimes greet a stranger; else continue."""
    observed = [o.strip() for o in fields["observed"]]
    # as the prompt lists them: an empty list is one placeholder line ('nobody', '(none)')
    people = [p.strip() for p in fields["people"]] or [NOBODY]
    places = [p.strip() for p in fields["places"]] or ["(none)"]
    home, work = fields["home"].strip(), fields["work"].strip()
    here = first_line(fields["place"]) or places[0]
    answer: dict[str, Any] = {
        "decision": "continue", "talk_to": NOBODY, "action": "", "place": here if here in places else places[0],
        "minutes": 15, "emoji": "🙂",
    }
    for line in observed:
        lower = line.lower()
        place = pick_place(line, places, home, work)
        if "fire" in lower or "burning" in lower:
            answer.update(decision="react", action=f"rushing to deal with it: {line[:80]}", place=place,
                          minutes=15, emoji="🧯")
            return answer
        if ("announcement" in lower or "thought" in lower) and any(w in lower for w in ("go to", "should", "come to")):
            answer.update(decision="react", action=f"heading over because {line.split(':', 1)[-1].strip()[:80]}",
                          place=place, minutes=30, emoji=emoji_for(line))
            return answer
    news_for = [n.strip() for n in fields["news_for"] if n.strip()]
    if news_for:  # someone here to invite or to tell: talk to them
        answer.update(decision="talk", talk_to=news_for[0])
        return answer
    if first_line(fields["gathering"]) and people and rng.random() < 0.8:
        # at a party, a meeting, a match: people are there to talk (the least recently talked to first)
        answer.update(decision="talk", talk_to=_least_recent(people))
        return answer
    strangers = [p for p in people if "never" in p or "hours ago" in p]
    if strangers and rng.random() < 0.6:
        answer.update(decision="talk", talk_to=strangers[0].split(" (")[0])
    return answer
