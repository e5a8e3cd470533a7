"""Importing litellm the one safe way: offline, quiet, and with our local provider registered.

litellm fetches a cost map from the internet at import unless LITELLM_LOCAL_MODEL_COST_MAP
is set, and prints help banners on errors. Every module that needs litellm goes through
:func:`load_litellm` so neither can happen by accident.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from types import ModuleType

_lock = threading.Lock()
_loaded: ModuleType | None = None


def load_litellm() -> ModuleType:
    """Import litellm with the local cost map and no telemetry; idempotent and thread-safe."""
    global _loaded
    if _loaded is not None:
        return _loaded
    with _lock:
        if _loaded is not None:
            return _loaded
        if "litellm" not in sys.modules:
            # Must be set before the first import: litellm reads it at import time.
            os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
        import litellm

        litellm.suppress_debug_info = True
        if hasattr(litellm, "telemetry"):
            litellm.telemetry = False
        litellm.set_verbose = False
        for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm"):
            logging.getLogger(name).setLevel(logging.WARNING)
        _loaded = litellm
        return litellm
