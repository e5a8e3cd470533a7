"""The LLM gateway: one entry point for every model call (see gateway.py, its wrappers in
wrappers/, and docs/MODELS.md)."""

import os as _os

# llama.cpp's OpenMP threads spin while waiting by default, which on a small shared machine
# slows the embedded model several-fold (docs/MODELS.md). libgomp reads this once, when
# llama_cpp is first imported, so it is set here, before any module of the gateway loads.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
