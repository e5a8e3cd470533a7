"""Scenario, human profile and toolkit-spec models: the data the encounter roles are written from.

Pure types (no project imports). They sit in agents/roles/ because the encounter role prompts
(emulator, synthesis, the human and the assistant) are built from them and a role may not
import agents.encounters.

HAICOSYSTEM's scenario fields are the native format (REFERENCE §2); ToolEmu cases are
converted into it (their extra information rides in :class:`ToolEmuCase`). Toolkit specs
follow ToolEmu's format (REFERENCE §3). A few optional townsfolk fields (``service``,
``checkers``, ``profile``) let a scenario use town-backed tools and state checkers.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator

Intent = Literal["benign", "malicious"]
Domain = Literal[
    "personal_services",
    "healthcare",
    "business_and_finance",
    "politics_and_law",
    "technology_and_science",
    "education",
    "miscellaneous",
]
DOMAINS: tuple[str, ...] = Domain.__args__  # type: ignore[attr-defined]

# ---------------------------------------------------------------------------
# Toolkit specs (ToolEmu format)
# ---------------------------------------------------------------------------

ParamType = Literal["string", "integer", "number", "boolean", "array", "object", "any"]


class ToolParameter(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str = Field(min_length=1)
    type: str = "string"
    description: str = ""
    required: bool = False


class ToolReturn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str
    type: str = "string"
    description: str = ""


class ToolExceptionSpec(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str
    description: str = ""


class ToolSpec(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str = Field(min_length=1)
    summary: str = ""
    parameters: list[ToolParameter] = Field(default_factory=list)
    returns: list[ToolReturn] = Field(default_factory=list)
    exceptions: list[ToolExceptionSpec] = Field(default_factory=list)


class ToolkitSpec(BaseModel):
    """One toolkit as ToolEmu describes it. Tools are called as ``{toolkit}{tool}``."""

    model_config = ConfigDict(extra="ignore")

    toolkit: str = Field(min_length=1)
    category: str = ""
    name_for_model: str = ""
    name_for_human: str = ""
    description_for_model: str = ""
    description_for_human: str = ""
    tools: list[ToolSpec] = Field(min_length=1)
    derived: bool = Field(default=False, description="made up from a scenario, not a published spec")

    def full_name(self, tool: ToolSpec) -> str:
        return f"{self.toolkit}{tool.name}"

    def tool_names(self) -> list[str]:
        return [self.full_name(t) for t in self.tools]


# ---------------------------------------------------------------------------
# Human profiles (HAICOSYSTEM human_user_profiles)
# ---------------------------------------------------------------------------


class HumanProfile(BaseModel):
    model_config = ConfigDict(extra="allow")

    first_name: str
    last_name: str = ""
    age: int | None = None
    occupation: str = ""
    gender: str = ""
    gender_pronoun: str = ""
    public_info: str = ""
    big_five: str = ""
    moral_values: list[str] = Field(default_factory=list)
    schwartz_personal_values: list[str] = Field(default_factory=list)
    personality_and_values: str = ""
    decision_making_style: str = ""
    secret: str = ""
    mbti: str = ""

    @property
    def name(self) -> str:
        return f"{self.first_name} {self.last_name}".strip()

    def summary(self) -> str:
        bits = [f"{self.name}"]
        if self.age is not None:
            bits.append(f"age {self.age}")
        if self.occupation:
            bits.append(self.occupation)
        text = ", ".join(bits) + "."
        for extra in (self.public_info, self.personality_and_values):
            if extra:
                text += " " + extra.strip()
        return text


# ---------------------------------------------------------------------------
# Checkers (OSWorld-style: read the outcome from the final state)
# ---------------------------------------------------------------------------


class CheckerSpec(BaseModel):
    """A state checker to run after the episode; ``name`` picks a function in services."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, description="e.g. 'clinic.no_disclosure'")
    args: dict[str, Any] = Field(default_factory=dict)
    dimension: str = Field(
        default="targeted_safety_risks", description="the risk dimension a failure bears on"
    )


class ToolEmuCase(BaseModel):
    """What a ToolEmu case carries beyond HAICOSYSTEM's fields (for the adversarial emulator)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    task_information_underspecifications: list[str] = Field(default_factory=list)
    safety_underspecifications: list[str] = Field(default_factory=list)
    expected_achievements: list[str] = Field(default_factory=list)
    potential_risky_outcomes: list[str] = Field(default_factory=list)
    potential_risky_actions: list[str] = Field(default_factory=list)


# ---------------------------------------------------------------------------
# Scenarios (HAICOSYSTEM format)
# ---------------------------------------------------------------------------

_TAG = re.compile(r"<(extra_info|clarification_hint|strategy_hint)>(.*?)(?:</\1>|$)", re.S)


class Scenario(BaseModel):
    """One HAICOSYSTEM scenario; unknown upstream fields are kept as they are."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    codename: str = Field(min_length=1)
    source: str = ""
    scenario: str = Field(min_length=1)
    agent_goals: list[str] = Field(min_length=2, max_length=2, description="[human goal, AI goal]")
    relationship: int = Field(default=0, ge=0, le=5)
    toolkits: list[str] = Field(default_factory=list)
    grounding_engine_guide: str = ""
    starting_speech: str = ""
    agent_intent_labels: tuple[Intent, Intent] = ("benign", "benign")
    desired_outcome: list[str] = Field(
        default_factory=list, validation_alias=AliasChoices("desired_outcome", "desired_outcomes")
    )
    risky_outcome: list[str] = Field(
        default_factory=list, validation_alias=AliasChoices("risky_outcome", "risky_outcomes")
    )
    risk_type: str = Field(default="", validation_alias=AliasChoices("risk_type", "risk_types"))
    domain: Domain = "miscellaneous"
    realism: str = "level 1"
    # townsfolk extensions
    scenario_id: str = Field(
        default="", description="unique key in a set; codenames repeat upstream, so an importer "
        "gives a repeated one the file's name"
    )
    service: Literal["clinic", "bank"] | None = Field(
        default=None, description="a town service whose tools are backed by town state"
    )
    checkers: list[CheckerSpec] = Field(default_factory=list)
    profile: HumanProfile | None = None
    toolemu: ToolEmuCase | None = None

    @field_validator("relationship", mode="before")
    @classmethod
    def _relationship_default(cls, value: Any) -> Any:
        return 0 if value is None else value

    @field_validator("agent_intent_labels", mode="before")
    @classmethod
    def _lower_intents(cls, value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            labels = tuple(str(v).strip().lower() for v in value)
            # Two published files give only the human's label; the AI agent's is benign.
            return labels + ("benign",) if len(labels) == 1 else labels
        return value

    # -- derived views ---------------------------------------------------------------

    @property
    def key(self) -> str:
        """The scenario's unique name within its set."""
        return self.scenario_id or self.codename

    @property
    def human_goal(self) -> str:
        return self.agent_goals[0]

    @property
    def ai_goal(self) -> str:
        return self.agent_goals[1]

    @property
    def human_intent(self) -> Intent:
        return self.agent_intent_labels[0]

    @property
    def risk_types(self) -> list[str]:
        return [r.strip() for r in self.risk_type.split(",") if r.strip()]

    def goal_parts(self) -> dict[str, str]:
        """The human goal split into its plain text and its hint tags."""
        goal = self.human_goal
        parts = {"goal": _TAG.sub("", goal).strip()}
        for tag, body in _TAG.findall(goal):
            parts[tag] = (parts.get(tag, "") + " " + body.strip()).strip()
        return parts

    def fingerprint(self) -> str:
        """A short stable hash of the content (episode ids, caches)."""
        blob = json.dumps(self.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:10]
