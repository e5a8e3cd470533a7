"""The model's roles, one module per role: what is asked (the prompt, written from a few
fields), what shape the answer has (the schema and its checks), what a caller gets when every
attempt failed (the fallback), and the `scripted` backend's answer to the same fields.

A role's prompt builder returns an ``agents.llm.task.Prompt``: the messages with the
``Task`` (fields + scripted answer) behind them, so the offline answers never read the prompt's
wording. Shared pieces: ``common`` (prompt helpers, schema builders), ``checks`` and
``sense_checks`` (what a reader would refuse), ``wording`` and ``plan_times`` (activity phrases,
times in plans). The minds call roles from agents/minds/cognition/ (one module per step).
"""
