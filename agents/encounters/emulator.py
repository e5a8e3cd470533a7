"""The grounding engine: route a tool call to town state or to the LLM emulator.

Every call is checked first (the tool exists, the Action Input is a JSON object, the
arguments fit the spec); a bad call returns an exception text, as ToolEmu's and
HAICOSYSTEM's engines do, and costs no model call. Valid calls to a town-backed toolkit run
on the town's state; the rest are emulated (standard or adversarial mode).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field

from agents.encounters.services import ServiceSession
from agents.encounters.specs import ToolCallError, check_arguments, parse_action_input, tool_index
from agents.roles import encounters_emulator as prompts
from agents.roles.scenario import Scenario, ToolkitSpec
from maps.contracts import LanguageModel

EmulatorMode = Literal["standard", "adversarial"]


class ToolCallRecord(BaseModel):
    """One call as the tool log keeps it."""

    step: int
    tool: str
    raw_input: str
    args: dict[str, Any] | None = None
    observation: str
    status: Literal["ok", "error"]
    error: str = Field(default="", description="exception name when status is error")
    backend: Literal["town", "emulator", "rejected"]
    thought: str = ""


def _error_name(observation: str) -> str:
    try:
        data = json.loads(observation)
    except json.JSONDecodeError:
        return ""
    if isinstance(data, dict) and isinstance(data.get("error"), str):
        return data["error"].split(":", 1)[0]
    return ""


class ToolRouter:
    """Plays the tools of one episode and keeps its tool log."""

    def __init__(
        self,
        scenario: Scenario,
        specs: list[ToolkitSpec],
        llm: LanguageModel,
        mode: EmulatorMode = "standard",
        services: dict[str, ServiceSession] | None = None,
    ):
        self.scenario = scenario
        self.specs = specs
        self.index = tool_index(specs)
        self.llm = llm
        self.mode = mode
        self.services = services or {}  # toolkit name -> session on town state
        self.log: list[ToolCallRecord] = []
        self.emulator_failures = 0

    @property
    def tool_names(self) -> list[str]:
        return list(self.index)

    async def call(self, action: str, raw_input: str, thought: str = "") -> ToolCallRecord:
        step = len(self.log) + 1
        args: dict[str, Any] | None = None
        backend: Literal["town", "emulator", "rejected"] = "rejected"
        try:
            if action not in self.index:
                raise ToolCallError(
                    "InvalidRequestException",
                    f"tool '{action}' does not exist; available tools: {', '.join(self.index) or 'none'}",
                )
            spec, tool = self.index[action]
            args = parse_action_input(raw_input)
            check_arguments(tool, args)
            session = self.services.get(spec.toolkit)
            if session is not None:
                backend = "town"
                observation = session.call(tool.name, args)
            else:
                backend = "emulator"
                observation = await self._emulate(spec, tool, args)
        except ToolCallError as exc:
            observation = exc.observation()
        error = _error_name(observation)
        record = ToolCallRecord(
            step=step,
            tool=action,
            raw_input=raw_input,
            args=args,
            observation=observation,
            status="error" if error else "ok",
            error=error,
            backend=backend,
            thought=thought,
        )
        self.log.append(record)
        return record

    async def _emulate(self, spec: ToolkitSpec, tool: Any, args: dict[str, Any]) -> str:
        history = [(r.tool, r.raw_input, r.observation) for r in self.log]
        messages = prompts.emulate_messages(self.scenario, spec, tool, args, history, self.mode)
        answer = await self.llm.acomplete(
            "emulate_tool", messages, prompts.EmulatorOutput, prompts.EMULATOR_FALLBACK,
            temperature=0.0, max_tokens=600,
        )
        text = answer.observation.strip()
        if not text:
            self.emulator_failures += 1
            return json.dumps({"error": "EmulatorUnavailable: the tool could not be played"})
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = {"output": text}
        if not isinstance(value, dict):
            value = {"output": value}
        return json.dumps(value, ensure_ascii=False)
