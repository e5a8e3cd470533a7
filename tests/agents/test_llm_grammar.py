"""Schema -> GBNF: the shapes our prompts use, and real decoding under them.

The decoding test runs the smallest embedded model (SmolLM2 135M loads in well under a
second) at temperature 1.0 and parse its output *strictly* (no repair): whatever the
model wants to say, the grammar must make it schema-valid.
"""

from __future__ import annotations

import json
from typing import Annotated, Literal, Optional

import pytest
from pydantic import BaseModel, Field

from agents.llm.grammar import DEFAULT_MAX_ITEMS, DEFAULT_MAX_STRING, grammar_for, schema_to_gbnf
from agents.llm.schemas import ONE_OF, PLAIN_WORDS, WORDS_ONLY


Word = Annotated[str, Field(max_length=16)]


class Step(BaseModel):
    action: str = Field(max_length=40)
    minutes: int = Field(ge=5, le=15)
    place: Literal["Hobbs Cafe", "Johnson Park", "home"]


class Decomposition(BaseModel):
    steps: list[Step] = Field(min_length=1, max_length=3)


class Mixed(BaseModel):
    react: bool
    talk_to: Literal["Klaus", "Maria", "nobody"] = "nobody"
    score: int = Field(ge=-10, le=0)
    ratings: list[int] = Field(max_length=6)
    mood: float = Field(ge=0, le=1)
    event: tuple[Word, Word, Word]
    note: Optional[str] = Field(default=None, max_length=30)


class Free(BaseModel):
    text: str


def rules(gbnf: str) -> dict[str, str]:
    return dict(line.split(" ::= ", 1) for line in gbnf.strip().splitlines())


def test_enum_bounded_int_and_property_order() -> None:
    g = rules(grammar_for(Step))
    assert g["root"].index('"\\"action\\""') < g["root"].index('"\\"minutes\\""') < g["root"].index('"\\"place\\""')
    minutes = g["root-minutes"]
    assert [f'"{n}"' for n in range(5, 16)] == [p.strip(" ()") for p in minutes.split("|")]
    assert g["root-place"] == '"\\"Hobbs Cafe\\"" | "\\"Johnson Park\\"" | "\\"home\\""'
    assert "char{0,40}" in g["root-action"]


def test_arrays_keep_their_bounds_and_unbounded_lists_get_a_generous_cap() -> None:
    g = rules(grammar_for(Decomposition))
    assert "{0,2}" in g["root-steps"]  # 1..3 items: one, then up to two more
    assert "ref-Step" in g["root-steps"] and '"\\"Hobbs Cafe\\""' in g["ref-Step-body-place"]
    m = rules(grammar_for(Mixed))
    assert m["root-ratings"].endswith('{0,5})? "]"')

    class Batch(BaseModel):
        ratings: list[int]

    assert rules(grammar_for(Batch))["root-ratings"].endswith(f'{{0,{DEFAULT_MAX_ITEMS - 1}}})? "]"')


def test_negative_ranges_tuples_and_nullable() -> None:
    g = rules(grammar_for(Mixed))
    assert '"-10"' in g["root-score"] and '"0"' in g["root-score"]
    assert g["root-event"].count("root-event-") == 3 and "char{0,16}" in g["root-event-0"]
    assert "null" in g["root-note"]
    # Free text without a bound gets the default cap, so a small model cannot ramble forever.
    assert f"char{{0,{DEFAULT_MAX_STRING}}}" in rules(grammar_for(Free))["string"]


def test_grammar_is_memoised_and_independent_of_key_order() -> None:
    assert grammar_for(Step) is grammar_for(Step)
    assert schema_to_gbnf(Step.model_json_schema()) == grammar_for(Step)


# -- real decoding ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def smollm2():
    pytest.importorskip("llama_cpp")
    from agents.llm.local import generate_local
    from agents.llm.models import LocalModelError

    try:
        generate_local("smollm2", [{"role": "user", "content": "hi"}], grammar=None,
                       temperature=0.0, max_tokens=1, seed=0)
    except LocalModelError as exc:
        pytest.skip(f"embedded model not installed: {exc}")
    return generate_local


@pytest.mark.slow
def test_decoding_under_the_grammar_is_always_schema_valid(smollm2) -> None:
    messages = [
        {"role": "system", "content": "You write JSON for a town simulation."},
        {"role": "user", "content": "Isabella is at Hobbs Cafe. Describe what she does next."},
    ]
    for schema in (Step, Decomposition, Mixed):
        text, prompt_tokens, completion_tokens = smollm2(
            "smollm2", messages, grammar=grammar_for(schema), temperature=0.9, max_tokens=300, seed=3
        )
        schema.model_validate_json(text)  # strict: no repair
        assert prompt_tokens > 10 and 0 < completion_tokens <= 300


def test_base_model_prompt_reads_as_worked_examples_ending_on_an_open_output() -> None:
    from agents.llm.local import completion_prompt

    text = completion_prompt([
        {"role": "system", "content": "Answer in JSON."},
        {"role": "user", "content": "Rate: brushing teeth"},
        {"role": "assistant", "content": '{"importance": 1}'},
        {"role": "user", "content": "Rate: the cafe burned down"},
    ])
    assert text.startswith("Answer in JSON.")
    assert text.index("### Input:\nRate: brushing teeth") < text.index('### Output:\n{"importance": 1}')
    assert text.endswith("### Input:\nRate: the cafe burned down\n\n### Output:\n")


class Planned(BaseModel):
    parts: list[Annotated[str, Field(max_length=60, json_schema_extra={"x-first-char": "[a-zA-Z]"})]] = Field(
        min_length=3, max_length=3)


def test_an_activity_starts_with_a_letter_in_the_grammar_only() -> None:
    """Most of SmolLM2's refused plan parts and steps were a time, a date or JSON ('7:00', '2020-02-06
    12:32:32', '{'): under the grammar an activity's first character is a letter. The hint stays out
    of the schema servers, prompts and cache keys see, and is not validated."""
    from agents.llm.grammar import GrammarError
    from agents.llm.schemas import json_schema_of

    assert 'parts-item ::= "\\"" ([a-zA-Z] char{0,59})? "\\""' in grammar_for(Planned)
    assert "x-first-char" not in str(json_schema_of(Planned))
    assert Planned(parts=["Making coffee", "7:00 lunch", ""]).parts[0] == "Making coffee"  # not validated
    with pytest.raises(GrammarError, match="character class"):
        schema_to_gbnf({"type": "string", "maxLength": 5, "x-first-char": "a|b"})


@pytest.mark.slow
def test_decoding_an_activity_list_starts_every_item_with_a_letter(smollm2) -> None:
    messages = [{"role": "user", "content": "Monday 7:00. List three things Lucy Alvarez does this morning."}]
    for seed in range(3):
        text, _, _ = smollm2("smollm2", messages, grammar=grammar_for(Planned), temperature=1.0, max_tokens=200,
                             seed=seed)
        parts = Planned.model_validate_json(text).parts
        assert all(p == "" or p[0].isalpha() for p in parts), parts


def test_json_is_written_compact_so_keys_and_punctuation_are_forced() -> None:
    """No optional space anywhere: after a value closes, the next key (',"minutes":') is the only
    text the grammar allows, so the forcing loop evaluates it in one batch instead of sampling a
    space-or-not choice at every separator (SmolLM2 wrote '{ "ratings": [ 10 ] }' and '{"ratings":[1]}')."""
    for schema in (Step, Decomposition, Mixed, Free):
        assert '" "?' not in grammar_for(schema)  # the optional space there was before
    assert rules(grammar_for(Step))["root"] == (
        '"{" "\\"action\\"" ":" root-action "," "\\"minutes\\"" ":" root-minutes "," "\\"place\\"" ":" root-place "}"')


class Worded(BaseModel):
    action: str = Field(max_length=40, json_schema_extra=WORDS_ONLY)
    emoji: str = Field(max_length=8, json_schema_extra={ONE_OF: ["🍳", "☕"]})


def test_words_only_and_one_of_narrow_the_grammar_only() -> None:
    """A step's action and an object's state are words (no digits, underscores or emoji), and an
    emoji is one of the engine's: in the grammar. Servers, prompts and cache keys never see the
    hints, and validation does not apply them (a remote model's '🥞' is not refused)."""
    from agents.llm.grammar import GrammarError
    from agents.llm.schemas import json_schema_of

    g = rules(grammar_for(Worded))
    assert g["root-action"] == '"\\"" ([a-zA-Z] [a-zA-ZÀ-ÿ ,\'-]{0,39})? "\\""'
    assert g["root-emoji"] == '"\\"🍳\\"" | "\\"☕\\""'
    assert "x-" not in str(json_schema_of(Worded))
    assert Worded(action="start_work 9", emoji="🥞").emoji == "🥞"
    with pytest.raises(GrammarError, match="x-chars must be a character class"):
        schema_to_gbnf({"type": "string", "maxLength": 5, "x-chars": "[a-z]+"})


class Activity(BaseModel):
    action: str = Field(max_length=80, json_schema_extra=PLAIN_WORDS)
    state: str = Field(max_length=40, json_schema_extra=PLAIN_WORDS)


def test_an_activity_is_plain_words_in_the_grammar_only() -> None:
    """No words run together ('addOneMovieImgReloads', 'wakeupandgetting') and no identifiers
    ('create-bread-in-bread'): the grammar writes whole lower-case words after a first letter,
    joined by a space or ', '. A single word stays possible: the checks refuse one that is no
    activity, and the model retries."""
    from llama_cpp import LlamaGrammar

    from agents.llm.grammar import GrammarError
    from agents.llm.schemas import json_schema_of

    text = grammar_for(Activity)
    g = rules(text)
    assert g["word12"] == "[a-zA-Z] [a-zà-ÿ']{0,11}"
    assert g["root-action"] == '"\\"" word12 ((" " | ", ") word12){0,9} "\\""'
    assert g["root-state"] == '"\\"" word12 ((" " | ", ") word12){0,4} "\\""'
    LlamaGrammar.from_string(text, verbose=False)  # llama.cpp parses it
    assert "x-" not in str(json_schema_of(Activity))
    assert Activity(action="addOneMovieImgReloads", state="").action  # validation never applies the hint
    with pytest.raises(GrammarError, match="x-words"):
        schema_to_gbnf({"type": "string", "maxLength": 20, "x-words": {"min": 0, "longest": 5}})
    with pytest.raises(GrammarError, match="x-words"):
        schema_to_gbnf({"type": "string", "maxLength": 20, "x-words": [2, 5]})


@pytest.mark.slow
def test_decoding_an_activity_writes_plain_words(smollm2) -> None:
    import re

    messages = [{"role": "user", "content": "Lucy has breakfast at 07:00. What does she do first? JSON."}]
    words = re.compile(r"^[a-zA-Z][a-zà-ÿ']*(?:,? [a-zA-Z][a-zà-ÿ']*)*$")
    for seed in range(3):
        text, _, _ = smollm2("smollm2", messages, grammar=grammar_for(Activity), temperature=1.0, max_tokens=120,
                             seed=seed)
        fields = json.loads(text)
        assert words.match(fields["action"]) and words.match(fields["state"]), fields


@pytest.mark.slow
def test_decoding_a_decomposition_writes_words_and_the_engines_emoji(smollm2) -> None:
    """Under the real decomposition grammar SmolLM2 at temperature 1.0 can write neither an
    identifier ('start_morning_breakfast') nor a string of emoji as an action, and the object
    state is the engine's marker (it words the state itself: roles.planning.STATE_BY_ENGINE)."""
    import re

    from agents.roles.planning import EMOJI_CHOICES, decomposition_schema

    schema = decomposition_schema(("Oak House:kitchen", "Oak House:living room"), "breakfast")
    words = re.compile(r"^(?:[a-zA-Z][a-zA-ZÀ-ÿ ,'-]*)?$")
    messages = [{"role": "user", "content": "Lucy has breakfast at 07:00. Break it into steps as JSON."}]
    for seed in range(3):
        text, _, _ = smollm2("smollm2", messages, grammar=grammar_for(schema), temperature=1.0, max_tokens=400,
                             seed=seed)
        steps = json.loads(text)["steps"]
        assert all(words.match(s["action"]) and s["object_state"] == "in use" for s in steps), steps
        assert all(s["emoji"] in EMOJI_CHOICES for s in steps), steps
        assert not re.search(r"\s", re.sub(r'"(?:[^"\\]|\\.)*"', '""', text)), text  # compact outside strings


@pytest.mark.slow
def test_decoding_a_meal_writes_one_step_of_each_slot_in_order(smollm2) -> None:
    """A breakfast under the slotted grammar: a preparation, the meal, what comes after."""
    from agents.roles.planning import decomposition_schema, step_options

    slots = step_options("breakfast", "have breakfast at Oak House kitchen")
    schema = decomposition_schema(("Oak House:kitchen", "Oak House:living room"), "breakfast", slots)
    messages = [{"role": "user", "content": "Lucy has breakfast at 07:00. Break it into steps as JSON."}]
    for seed in range(3):
        text, _, _ = smollm2("smollm2", messages, grammar=grammar_for(schema), temperature=1.0, max_tokens=400,
                             seed=seed)
        answer = schema.model_validate_json(text)
        assert [s.action in slot for s, slot in zip(answer.steps, slots)] == [True] * 3, text


def test_an_opening_starts_the_string_in_the_grammar_only() -> None:
    """An interview answer opens 'I ' or 'I'' under the grammar (the rest stays free, bounded so
    the whole fits the cap); other views of the schema never see the hint."""
    from agents.llm.schemas import json_schema_of
    from agents.roles.interview import Answer

    g = rules(grammar_for(Answer))
    assert g["root-answer"] == f'"\\"" ("I " | "I\'") char{{0,{DEFAULT_MAX_STRING - 2}}} "\\""'
    assert "x-opening" not in str(json_schema_of(Answer))
    assert rules(schema_to_gbnf({"type": "string", "maxLength": 10, "x-opening": ['a"b']}))["root"] == \
        '"\\"" ("a\\\\\\"b") char{0,7} "\\""'


@pytest.mark.slow
def test_interview_answers_under_the_grammar_are_first_person_and_accepted(smollm2) -> None:
    """Every SmolLM2 interview answer began with the resident's own name and went on in the third
    person, so the answer check refused all of them (the bench's interviews were all fallbacks).
    Opened in the first person by the grammar, the model's own answers pass the same check."""
    from agents.roles.interview import answer_schema, interview_prompt

    name, question = "Tom Alvarez", "What have you been doing today, and who have you seen?"
    memories = ("Tom Alvarez is having breakfast at Oak House kitchen", "Maria Alvarez is talking with Tom Alvarez",
                "Tom Alvarez is working at Riverside Clinic exam room", "Lucy Alvarez is reading in the living room")
    schema = answer_schema(name, question, memories)
    prompt = interview_prompt("Tom Alvarez (46) is patient, dry humour, tired. Occupation: nurse at Riverside Clinic.",
                              name, "Friday 08:59", "working", list(memories), question)
    accepted = 0
    for seed in range(4):
        text, _, _ = smollm2("smollm2", prompt, grammar=grammar_for(schema), temperature=0.7, max_tokens=300,
                             seed=seed)
        assert json.loads(text)["answer"].startswith(("I ", "I'")), text
        try:
            schema.model_validate_json(text)
            accepted += 1
        except ValueError:
            pass
    assert accepted >= 3


@pytest.mark.slow
def test_conversation_lines_under_the_grammar_open_as_speech_and_are_accepted(smollm2) -> None:
    """SmolLM2 began most lines with a name or copied its partner's line, and the line checks
    refused them; opened as speech by the grammar ('I ', 'Yes', 'Oh', ...), its own lines pass."""
    from agents.roles.conversation import SPEECH_OPENINGS, converse_prompt, line_schema

    name, other = "Tom Alvarez", "Maria Alvarez"
    summary = "Tom Alvarez (46) is patient, dry humour, tired. Occupation: nurse at Riverside Clinic. Lives at Oak House."
    accepted = total = 0
    for previous in ("Did you sleep well last night?", "Are you busy at work today?", "I might be home late tonight."):
        schema = line_schema(name, other, previous)
        prompt = converse_prompt(summary, name, other, "wife", "07:30", "having breakfast", "Oak House:kitchen",
                                 ["Tom Alvarez is having breakfast at Oak House kitchen"], [f"{other}: {previous}"], 8)
        for seed in range(2):
            text, _, _ = smollm2("smollm2", prompt, grammar=grammar_for(schema), temperature=0.7, max_tokens=160,
                                 seed=seed)
            assert json.loads(text)["utterance"].startswith(tuple(SPEECH_OPENINGS["x-opening"])), text
            total += 1
            try:
                schema.model_validate_json(text)
                accepted += 1
            except ValueError:
                pass
    # of 6 (3 on 2026-11-28); the rest took the partner's line up word for word ('I might be home late ...'),
    # named the speaker ('..., Tom Alvarez.') or spoke of the one spoken to in the third person
    # ("... with Tom Alvarez, Maria Alvarez's wife", said by Tom to Maria)
    assert accepted >= 3
