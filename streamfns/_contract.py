"""The StreamFn contract: the one callable type every adapter provides.

It has a module of its own, below everything else in ``streamfns``, because both the adapter
declaration (:class:`streamfns.kit.Adapter` names its StreamFn) and the registry (which dispatches
to them) need it; the public name is :data:`streamfns.StreamFn`.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Protocol

from normalize import AssistantMessageEventStream, Context, Model, StreamOptions

__all__ = ["StreamFn"]


class StreamFn(Protocol):
    """Turns a request into an event stream.

    Contract: calling it and iterating its stream never raise an ``Exception``; every failure ends
    the stream with an ``error`` event. It may return the stream directly or an awaitable of it.
    """

    def __call__(
        self, model: Model, context: Context, options: StreamOptions | None = None, /
    ) -> AssistantMessageEventStream | Awaitable[AssistantMessageEventStream]: ...
