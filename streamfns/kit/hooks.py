"""Calling the caller's hooks (``on_payload``, ``on_response``): sync or async, the same way."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["call_hook"]


async def call_hook(hook: Callable[..., Any], *args: Any) -> Any:
    """Call ``hook(*args)`` and await its result when it is awaitable."""
    result = hook(*args)
    if inspect.isawaitable(result):
        result = await result
    return result
