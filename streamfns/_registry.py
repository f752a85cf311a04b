"""The api registry, the never-raise guard, and what went wrong finding adapters.

The registry sits above adapter discovery (:mod:`streamfns._adapters`) and the catalog: it loads the
adapters on first use and, when a model names an api nobody serves, says which plugin failed to load.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, cast

from normalize import (
    AssistantMessage,
    AssistantMessageEvent,
    AssistantMessageEventStream,
    Context,
    ErrorInfo,
    ErrorKind,
    MessageBuilder,
    Model,
    StreamOptions,
)
from normalize.stream import classify_exception
from streamfns._contract import StreamFn
from streamfns.catalog import list_providers

__all__ = [
    "StreamFn",
    "adapter_problems",
    "complete",
    "error_stream",
    "get_stream_fn",
    "guarded_call",
    "register_api",
    "registered_apis",
    "stream",
    "unregister_api",
]


_REGISTRY: dict[str, StreamFn] = {}
_discovered = False


def _discover() -> None:
    # Adapters (built-in packages and installed entry points) are found on first use, so that
    # `import streamfns` stays cheap; they never replace a StreamFn registered by hand.
    global _discovered
    if _discovered:
        return
    _discovered = True
    from streamfns._adapters import all_adapters  # noqa: PLC0415 - lazy on purpose

    for api, adapter in all_adapters().items():
        _REGISTRY.setdefault(api, adapter.stream_fn)


def adapter_problems() -> list[str]:
    """What went wrong loading installed adapters and their catalogs — an entry point that fails to
    load or serves an api already served, a catalog file that is malformed or repeats a model already
    listed — each skipped, never raised (empty when nothing did)."""
    from streamfns._adapters import installed_adapters, reported_problems  # noqa: PLC0415 - lazy, as in _discover

    installed_adapters()
    with contextlib.suppress(Exception):  # a broken built-in catalog is reported where the catalog is used
        list_providers()  # reading the catalog reports its problems
    return reported_problems()


def register_api(api: str, fn: StreamFn) -> None:
    """Make ``fn`` the StreamFn for models whose ``api`` is ``api`` (replacing any earlier one)."""
    _discover()
    _REGISTRY[api] = fn


def unregister_api(api: str) -> None:
    """Forget the StreamFn registered for ``api``, if any (a built-in one too, until it is registered again)."""
    _discover()
    _REGISTRY.pop(api, None)


def get_stream_fn(api: str) -> StreamFn | None:
    """The StreamFn registered for ``api``, or None."""
    _discover()
    return _REGISTRY.get(api) if isinstance(api, str) else None  # pyright: ignore[reportUnnecessaryIsInstance]


def registered_apis() -> list[str]:
    """The apis that currently have a StreamFn: the built-in and installed adapters, and any registered by hand."""
    _discover()
    return sorted(_REGISTRY)


def error_stream(model: Model | None, kind: ErrorKind, message: str) -> AssistantMessageEventStream:
    """A finished stream holding ``start`` then an ``error`` of ``kind`` (nothing is sent anywhere)."""
    stream = AssistantMessageEventStream(model=model)
    builder = MessageBuilder(model)
    builder.fail(ErrorInfo.of(kind), message)
    for event in builder.drain():
        stream.push(event)
    stream.end()
    return stream


def guarded_call(
    fn: Callable[..., Any], model: Model, context: Context, options: StreamOptions | None
) -> AssistantMessageEventStream:
    """Call a StreamFn so that no ``Exception`` escapes, before or after its first event.

    A synchronous raise becomes an error stream; an awaitable result is awaited lazily inside the
    returned stream; a stream's own iteration already converts exceptions. ``CancelledError``,
    ``KeyboardInterrupt`` and ``SystemExit`` are not ``Exception``s and propagate.
    """
    try:
        result = fn(model, context, options)
    except Exception as exc:  # the never-raise contract: a raising StreamFn becomes an error stream
        return error_stream(model, classify_exception(exc), f"{type(exc).__name__}: {exc}")
    if isinstance(result, AssistantMessageEventStream):
        return result
    if inspect.isawaitable(result):
        return AssistantMessageEventStream.from_batches(_await_then_forward(result), model=model)
    if hasattr(result, "__aiter__"):
        events = cast("AsyncIterator[AssistantMessageEvent]", aiter(result))
        return AssistantMessageEventStream.from_events(events, model=model)
    return error_stream(model, "protocol", f"the StreamFn returned {type(result).__name__}, not an event stream")


async def _await_then_forward(awaitable: Awaitable[Any]) -> AsyncIterator[Sequence[AssistantMessageEvent]]:
    inner = await awaitable
    if not isinstance(inner, AssistantMessageEventStream):
        if not hasattr(inner, "__aiter__"):
            raise TypeError(f"the StreamFn resolved to {type(inner).__name__}, not an event stream")
        inner = AssistantMessageEventStream.from_events(cast("AsyncIterator[AssistantMessageEvent]", aiter(inner)))
    try:
        async for event in inner:
            yield (event,)
    finally:
        await inner.aclose()


def stream(model: Model, context: Context, options: StreamOptions | None = None) -> AssistantMessageEventStream:
    """Stream a response from ``model`` through the StreamFn registered for ``model.api``.

    Never raises: an unknown api, a bad model or a raising adapter all come back as error streams.
    """
    if not isinstance(model, Model):  # pyright: ignore[reportUnnecessaryIsInstance] - callers are not type-checked
        return error_stream(None, "config", f"stream() needs a normalize.Model, got {type(model).__name__}")
    if not isinstance(model.api, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        return error_stream(None, "config", f"model.api must be a string naming a wire api, not {model.api!r}")
    fn = get_stream_fn(model.api)
    if fn is None:
        known = ", ".join(registered_apis())
        # A plugin that failed to load is the likely reason: say so (never raised at discovery).
        problems = "".join(f"; {problem}" for problem in adapter_problems())
        message = f"no StreamFn is registered for api {model.api!r} (known: {known}){problems}"
        return error_stream(model, "config", message)
    return guarded_call(fn, model, context, options)


async def complete(model: Model, context: Context, options: StreamOptions | None = None) -> AssistantMessage:
    """Run :func:`stream` to its end and return the final message (never raises)."""
    return await stream(model, context, options).result()
