"""Prompts, output schemas and scripted answers, one module per role.

Logic lives elsewhere (agents/cognition, agents/encounters); a prompt module only says what
is asked, what shape the answer has, and how the `scripted` backend answers it plausibly.
"""
