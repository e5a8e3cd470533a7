"""Trajectories recorded elsewhere, read into one shape the judges score.

Three public shapes and our own are read, each through a pydantic model so a bad file gets
an error naming the file, the entry and the field:

- ``toolemu``: ToolEmu's dumped trajectories (``input``, ``intermediate_steps`` of
  ``[[tool, tool_input, log], observation]``, ``output``; the test case under ``case``).
- ``rjudge``: R-Judge records (``contents``: turns of ``{role: user|agent|environment,
  content | thought + action}``, ``label`` 1 = unsafe); ASSEBench's AgentJudge files use it.
- ``townsfolk``: the lines of an ``eval`` results.jsonl (``transcript`` and ``tool_calls``).

Tool inputs are parsed as JSON objects (Python-literal dicts as a fallback, since R-Judge
actions are often written that way); nothing is truncated.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

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
    toolkits: list[str] = Field(default_factory=list)
    user_name: str = Field(default="", description="who the human is, when the log says (for third-party data)")


# ---------------------------------------------------------------------------
# Tool input parsing
# ---------------------------------------------------------------------------

_ACTION = re.compile(r"^\s*([A-Za-z_][\w.\-]*)\s*(?::\s*|\(\s*)?(\{.*\}|\[.*\])?\s*\)?\s*$", re.S)


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


def split_action(action: str) -> tuple[str, str] | None:
    """``Tool{...}``, ``Tool: {...}``, ``Tool({...})`` or a bare ``Tool()`` -> (tool, input)."""
    if len(action) > 200_000:
        return None
    match = _ACTION.match(action)
    if not match:
        return None
    return match.group(1), (match.group(2) or "")


# ---------------------------------------------------------------------------
# Format models
# ---------------------------------------------------------------------------


class RJudgeTurn(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: Literal["user", "agent", "environment", "assistant", "system", "tool"]
    content: str | None = None
    thought: str | None = None
    action: str | None = None


class RJudgeRecord(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: int | str
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


class TownsfolkRecord(BaseModel):
    model_config = ConfigDict(extra="allow")
    episode_id: str
    transcript: list[TownsfolkTurn] = Field(default_factory=list)
    tool_calls: list[TownsfolkCall] = Field(default_factory=list)
    human_intent: Literal["benign", "malicious"] | None = None
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


def from_rjudge(record: RJudgeRecord, source: str) -> Trajectory:
    traj = Trajectory(id=str(record.id), source=source, format="rjudge", label=record.label,
                      scenario=record.application_scenario or record.scenario)
    pending: ToolCall | None = None
    for turn in _flat(record.contents):
        if turn.role in ("user", "system"):
            text = turn.content or ""
            traj.user_turns.append(text)
            traj.instruction = traj.instruction or text
        elif turn.role in ("agent", "assistant"):
            thought, action = (turn.thought or "").strip(), (turn.action or "").strip()
            observed = thought.startswith("[Observation]")  # some logs put the tool's output here
            if thought and not observed:
                traj.thoughts.append(thought)
            parsed = split_action(action) if action else None
            if parsed and parsed[0] not in ("Complete", "Final Answer", "Respond"):
                pending = ToolCall(step=len(traj.calls) + 1, tool=parsed[0], raw_input=parsed[1],
                                   args=parse_arguments(parsed[1]), thought="" if observed else thought,
                                   observation=thought if observed else "")
                traj.calls.append(pending)
            elif parsed:
                args = parse_arguments(parsed[1]) or {}
                traj.responses.append(str(args.get("response", parsed[1])))
            elif action:
                traj.responses.append(action)
            if turn.content:
                traj.responses.append(turn.content)
        else:
            text = turn.content or ""
            if pending is not None and not pending.observation:
                pending.observation = text
            else:
                traj.user_turns.append(text)
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


def from_townsfolk(record: TownsfolkRecord, source: str) -> Trajectory:
    traj = Trajectory(id=record.episode_id, source=source, format="townsfolk", label=record.label,
                      intent=record.human_intent, scenario=record.domain)
    for turn in record.transcript:
        if turn.speaker == "human":
            traj.user_turns.append(turn.text)
            traj.instruction = traj.instruction or turn.text
            traj.user_name = traj.user_name or turn.name
        else:
            traj.responses.append(turn.text)
    for call in record.tool_calls:
        args = call.args if call.args is not None else parse_arguments(call.raw_input)
        if call.thought:
            traj.thoughts.append(call.thought)
        traj.calls.append(ToolCall(step=call.step, tool=call.tool, raw_input=call.raw_input, args=args,
                                   thought=call.thought, observation=call.observation))
    return traj


# ---------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------


def _read_entries(path: Path) -> list[Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TrajectoryFileError(f"{path}: cannot read file: {exc}") from exc
    try:
        data = json.loads(text)
        return data if isinstance(data, list) else [data]
    except RecursionError:
        raise TrajectoryFileError(f"{path}: JSON nested too deeply to be a trajectory file") from None
    except json.JSONDecodeError as whole:
        entries = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                entries.append(json.loads(line))
            except RecursionError:
                raise TrajectoryFileError(f"{path}: line {number}: JSON nested too deeply") from None
            except json.JSONDecodeError as exc:
                raise TrajectoryFileError(
                    f"{path}: not JSON (line {whole.lineno}: {whole.msg}) nor JSON Lines "
                    f"(line {number}: {exc.msg})") from exc
        if not entries:
            raise TrajectoryFileError(f"{path}: empty file (expected trajectories)")
        return entries


def detect_format(entry: Any) -> Format | None:
    if not isinstance(entry, dict):
        return None
    if "contents" in entry:
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
    entries = _read_entries(path)
    out: list[Trajectory] = []
    for index, entry in enumerate(entries):
        where = f"{path}: entry {index + 1}"
        kind = detect_format(entry) if fmt == "auto" else fmt
        if kind is None:
            keys = ", ".join(sorted(entry)[:8]) if isinstance(entry, dict) else type(entry).__name__
            raise TrajectoryFileError(
                f"{where}: unknown trajectory format (found {keys}); expected R-Judge 'contents', "
                "ToolEmu 'input'/'intermediate_steps'/'output', or townsfolk 'episode_id'/'tool_calls'")
        try:
            if kind == "rjudge":
                out.append(from_rjudge(RJudgeRecord.model_validate(entry), str(path)))
            elif kind == "toolemu":
                out.append(from_toolemu(ToolEmuRecord.model_validate(entry), str(path), index))
            elif kind == "townsfolk":
                if isinstance(entry, dict) and entry.get("error"):
                    continue  # an episode that ended in an error has nothing to judge
                out.append(from_townsfolk(TownsfolkRecord.model_validate(entry), str(path)))
            else:
                raise TrajectoryFileError(f"--format {fmt}: expected one of auto, {', '.join(FORMATS)}")
        except ValidationError as exc:
            raise TrajectoryFileError(f"{where} ({kind}): {_describe(exc)}") from exc
    return out
