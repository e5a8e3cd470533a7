"""A conversation line on the embedded model is kept from saying the talk's earlier lines again.

SmolLM2 answered a line by saying it back (word for word, or with its own name swapped in), and
the line checks refused it on every attempt. The grammar-last sampler now blocks the last token
of any run of four tokens already said in the talk, so the model has to use its own words.
"""

from __future__ import annotations

import asyncio
import threading

import pytest
from pydantic import BaseModel

from agents.llm import local
from agents.llm.local import LoadedModel, LocalBackend, no_repeat_of
from agents.llm.local_sampling import NO_REPEAT_TOKENS, RepeatTable, repeat_table
from agents.llm.models import resolve_local_name
from agents.llm.wrappers.base import Request
from agents.roles.conversation import line_schema


def test_the_table_blocks_the_last_token_of_a_run_already_said() -> None:
    table = RepeatTable([[1, 2, 3, 4, 5], [9, 2, 3, 4, 7]], n=4)
    assert table.banned([8, 2, 3, 4]) == [5, 7]  # after '2 3 4' both continuations were said
    assert table.banned([1, 2, 3]) == [4]
    assert table.banned([3, 2, 1]) == [] and table.banned([3, 4]) == []  # no run, or too short a history
    assert NO_REPEAT_TOKENS == 4 and len(RepeatTable([[1, 2, 3]], n=4)) == 0  # a text shorter than a run
    table.add([3, 2, 1, 0])  # a run the answer itself just wrote
    assert table.banned([3, 2, 1]) == [0]
    table.add([1, 2])  # not a whole run: ignored
    assert table.banned([5, 1, 2]) == []


def test_a_conversation_lines_schema_names_the_lines_it_may_not_say_again() -> None:
    previous, earlier = "I am Tom and I would love to talk.", "Good morning, Maria!"
    schema = line_schema("Maria Alvarez", "Tom Alvarez", previous, (earlier, previous))
    assert no_repeat_of(schema) == (previous, earlier)
    assert no_repeat_of(line_schema("Maria Alvarez", "Tom Alvarez", "")) == ()  # an opener: only not itself

    class Plain(BaseModel):
        answer: str

    assert no_repeat_of(Plain) is None  # any other answer is sampled freely


class CharLlama:
    """A fake llama.cpp model: one token per character; records the table each call saw."""

    def __init__(self) -> None:
        self.seen: list[object] = []
        self._townsfolk_no_repeat = None

    def tokenize(self, text: bytes, add_bos: bool = False, special: bool = False) -> list[int]:
        return list(text)

    def detokenize(self, tokens: list[int]) -> bytes:
        return bytes(tokens)

    def n_vocab(self) -> int:
        return 256

    def create_chat_completion(self, messages, **options):  # noqa: ANN001, ANN201
        self.seen.append(self._townsfolk_no_repeat)
        return {"choices": [{"message": {"content": '{"utterance": "Lovely, see you.", "end": false}'}}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 5}}


def test_the_backend_hands_the_lines_to_the_sampler_for_that_call_only(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = resolve_local_name(None)
    fake = CharLlama()
    monkeypatch.setattr(local, "_models", {spec.name: LoadedModel(spec, fake, threading.Lock(), 0.0)})
    schema = line_schema("Maria Alvarez", "Tom Alvarez", "Oh, I am Tom and I would love to talk.")
    request = Request("converse", [{"role": "user", "content": "Say something."}], schema, 0.7, 40, 3)
    asyncio.run(LocalBackend(grammar=False).generate(request))
    table = fake.seen[-1]
    assert isinstance(table, RepeatTable) and table.banned(list(b"I am Tom and I would")) == [ord(" ")]
    assert table.banned(list(b'"Oh')) == [ord(",")]  # spelled as the start of a JSON string too
    assert table.banned(list(b" To")) == []  # never the rest of a word: 'Tom' may be said again
    assert fake._townsfolk_no_repeat is None  # not left behind for the next call
    opener = Request("converse", request.messages, line_schema("Maria Alvarez", "Tom Alvarez", ""), 0.7, 40, 3)
    asyncio.run(LocalBackend(grammar=False).generate(opener))
    assert isinstance(fake.seen[-1], RepeatTable) and len(fake.seen[-1]) == 0  # its own runs are added as it writes

    class Plain(BaseModel):
        answer: str

    asyncio.run(LocalBackend(grammar=False).generate(Request("react", request.messages, Plain, 0.7, 40, 3)))
    assert fake.seen[-1] is None


@pytest.mark.slow
def test_the_real_model_asked_to_say_a_line_again_says_none_of_its_runs() -> None:
    pytest.importorskip("llama_cpp")
    from agents.llm.grammar import grammar_for
    from agents.llm.local import generate_local
    from agents.llm.models import LocalModelError

    try:
        loaded = local.load_model(resolve_local_name(None))
    except LocalModelError as exc:
        pytest.skip(str(exc))
    line = "I am Tom Alvarez and I would love to discuss my plans for Friday, but I am stuck at the clinic."
    schema = line_schema("Maria Alvarez", "Tom Alvarez", line)
    messages = [{"role": "user", "content": f'Tom said: "{line}"\nSay exactly the same sentence back, word for word.'}]
    grammar = grammar_for(schema)
    free, _, _ = generate_local(None, messages, grammar=grammar, temperature=0.0, max_tokens=80, seed=1)
    kept, _, _ = generate_local(None, messages, grammar=grammar, temperature=0.0, max_tokens=80, seed=1,
                                no_repeat=(line,))
    said = schema.model_validate_json(kept).utterance if kept.rstrip().endswith("}") else kept
    table = repeat_table(loaded.llama, (line,))
    tokens = loaded.llama.tokenize(said.encode("utf-8"), add_bos=False, special=False)
    runs = [tokens[i:i + NO_REPEAT_TOKENS] for i in range(len(tokens) - NO_REPEAT_TOKENS + 1)]
    assert not any(table.banned(run[:-1]) and run[-1] in table.banned(run[:-1]) for run in runs), said
    assert free != kept and loaded.llama._sampler.blocked > 0
