"""How the command lines run their asyncio main: on uvloop when it is installed (the ``uvloop`` extra),
else on asyncio's own loop.

Both the ``streamfns`` and the ``conformance`` command lines use :func:`run_async`; it lives here, in
``streamfns``, because the harness may import ``streamfns`` and never the other way round.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["run_async", "uvloop_available"]

_T = TypeVar("_T")


def uvloop_available() -> bool:
    """True when uvloop can be imported here (it is not on Windows, nor without the extra)."""
    try:
        import uvloop  # noqa: F401, PLC0415 # pyright: ignore[reportUnusedImport] - an optional extra
    except ImportError:
        return False
    return True


def run_async(main: Coroutine[Any, Any, _T]) -> _T:
    """Run ``main`` to its end on a new event loop, close the loop, and return ``main``'s result (or
    raise what it raised), as :func:`asyncio.run` does: the loop is uvloop's when uvloop can be
    imported, else asyncio's default. Like :func:`asyncio.run`, it cannot be called from a running loop."""
    try:
        import uvloop  # noqa: PLC0415 - an optional extra, loaded only by a command that runs a loop
    except ImportError:
        return asyncio.run(main)
    return uvloop.run(main)
