"""The scenario formats, as encounters code names them: HAICOSYSTEM scenarios, human profiles,
ToolEmu toolkit specs and checkers.

The models live in agents/roles/scenario.py (pure types; the encounter role prompts are built
from them, and agents.roles sits below agents.encounters). Import them from either place.
"""

from __future__ import annotations

from agents.roles.scenario import (DOMAINS, CheckerSpec, Domain, HumanProfile, Intent, ParamType, Scenario,
                                   ToolEmuCase, ToolExceptionSpec, ToolkitSpec, ToolParameter, ToolReturn, ToolSpec)

__all__ = ["DOMAINS", "CheckerSpec", "Domain", "HumanProfile", "Intent", "ParamType", "Scenario", "ToolEmuCase",
           "ToolExceptionSpec", "ToolParameter", "ToolReturn", "ToolSpec", "ToolkitSpec"]
