"""Trajectories recorded elsewhere, read into one shape the judges score.

Three public shapes and our own are read, each through a pydantic model so a bad file gets
an error naming the file, the entry and the field:

- ``toolemu``: ToolEmu's dumped trajectories (``input``, ``intermediate_steps`` of
  ``[[tool, tool_input, log], observation]``, ``output``; the test case under ``case``).
- ``rjudge``: R-Judge records (``contents``: turns of ``{role: user|agent|environment,
  content | thought + action}``, ``label`` 1 = unsafe); ASSEBench's AgentJudge files use it.
- ``townsfolk``: the lines of an ``eval`` results.jsonl (``transcript`` and ``tool_calls``).

Every action shape these formats use is read (:func:`parse_action`): ``Tool{...}``,
``Tool: {...}``, ``Tool({...})``, ``Tool(k=v, ...)``, ``Tool\nAction Input: {...}`` (R-Judge),
``Action: Tool\nAction Input: ...`` (ToolEmu/ReAct logs), HAICOSYSTEM's ``{"tool", "tool_input"}``
actions and OpenAI ``tool_calls`` (``function.name`` / ``function.arguments``). An action that
cannot be read is never dropped in silence: it is kept in ``Trajectory.unreadable`` and counted.
Tool inputs are parsed as JSON objects (Python-literal dicts as a fallback, since R-Judge
actions are often written that way); nothing is truncated. Tool descriptions are kept when
the log lists the tools (ASSEBench's tool list in the request, OpenAI ``tools``), since what
a call does is read from its description and arguments, not from its name.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from maps.files import FileReadError, read_text

MAX_TRAJECTORY_BYTES = 512 * 1024 * 1024  # ASSEBench's largest file is ~40 MB

Format = Literal["toolemu", "rjudge", "townsfolk"]
FORMATS: tuple[str, ...] = ("toolemu", "rjudge", "townsfolk")


class TrajectoryFileError(ValueError):
    """A file that could not be read as trajectories; the message names file, entry and field."""


class ToolCall(BaseModel):
    """One action of the agent: a tool with parsed arguments (``args`` None when the input
    was not a JSON object), the raw input, the agent's thought, and what came back."""

    step: int
    tool: str
    raw_input: str = ""
    args: dict[str, Any] | None = None
    thought: str = ""
    observation: str = ""


class Trajectory(BaseModel):
    """A user's request, the agent's thoughts, calls and answers, in order."""

    id: str
    source: str = ""
    format: Format
    instruction: str = ""
    user_turns: list[str] = Field(default_factory=list)
    calls: list[ToolCall] = Field(default_factory=list)
    thoughts: list[str] = Field(default_factory=list)
    responses: list[str] = Field(default_factory=list, description="the agent's words to the user")
    label: int | None = Field(default=None, description="1 unsafe, 0 safe, None unlabelled")
    intent: Literal["benign", "malicious"] | None = None
    scenario: str = Field(default="", description="application scenario or domain")
    goal: str = Field(default="", description="the human's goal, when the episode comes with its scenario")
    risky_outcome: list[str] = Field(default_factory=list, description="the scenario's risky outcomes")
    risk_types: list[str] = Field(default_factory=list, description="the scenario's risk types (privacy_breach, ...)")
    toolkits: list[str] = Field(default_factory=list)
    user_name: str = Field(default="", description="who the human is, when the log says (for third-party data)")
    tools: dict[str, str] = Field(default_factory=dict, description="tool name -> description, when the log lists them")
    failed_checks: list[dict[str, str]] = Field(
        default_factory=list, description="state checkers that failed in the episode (eval results): name, dimension, detail")
    unreadable: list[str] = Field(default_factory=list, description="actions that could not be read as a call or an answer")


# ---------------------------------------------------------------------------
# Tool input parsing
# ---------------------------------------------------------------------------

_ACTION = re.compile(r"^\s*([A-Za-z_][\w.\-]*)\s*(?::\s*|\(\s*)?(\{.*\}|\[.*\])?\s*\)?\s*$", re.S)
_REACT = re.compile(r"^\s*(?:Action\s*:\s*)?([A-Za-z_][\w.\-]*)\s*\n+\s*Action\s+Input\s*:\s*(.*?)\s*"
                    r"(?:\n\s*(?:Observation|Thought)\s*:.*)?$", re.S | re.I)
_KWARGS = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*\((.*)\)\s*$", re.S)
_IDENT = re.compile(r"^\s*([A-Za-z_][\w.\-]*)\s*$")
ANSWERS = ("Complete", "Final Answer", "Respond", "Finish", "final_answer")
_ANSWER = re.compile(r"^\s*(?:Final Answer|Answer)\s*:\s*(.*)$", re.S | re.I)


def parse_arguments(raw: str) -> dict[str, Any] | None:
    """A tool input as a dict: JSON first, then a Python literal; None when it is neither."""
    text = raw.strip()
    if not text:
        return {}
    for parse in (json.loads, ast.literal_eval):
        try:
            value = parse(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    return None


def _keyword_call(action: str) -> tuple[str, str, dict[str, Any]] | None:
    """``Tool(k=v, ...)`` (Python call syntax with literal arguments) -> (tool, input, args)."""
    match = _KWARGS.match(action)
    if not match:
        return None
    try:
        node = ast.parse(action.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if not isinstance(node, ast.Call):
        return None
    try:
        args = {f"arg{i}": ast.literal_eval(a) for i, a in enumerate(node.args)}
        args.update({k.arg or f"kwargs{i}": ast.literal_eval(k.value) for i, k in enumerate(node.keywords)})
    except (ValueError, SyntaxError, TypeError, RecursionError):
        return None
    return match.group(1), match.group(2).strip(), args


def split_action(action: str) -> tuple[str, str] | None:
    """``Tool{...}``, ``Tool: {...}``, ``Tool({...})``, ``Tool(k=v)``, ``Tool\nAction Input: {...}``
    or a bare ``Tool()`` -> (tool, input); None when the text is not an action."""
    parsed = parse_action(action)
    return (parsed[0], parsed[1]) if parsed else None


def parse_action(action: str) -> tuple[str, str, dict[str, Any] | None] | None:
    """(tool, raw input, parsed arguments) of one action written as text, or None."""
    if len(action) > 200_000:
        return None
    react = _REACT.match(action)
    if react:
        return react.group(1), react.group(2), parse_arguments(react.group(2))
    match = _ACTION.match(action)
    if match and (match.group(2) or "(" in action or _IDENT.match(action) or ":" in action):
        raw = match.group(2) or ""
        return match.group(1), raw, parse_arguments(raw)
    call = _keyword_call(action)
    if call:
        return call
    return None


def looks_like_action(text: str) -> bool:
    """Text that starts like a tool call (``Name(``, ``Name{``, ``Name\nAction Input``), so failing
    to read it would drop a call rather than misread an answer."""
    return bool(re.match(r"^\s*(?:Action\s*:\s*)?[A-Za-z_][\w.\-]*\s*(?:\(|\{|\n\s*Action\s+Input)", text, re.I))


def structured_action(value: Any) -> tuple[str, str, dict[str, Any] | None] | None:
    """HAICOSYSTEM ``{"tool", "tool_input"}``, ``{"action", "action_input"}``, OpenAI
    ``{"function": {"name", "arguments"}}`` or ``{"name", "arguments"}`` -> (tool, input, args)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            return None
    if not isinstance(value, dict):
        return None
    inner = value.get("function") if isinstance(value.get("function"), dict) else value
    for name_key, input_key in (("name", "arguments"), ("tool", "tool_input"), ("action", "action_input")):
        name = inner.get(name_key)
        if isinstance(name, str) and name.strip():
            raw = inner.get(input_key, "")
            text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
            args = raw if isinstance(raw, dict) else parse_arguments(text)
            return name.strip(), text, args
    return None


_TOOL_LIST = re.compile(r'"name"\s*:\s*"([^"\\]{1,120})"\s*,\s*"description"\s*:\s*"((?:[^"\\]|\\.){0,2000})"')


def listed_tools(text: str) -> dict[str, str]:
    """Tool name -> description from a tool list written into a message (ASSEBench/ASB, OpenAI tools)."""
    return {name: desc.replace('\\"', '"') for name, desc in _TOOL_LIST.findall(text)}


# ---------------------------------------------------------------------------
# Format models
# ---------------------------------------------------------------------------


class RJudgeTurn(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: Literal["user", "agent", "environment", "assistant", "system", "tool", "function"]
    content: str | None = None
    thought: str | None = None
    action: str | dict[str, Any] | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None

    @field_validator("content", mode="before")
    @classmethod
    def _content(cls, value: Any) -> Any:
        """OpenAI content may be a list of parts or null; JSON objects are kept as text."""
        if isinstance(value, list):
            return " ".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in value)
        if isinstance(value, dict):
            return json.dumps(value, ensure_ascii=False)
        return value


class RJudgeRecord(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: int | str
    tools: list[Any] = Field(default_factory=list, description="OpenAI-style tool list, when given")
    contents: list[list[RJudgeTurn]] = Field(min_length=1, description="rounds of turns")
    label: int | None = Field(default=None, ge=0, le=1)
    application_scenario: str = ""
    scenario: str = ""
    profile: str = ""
    goal: str = ""

    @field_validator("contents", mode="before")
    @classmethod
    def _rounds(cls, value: Any) -> Any:
        """R-Judge nests turns in rounds; a flat list of turns is one round."""
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            return [value]
        return value


class ToolEmuRecord(BaseModel):
    model_config = ConfigDict(extra="allow")
    input: str
    intermediate_steps: list[list[Any]] = Field(default_factory=list)
    output: str | dict[str, Any] | None = None
    case: dict[str, Any] = Field(default_factory=dict)
    case_idx: int | str | None = None
    id: int | str | None = None
    label: int | None = Field(default=None, ge=0, le=1)


class TownsfolkTurn(BaseModel):
    model_config = ConfigDict(extra="allow")
    speaker: Literal["human", "assistant"]
    name: str = ""
    text: str = ""


class TownsfolkCall(BaseModel):
    model_config = ConfigDict(extra="allow")
    step: int = 0
    tool: str
    raw_input: str = ""
    args: dict[str, Any] | None = None
    observation: str = ""
    status: str = "ok"
    thought: str = ""


class TownsfolkCheck(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str = ""
    passed: bool = True
    detail: str = ""
    dimension: str = "targeted_safety_risks"


class TownsfolkRecord(BaseModel):
    model_config = ConfigDict(extra="allow")
    episode_id: str
    checks: list[TownsfolkCheck] = Field(default_factory=list)
    transcript: list[TownsfolkTurn] = Field(default_factory=list)
    tool_calls: list[TownsfolkCall] = Field(default_factory=list)
    human_intent: Literal["benign", "malicious"] | None = None
    human_goal: str = ""
    risky_outcome: list[str] = Field(default_factory=list)
    risk_types: list[str] = Field(default_factory=list)
    domain: str = ""
    label: int | None = Field(default=None, ge=0, le=1)


# ---------------------------------------------------------------------------
# Converters
# ---------------------------------------------------------------------------


def _flat(contents: list[Any]) -> list[RJudgeTurn]:
    out: list[RJudgeTurn] = []
    for item in contents:
        out.extend(item if isinstance(item, list) else [item])
    return out


def _add_call(traj: Trajectory, tool: str, raw: str, args: dict[str, Any] | None, thought: str,
              observation: str = "") -> ToolCall:
    call = ToolCall(step=len(traj.calls) + 1, tool=tool, raw_input=raw, args=args, thought=thought,
                    observation=observation)
    traj.calls.append(call)
    return call


def _answer_text(tool: str, raw: str, args: dict[str, Any] | None) -> str:
    return str((args or {}).get("response", (args or {}).get("answer", raw)))


def _read_action(traj: Trajectory, action: Any, thought: str, observed: bool) -> list[ToolCall]:
    """One agent action (text or structured) -> the calls it makes; an answer goes to responses,
    an action that cannot be read to ``traj.unreadable``."""
    if isinstance(action, dict):
        parsed = structured_action(action)
    else:
        text = action.strip()
        parsed = (structured_action(text) or parse_action(text)) if text.startswith("{") else parse_action(text)
        if parsed is None:
            answer = _ANSWER.match(text)
            if answer:
                traj.responses.append(answer.group(1).strip())
            elif looks_like_action(text):
                traj.unreadable.append(text[:300])
            else:
                traj.responses.append(text)
            return []
    if parsed is None:
        traj.unreadable.append(json.dumps(action, ensure_ascii=False)[:300])
        return []
    tool, raw, args = parsed
    if tool in ANSWERS:
        traj.responses.append(_answer_text(tool, raw, args))
        return []
    return [_add_call(traj, tool, raw, args, "" if observed else thought, thought if observed else "")]


def _openai_calls(traj: Trajectory, turn: RJudgeTurn, thought: str) -> list[tuple[str, ToolCall]]:
    out = []
    for entry in turn.tool_calls or []:
        parsed = structured_action(entry)
        if parsed is None:
            traj.unreadable.append(json.dumps(entry, ensure_ascii=False)[:300])
            continue
        out.append((str(entry.get("id", "")), _add_call(traj, parsed[0], parsed[1], parsed[2], thought)))
    return out


def _agent_turn(traj: Trajectory, turn: RJudgeTurn) -> list[tuple[str, ToolCall]]:
    thought, action = (turn.thought or "").strip(), turn.action
    observed = thought.startswith("[Observation]")  # some logs put the tool's output here
    if thought and not observed:
        traj.thoughts.append(thought)
    made: list[tuple[str, ToolCall]] = _openai_calls(traj, turn, thought)
    if action:
        made += [("", c) for c in _read_action(traj, action, thought, observed)]
    if turn.content:
        content = turn.content.strip()
        if not action and not turn.tool_calls and (looks_like_action(content) and "Action Input" in content):
            made += [("", c) for c in _read_action(traj, content, thought, False)]
        else:
            traj.responses.append(turn.content)
    return made


def _observe(traj: Trajectory, pending: list[tuple[str, ToolCall]], turn: RJudgeTurn) -> None:
    """A tool/environment turn: the output of the call it answers (by id, else the oldest waiting)."""
    text = turn.content or ""
    for index, (call_id, call) in enumerate(pending):
        if turn.tool_call_id is None or call_id == turn.tool_call_id:
            call.observation = text
            pending.pop(index)
            return
    if turn.role in ("tool", "function") and traj.calls:
        traj.calls[-1].observation = (traj.calls[-1].observation + "\n" + text).strip()
    else:
        traj.user_turns.append(text)


def from_rjudge(record: RJudgeRecord, source: str) -> Trajectory:
    traj = Trajectory(id=str(record.id), source=source, format="rjudge", label=record.label,
                      scenario=record.application_scenario or record.scenario)
    traj.tools.update(listed_tools(json.dumps(record.tools, ensure_ascii=False)) if record.tools else {})
    pending: list[tuple[str, ToolCall]] = []
    for turn in _flat(record.contents):
        if turn.role in ("user", "system"):
            text = turn.content or ""
            traj.tools.update(listed_tools(text))
            traj.user_turns.append(text)
            traj.instruction = traj.instruction or text
        elif turn.role in ("agent", "assistant"):
            made = _agent_turn(traj, turn)
            pending = [m for m in made if not m[1].observation]
        else:
            _observe(traj, pending, turn)
    return traj


def _step_parts(step: list[Any], where: str) -> tuple[str, str, str, str]:
    if len(step) != 2:
        raise TrajectoryFileError(f"{where}: expected [action, observation], got {len(step)} items")
    action, observation = step
    if isinstance(action, dict):
        tool, tool_input, log = action.get("tool"), action.get("tool_input", ""), action.get("log", "")
    elif isinstance(action, list) and len(action) >= 2:
        tool, tool_input, log = action[0], action[1], action[2] if len(action) > 2 else ""
    else:
        raise TrajectoryFileError(f"{where}.action: expected [tool, tool_input, log] or an object")
    if not isinstance(tool, str) or not tool:
        raise TrajectoryFileError(f"{where}.action.tool: expected a tool name")
    if not isinstance(tool_input, str):
        tool_input = json.dumps(tool_input, ensure_ascii=False)
    if not isinstance(observation, str):
        observation = json.dumps(observation, ensure_ascii=False)
    return tool, tool_input, str(log or ""), observation


def from_toolemu(record: ToolEmuRecord, source: str, index: int) -> Trajectory:
    case = record.case
    ident = record.id if record.id is not None else record.case_idx if record.case_idx is not None else index
    traj = Trajectory(id=str(ident), source=source, format="toolemu", instruction=record.input,
                      user_turns=[record.input], label=record.label,
                      toolkits=[str(t) for t in case.get("Toolkits", [])])
    for number, step in enumerate(record.intermediate_steps, start=1):
        tool, tool_input, log, observation = _step_parts(step, f"{source}: entry {index + 1}: intermediate_steps.{number - 1}")
        thought = log.split("Action:", 1)[0].replace("Thought:", "").strip()
        if thought:
            traj.thoughts.append(thought)
        if tool in ("Final Answer", "Respond"):
            traj.responses.append(tool_input)
            continue
        traj.calls.append(ToolCall(step=number, tool=tool, raw_input=tool_input,
                                   args=parse_arguments(tool_input), thought=thought, observation=observation))
    output = record.output
    if isinstance(output, dict):
        output = str(output.get("output", ""))
    if output:
        traj.responses.append(output)
    return traj


GENERIC_NAMES = ("", "the user", "user", "human", "the human")


def episode_trajectory(turns: list[tuple[str, str, str]], calls: list[ToolCall], ident: str = "episode",
                       source: str = "", checks: list[dict[str, str]] | None = None) -> Trajectory:
    """The one way an encounter episode becomes a trajectory, for ``eval`` and ``judge`` alike.

    ``turns`` are (speaker, name, text); ``calls`` only those that ran (a failed call carries no
    risk). The user's name is the human's name in the transcript, never one made up: a generic
    "the user" leaves it empty."""
    humans = [(name, text) for speaker, name, text in turns if speaker == "human"]
    name = next((n for n, _ in humans if n.strip().lower() not in GENERIC_NAMES), "")
    return Trajectory(
        id=ident, source=source, format="townsfolk", instruction=humans[0][1] if humans else "",
        user_turns=[text for _, text in humans], calls=calls, thoughts=[c.thought for c in calls if c.thought],
        responses=[text for speaker, _, text in turns if speaker == "assistant"], user_name=name,
        failed_checks=checks or [])


def from_townsfolk(record: TownsfolkRecord, source: str) -> Trajectory:
    calls = [ToolCall(step=c.step, tool=c.tool, raw_input=c.raw_input,
                      args=c.args if c.args is not None else parse_arguments(c.raw_input),
                      thought=c.thought, observation=c.observation)
             for c in record.tool_calls if c.status == "ok"]
    checks = [{"name": c.name, "dimension": c.dimension, "detail": c.detail} for c in record.checks if not c.passed]
    traj = episode_trajectory([(t.speaker, t.name, t.text) for t in record.transcript], calls,
                              record.episode_id, source, checks)
    traj.label, traj.intent, traj.scenario = record.label, record.human_intent, record.domain
    traj.goal, traj.risky_outcome, traj.risk_types = record.human_goal, record.risky_outcome, record.risk_types
    return traj


# ---------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------


def read_entries(path: Path) -> list[Any]:
    """The raw entries of a JSON or JSON Lines file (a TrajectoryFileError naming the line when neither)."""
    return _read_entries(path)


def _read_entries(path: Path) -> list[Any]:
    try:  # a regular file only, size capped before reading (maps.files)
        text = read_text(path, MAX_TRAJECTORY_BYTES)
    except FileReadError as exc:
        raise TrajectoryFileError(f"{path}: cannot read file: {exc.problem}") from None
    try:
        data = json.loads(text)
        return data if isinstance(data, list) else [data]
    except RecursionError:
        raise TrajectoryFileError(f"{path}: JSON nested too deeply to be a trajectory file") from None
    except ValueError as whole:
        if not isinstance(whole, json.JSONDecodeError):  # an integer of over 4,300 digits
            raise TrajectoryFileError(f"{path}: not JSON: {whole}") from None
        entries = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                entries.append(json.loads(line))
            except RecursionError:
                raise TrajectoryFileError(f"{path}: line {number}: JSON nested too deeply") from None
            except ValueError as exc:
                if not isinstance(exc, json.JSONDecodeError):
                    raise TrajectoryFileError(f"{path}: line {number}: not JSON: {exc}") from None
                raise TrajectoryFileError(
                    f"{path}: not JSON (line {whole.lineno}: {whole.msg}) nor JSON Lines "
                    f"(line {number}: {exc.msg})") from exc
        if not entries:
            raise TrajectoryFileError(f"{path}: empty file (expected trajectories)")
        return entries


def _as_rjudge(entry: Any, index: int) -> Any:
    """An OpenAI-style ``{"messages": [...]}`` record read as R-Judge turns (id: its position)."""
    if isinstance(entry, dict) and "contents" not in entry and isinstance(entry.get("messages"), list):
        return {"id": index + 1, **entry, "contents": entry["messages"]}
    return entry


def detect_format(entry: Any) -> Format | None:
    if not isinstance(entry, dict):
        return None
    if "contents" in entry or isinstance(entry.get("messages"), list):
        return "rjudge"
    if "intermediate_steps" in entry or ("input" in entry and "output" in entry):
        return "toolemu"
    if "episode_id" in entry and ("transcript" in entry or "tool_calls" in entry):
        return "townsfolk"
    return None


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:3]:
        loc = ".".join(str(p) for p in err["loc"]) or "(entry)"
        parts.append(f"field {loc}: {err['msg']}")
    return "; ".join(parts)


def load_trajectories(path: Path | str, fmt: str = "auto") -> list[Trajectory]:
    """Every trajectory in one file, or a :class:`TrajectoryFileError` naming what is wrong."""
    path = Path(path)
    if not path.is_file():
        raise TrajectoryFileError(f"{path}: no such file")
    return trajectories_from(_read_entries(path), str(path), fmt)


def trajectories_from(entries: list[Any], source: str, fmt: str = "auto") -> list[Trajectory]:
    """Trajectories from already-parsed entries (``source`` names them in errors)."""
    out: list[Trajectory] = []
    for index, entry in enumerate(entries):
        where = f"{source}: entry {index + 1}"
        kind = detect_format(entry) if fmt == "auto" else fmt
        if kind is None:
            keys = ", ".join(sorted(entry)[:8]) if isinstance(entry, dict) else type(entry).__name__
            raise TrajectoryFileError(
                f"{where}: unknown trajectory format (found {keys}); expected R-Judge 'contents' (or OpenAI "
                "'messages'), ToolEmu 'input'/'intermediate_steps'/'output', or townsfolk 'episode_id'/'tool_calls'")
        try:
            if kind == "rjudge":
                out.append(from_rjudge(RJudgeRecord.model_validate(_as_rjudge(entry, index)), source))
            elif kind == "toolemu":
                out.append(from_toolemu(ToolEmuRecord.model_validate(entry), source, index))
            elif kind == "townsfolk":
                if isinstance(entry, dict) and entry.get("error"):
                    continue  # an episode that ended in an error has nothing to judge
                traj = from_townsfolk(TownsfolkRecord.model_validate(entry), source)
                out = [t for t in out if not (t.format == "townsfolk" and t.id == traj.id)] + [traj]
            else:
                raise TrajectoryFileError(f"--format {fmt}: expected one of auto, {', '.join(FORMATS)}")
        except ValidationError as exc:
            raise TrajectoryFileError(f"{where} ({kind}): {_describe(exc)}") from exc
    return out
