"""Safe-action training records from risky episodes, by self-reflection (AutoSafe).

For each episode judged risky: find the first unsafe step of the assistant, show the model
the trajectory up to it with the judge's reasoning, and ask it to reflect and propose the
action it should have taken. The proposal is kept only if it is verifiably different and
safe by construction: a reply (decline, ask, verify) or a read-only lookup, never the
same call again and never a consequential tool. Each kept proposal becomes a chat-format
record: the assistant's context up to the unsafe step, then the safe step.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, Field

from maps.contracts import LanguageModel, Message
from agents.roles import encounters_synthesis as prompts
from agents.roles.encounters_roles import RESPOND, AssistantStep, format_step

_CONSEQUENTIAL = {"transfer", "send", "pay", "delete", "remove", "share", "post", "cancel", "grant",
                  "update", "execute", "dispose", "give", "withdraw", "sell", "buy", "forward", "publish",
                  "book", "create", "set", "manage", "write"}
_STEP = re.compile(r"^Thought: (.*?)\nAction: (\S+)\nAction Input: (.*)$", re.S)


class TrainingRecord(BaseModel):
    messages: list[Message]
    metadata: dict[str, Any] = Field(default_factory=dict)


class ExportReport(BaseModel):
    risky_episodes: int = 0
    records: list[TrainingRecord] = Field(default_factory=list)
    rejected: dict[str, int] = Field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return {"risky_episodes": self.risky_episodes, "exported": len(self.records),
                "rejected": sum(self.rejected.values()), "rejected_by_reason": self.rejected}


def _steps(messages: list[Message]) -> list[tuple[int, str, str]]:
    """(message index, action, action input) for each assistant step."""
    out = []
    for index, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        match = _STEP.match(message.get("content", ""))
        if match:
            out.append((index, match.group(2), match.group(3)))
    return out


def _consequential(action: str) -> bool:
    return bool({w.lower() for w in re.findall(r"[A-Z][a-z]+", action)} & _CONSEQUENTIAL)


def verify(safe: prompts.SafeAction, risky_action: str, risky_input: str, tools: set[str]) -> str | None:
    """None when the proposal is acceptable, else the reason it is rejected."""
    if not safe.action or not safe.reflection.strip():
        return "no_proposal"
    if safe.action == risky_action and safe.action_input.strip() == risky_input.strip():
        return "same_as_risky"
    if safe.action == RESPOND:
        return None if safe.action_input.strip() else "empty_reply"
    if safe.action not in tools:
        return "unknown_tool"
    if _consequential(safe.action):
        return "consequential_tool"
    return None


def _render(messages: list[Message], limit: int = 4000) -> str:
    text = "\n".join(f"[{m['role']}] {m['content']}" for m in messages[1:])
    return text[-limit:]


async def export_record(record: dict[str, Any], llm: LanguageModel) -> tuple[TrainingRecord | None, str]:
    """One risky episode -> a training record, or (None, reason)."""
    messages: list[Message] = record.get("assistant_messages") or []
    steps = _steps(messages)
    if not steps:
        return None, "no_trajectory"
    why = "; ".join(
        f"{dim}: {record.get('reasoning', {}).get(dim, '')}" for dim in record.get("risky_dimensions", [])
    ) or "judged risky"
    located = await llm.acomplete(
        "locate_risky_step",
        prompts.locate_messages([messages[i]["content"] for i, _, _ in steps], why),
        prompts.RiskyStep,
        prompts.RiskyStep(step=0, why="(no answer: first step)"),
        temperature=0.0,
        max_tokens=120,
    )
    position = min(located.step, len(steps) - 1)
    index, action, action_input = steps[position]
    context = messages[:index]
    tools = set(re.findall(r"^- (\w+)\(", messages[0]["content"], re.M)) if messages else set()
    safe = await llm.acomplete(
        "reflect_safe_action",
        prompts.reflect_messages(_render(context), messages[index]["content"], why),
        prompts.SafeAction,
        prompts.SAFE_FALLBACK,
        temperature=0.3,
        max_tokens=400,
    )
    problem = verify(safe, action, action_input, tools)
    if problem:
        return None, problem
    step = AssistantStep(thought=safe.thought, action=safe.action, action_input=safe.action_input)
    return (
        TrainingRecord(
            messages=[*context, {"role": "assistant", "content": format_step(step)}],
            metadata={
                "episode_id": record.get("episode_id"),
                "scenario": record.get("scenario"),
                "domain": record.get("domain"),
                "model": record.get("model"),
                "risky_dimensions": record.get("risky_dimensions", []),
                "unsafe_step": messages[index]["content"],
                "unsafe_step_why": located.why,
                "reflection": safe.reflection,
            },
        ),
        "",
    )


async def export_safe_actions(records: Iterable[dict[str, Any]], llm: LanguageModel) -> ExportReport:
    report = ExportReport()
    for record in records:
        if record.get("error") or not record.get("risky"):
            continue
        report.risky_episodes += 1
        item, reason = await export_record(record, llm)
        if item is None:
            report.rejected[reason] = report.rejected.get(reason, 0) + 1
        else:
            report.records.append(item)
    return report
