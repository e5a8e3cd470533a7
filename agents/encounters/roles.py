"""The two speaking roles of an encounter: the simulated human and the assistant under test.

The human follows the scenario's goal and hints (or, in the town, a resident's persona and
memories). The assistant works in ToolEmu's loop: a thought, an action (a tool or Respond)
and an action input, repeated until it responds to the human; it never sees the intents,
the outcomes or the grounding guide.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from pydantic import BaseModel, create_model

from agents.encounters.emulator import ToolCallRecord, ToolRouter
from agents.roles import encounters_roles as prompts
from agents.roles.scenario import Scenario
from maps.contracts import LanguageModel, Message


class Turn(BaseModel):
    speaker: Literal["human", "assistant"]
    name: str
    text: str


EventSink = Callable[[str, dict[str, Any]], Awaitable[None] | None]


class SimulatedHuman:
    """The human side: benign or malicious per the scenario, speaking in the first person."""

    def __init__(
        self,
        llm: LanguageModel,
        scenario: Scenario,
        name: str,
        profile: str = "",
        memories: list[str] | None = None,
    ):
        self.llm = llm
        self.scenario = scenario
        self.name = name
        parts = scenario.goal_parts()
        persistent = scenario.human_intent == "malicious"
        request = scenario.starting_speech or prompts.opening_request(parts, scenario.scenario)
        self.system = prompts.human_system(
            name, profile, scenario.scenario, parts, request, persistent, memories
        )
        self.brief = prompts.human_brief(parts, request, persistent)

    def messages(self, transcript: list[Turn]) -> list[Message]:
        """The human's next call (a Prompt: the messages and the task its scripted answer reads)."""
        return prompts.human_prompt(self.system, self.brief, [(turn.speaker, turn.text) for turn in transcript])

    async def speak(self, transcript: list[Turn]) -> prompts.HumanTurn:
        if not transcript and self.scenario.starting_speech:
            return prompts.HumanTurn(text=self.scenario.starting_speech, leave=False)
        turn = await self.llm.acomplete(
            "encounter_human", self.messages(transcript), prompts.HumanTurn, prompts.HUMAN_FALLBACK,
            temperature=0.7, max_tokens=200,
        )
        if not turn.text.strip():
            return prompts.HumanTurn(text="...", leave=True)
        return turn


def step_schema(tool_names: list[str]) -> type[prompts.AssistantStep]:
    """AssistantStep with ``action`` restricted to this episode's tools (helps small models);
    one class per tool set, so its JSON schema is computed once."""
    return _step_schema(tuple(tool_names))


@functools.lru_cache(maxsize=512)
def _step_schema(tool_names: tuple[str, ...]) -> type[prompts.AssistantStep]:
    choices = tool_names + (prompts.RESPOND,)
    return create_model(  # type: ignore[call-overload]
        "AssistantStep",
        __base__=prompts.AssistantStep,
        action=(Literal[choices], ...),  # type: ignore[valid-type]
    )


class AssistantUnderTest:
    """The AI assistant: any LanguageModel, a thought/action/action-input tool loop."""

    def __init__(
        self,
        llm: LanguageModel,
        scenario: Scenario,
        router: ToolRouter,
        user_name: str,
        max_steps: int = 5,
    ):
        self.llm = llm
        self.router = router
        self.max_steps = max_steps
        self.schema = step_schema(router.tool_names)
        self.system = prompts.assistant_system(
            scenario.ai_goal, user_name, prompts.describe_tools(router.specs)
        )
        self.user_name = user_name
        self.tools = prompts.tool_views(router.specs)
        self.turns: list[prompts.AssistantTurn] = []  # ('human' | 'step' | 'observation', text)

    @property
    def history(self) -> list[Message]:
        """The conversation as the assistant's messages (what it was shown, and its steps)."""
        return prompts.assistant_messages(self.system, self.turns)

    async def reply(self, human_text: str, emit: EventSink | None = None) -> tuple[str, list[ToolCallRecord]]:
        """Take one turn: tool steps until a Respond (or the step limit); returns the reply."""
        self.turns.append(("human", human_text))
        calls: list[ToolCallRecord] = []
        for _ in range(self.max_steps):
            fallback = self.schema(**prompts.assistant_fallback().model_dump())
            step = await self.llm.acomplete(
                "encounter_assistant", prompts.assistant_prompt(self.system, self.turns, self.user_name, self.tools),
                self.schema, fallback, temperature=0.0, max_tokens=400,
            )
            self.turns.append(("step", prompts.format_step(step)))
            if step.action == prompts.RESPOND:
                return step.action_input.strip() or "...", calls
            record = await self.router.call(step.action, step.action_input, step.thought)
            calls.append(record)
            if emit is not None:
                result = emit("tool", record.model_dump())
                if result is not None:
                    await result
            self.turns.append(("observation", record.observation))
        text = "I'm sorry, I could not finish that within my step limit."
        self.turns.append(("step", prompts.format_step(
            prompts.AssistantStep(thought="Step limit reached.", action=prompts.RESPOND, action_input=text))))
        return text, calls
