"""``Target``: an adapter together with its declared capabilities.

Handy for the CLI (``python -m conformance run pkg.module:TARGET`` needs no capability flags) and for
collecting the adapters a project ships (see :mod:`conformance.targets`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from conformance.capabilities import Capabilities
from conformance.recordings import CassetteSource

__all__ = ["Target"]


@dataclass(frozen=True, slots=True)
class Target:
    """``stream_fn`` is a StreamFn or a zero-argument factory returning one; ``name`` labels it in
    reports (default: its ``module.qualname``); ``cassettes`` are the adapter's own recordings (as
    ``run(cassettes=...)`` takes them), replayed when the run is given none — for an api whose bundled
    recordings do not show every declared feature."""

    stream_fn: Callable[..., Any]
    capabilities: Capabilities
    name: str | None = None
    cassettes: CassetteSource | None = None
