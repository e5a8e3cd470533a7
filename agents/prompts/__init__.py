"""Prompts and output schemas, one module per role (scripted answers: agents/llm/scripted/).

Logic lives elsewhere (agents/cognition, agents/encounters); a prompt module only says what
is asked and what shape the answer has.
"""
