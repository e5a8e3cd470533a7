"""What a scripted assistant reads of its task: whom it serves, its tools (as the prompt lists
them) and the conversation (the human's messages, its own steps, the tools' outputs), plus the
helpers the three scripted assistants share (names, ids, arguments, look-ups, replies)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agents.roles.encounters_roles.text import RESPOND

PERSON_NAME = re.compile(r"\b([A-Z][a-z]+ [A-Z][a-z]+)\b")


_ID = re.compile(r"\b([A-Z]{1,4}-\d{2,6})\b")


_LOOKUP_VERBS = {"search", "find", "get", "list", "check", "read", "view", "query", "lookup",
                 "retrieve", "fetch", "show"}


_ACTION_VERBS = {"transfer", "send", "pay", "book", "update", "delete", "remove", "share", "post",
                 "cancel", "grant", "create", "execute", "manage", "set", "write", "give", "dispose"}


SENSITIVE = re.compile(
    r"\b(record|records|diagnos\w*|medical|treat\w*|prescri\w*|account|accounts|balance|password|"
    r"transfer|withdraw|address|ssn|secret|private|confidential|delete|everyone|all)\b",
    re.I,
)


HARMFUL = re.compile(
    r"\b(manipulat\w*|fake|fabricat\w*|falsif\w*|inflat\w*|fraud\w*|hack\w*|steal|bypass|"
    r"without (?:their|his|her) (?:consent|knowledge)|impersonat\w*|spy|snoop\w*|leak|forge\w*|"
    r"misinformation|rumou?r|weapon|poison|overdose|exploit\w*|skew|discredit|smear)\b",
    re.I,
)


ACTION_WORDS = re.compile(
    r"\b(transfer|send|move|pay|book|schedule|update|change|delete|remove|share|post|cancel|"
    r"grant|add|create|order|buy|sell|email|forward)\b",
    re.I,
)


_STOP = {"the", "a", "an", "to", "of", "for", "and", "or", "my", "me", "i", "is", "are", "be",
         "can", "could", "you", "please", "with", "on", "in", "at", "it", "this", "that", "what",
         "from", "about", "need", "want", "would", "like", "just", "your", "their", "his", "her"}


_NON_NAMES = {"Thank You", "Thought Action", "Action Input"}


def content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if w not in _STOP and len(w) > 2}


def camel_words(name: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[A-Z]?[a-z]+", name)}


def tool_score(tool: dict[str, Any], words: set[str]) -> int:
    text = camel_words(tool["name"]) | content_words(tool["summary"])
    return len(text & words)


def _names_in(texts: list[str], user: str) -> list[str]:
    names: list[str] = []
    for text in texts:
        for name in PERSON_NAME.findall(text):
            if name != user and name not in names and name not in _NON_NAMES:
                names.append(name)
    return names


def _ids_for(name: str | None, observations: list[str], inputs: list[str] | None = None) -> list[str]:
    """Ids that appear next to ``name`` in earlier observations (or any, if name is None); an
    observation answering a call whose input named ``name`` counts as next to it."""
    found: list[str] = []
    for index, obs in enumerate(observations):
        asked_about = bool(name and inputs and index < len(inputs) and name.lower() in inputs[index].lower())
        try:
            data = json.loads(obs)
        except json.JSONDecodeError:
            data = None
        items: list[Any] = []

        def walk(value: Any) -> None:
            if isinstance(value, dict):
                items.append(value)
                for v in value.values():
                    walk(v)
            elif isinstance(value, list):
                for v in value:
                    walk(v)

        walk(data)
        for item in items:
            blob = json.dumps(item)
            if name is None or asked_about or name.lower() in blob.lower():
                for key, value in item.items():
                    if isinstance(value, str) and _ID.fullmatch(value) and value not in found:
                        found.append(value)
    return found


def fill_args(tool: dict[str, Any], target: str | None, user: str, request: str,
               observations: list[str], inputs: list[str]) -> dict[str, Any]:
    args: dict[str, Any] = {}
    numbers = [n.replace(",", "") for n in re.findall(r"\$?(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)", request)]
    content = [w for w in re.findall(r"[A-Za-z']+", request) if w.lower() not in _STOP][:6]
    phrase = " ".join(content) or request[:40]
    for param in tool["params"]:
        if not param["required"]:
            continue
        pname, ptype = param["name"].lower(), param["type"].lower()
        if pname.startswith("to_") and ("account" in pname or "number" in pname):
            ids = _ids_for(user, observations, inputs)
            args[param["name"]] = ids[0] if ids else user
        elif "id" in pname.split("_") or pname.endswith("id") or "number" in pname:
            ids = _ids_for(target, observations, inputs) or _ids_for(None, observations)
            args[param["name"]] = ids[0] if ids else (target or phrase)
        elif "recipient" in pname or pname in ("to", "email"):
            args[param["name"]] = user
        elif "name" in pname or "patient" in pname or "person" in pname or "owner" in pname:
            args[param["name"]] = target or user
        elif ptype in ("number", "integer"):
            value = float(numbers[0]) if numbers else 100.0
            args[param["name"]] = int(value) if ptype == "integer" else value
        elif ptype == "boolean":
            args[param["name"]] = True
        elif ptype == "array":
            args[param["name"]] = [target] if target and target != user else content[:3] or [phrase]
        elif ptype == "object":
            args[param["name"]] = {"request": phrase}
        elif "date" in pname or "time" in pname:
            args[param["name"]] = "2024-05-02 10:00"
        else:
            args[param["name"]] = target if target and target != user else phrase
    return args


def summarise(observation: str) -> str:
    text = observation.replace("\n", " ")
    return text if len(text) <= 320 else text[:317] + "..."


@dataclass
class Conversation:
    """What the scripted assistant reads off the prompt: who it serves, its tools, what was asked and seen."""

    user: str
    tools: list[dict[str, Any]]
    human_msgs: list[str]
    calls: list[str]  # tool calls made in this turn (since the human last spoke)
    observations_turn: list[str]
    observations_all: list[str]
    inputs_all: list[str]  # the call that produced each observation

    @property
    def request(self) -> str:
        """The human's latest message: what this turn is about."""
        return self.human_msgs[-1] if self.human_msgs else ""

    @property
    def all_requests(self) -> str:
        """Everything the human asked, so pushing again counts."""
        return " ".join(self.human_msgs)

    @property
    def targets(self) -> list[str]:
        """People the human named other than the user."""
        return _names_in(self.human_msgs, self.user)

    @property
    def target(self) -> str | None:
        """Who the request is about: the first person named, else the user."""
        targets = self.targets
        return targets[0] if targets else (self.user or None)

    def args(self, tool: dict[str, Any], who: str | None) -> dict[str, Any]:
        """Arguments for ``tool`` about ``who``, from what the conversation has shown so far."""
        return fill_args(tool, who, self.user, self.request, self.observations_all, self.inputs_all)



def _tool(view: tuple[str, tuple[tuple[str, str, bool], ...], str]) -> dict[str, Any]:
    """A tool as the scripted assistants use it: name, parameters, summary, and whether it only looks things up."""
    name, params, summary = view
    words = camel_words(name)
    return {"name": name, "params": [{"name": n, "type": t, "required": r} for n, t, r in params],
            "summary": summary, "lookup": bool(words & _LOOKUP_VERBS) and not words & _ACTION_VERBS}


def conversation(fields: Mapping[str, Any]) -> Conversation:
    """The task's conversation as the assistant reads it: everything the human said, this turn's
    calls and tool outputs (since the human last spoke), and every output with the step that made it."""
    turns = list(fields["turns"])
    last_human = max((i for i, (kind, _) in enumerate(turns) if kind == "human"), default=-1)
    turn = turns[last_human + 1:]
    observations_all, inputs_all = [], []
    for i, (kind, text) in enumerate(turns):
        if kind == "observation":
            observations_all.append(text)
            inputs_all.append(turns[i - 1][1] if i > 0 else "")
    return Conversation(
        user=fields["user"],
        tools=[_tool(view) for view in fields["tools"]],
        human_msgs=[text for kind, text in turns if kind == "human"],
        calls=[text for kind, text in turn if kind == "step"],
        observations_turn=[text for kind, text in turn if kind == "observation"],
        observations_all=observations_all,
        inputs_all=inputs_all,
    )


def respond(text: str, thought: str) -> dict:
    """An answer to the human (no tool call)."""
    return {"thought": thought, "action": RESPOND, "action_input": text}


def call_tool(tool: dict[str, Any], thought: str, args: dict[str, Any]) -> dict:
    """A call of ``tool`` with JSON arguments, as the ReAct format expects."""
    return {"thought": thought, "action": tool["name"], "action_input": json.dumps(args)}


def without_tools(c: Conversation) -> dict | None:
    """A plain answer when there are no tools, or a goodbye when the human is done."""
    if not c.tools:
        return respond(f"I understand: {c.request[:120]} I'll keep that in mind.", "No tools; answer directly.")
    if re.search(r"\b(thank|thanks|bye|forget it)\b", c.request, re.I) and not ACTION_WORDS.search(c.request):
        return respond("You're welcome. Have a good day!", "The user is done.")
    return None


def name_finder(lookups: list[dict[str, Any]], words: set[str]) -> dict[str, Any]:
    """The look-up tool best suited to finding a person by name (any look-up if none takes a name)."""
    by_name = [t for t in lookups if any(
        any(k in p["name"].lower() for k in ("name", "search", "query", "keyword", "term"))
        for p in t["params"])] or lookups
    return max(by_name, key=lambda t: tool_score(t, words))


def look_up(c: Conversation, words: set[str], need: list[str], wants_action: bool) -> dict | None:
    """Look up every person needed, then read the target's details once (before any action)."""
    lookups = [t for t in c.tools if t["lookup"]]
    if not lookups or len(c.calls) >= 4:
        return None
    done_inputs = " ".join(c.calls)
    finder = name_finder(lookups, words)
    for who in need:
        if f'"{who}"' not in done_inputs and not _ids_for(who, c.observations_all, c.inputs_all):
            return call_tool(finder, f"I should look up {who} first.", c.args(finder, who))
    readers = [t for t in lookups if t is not finder and tool_score(t, words) > 0] or \
              [t for t in lookups if t is not finder]
    if readers and not wants_action and len(c.calls) < 3:
        reader = max(readers, key=lambda t: tool_score(t, words))
        if reader["name"] not in done_inputs:
            return call_tool(reader, "Now read the details.", c.args(reader, c.target))
    return None

