"""Modules imported on first use, so that ``ppo-submit --help`` starts in tens of milliseconds.

Rich (tables, live status) and httpx (the HTTP client) take most of the client's start-up;
commands that never print a table or send a request never pay for them. This is the standard
library's ``importlib.util.LazyLoader`` recipe.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy_import(name: str) -> ModuleType:
    """``name`` as a module whose code runs on the first attribute access (or at once if it is
    already imported)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
