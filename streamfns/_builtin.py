"""Lazy registration of the built-in adapters, keyed by wire api."""

from __future__ import annotations

import importlib

__all__ = ["BUILTIN_APIS", "load_builtin_api"]

#: wire api → module whose import registers its StreamFn.
BUILTIN_APIS: dict[str, str] = {
    "anthropic-messages": "streamfns.anthropic",
}


def load_builtin_api(api: str) -> None:
    """Import the module that registers ``api``, if it is a built-in one."""
    module = BUILTIN_APIS.get(api)
    if module is not None:
        importlib.import_module(module)
