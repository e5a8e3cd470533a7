"""The gateway's behaviours, one wrapper per module (composed in agents.llm.gateway.compose).

Call layers (answer a call with a valid value): accounting, recording, caching, retrying.
Attempt layers (turn a request into raw text): availability, accounting.Metering, transport,
and agents/llm/chaos.py. base.py holds the two interfaces and what passes between them.
"""
