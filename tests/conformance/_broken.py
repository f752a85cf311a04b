"""A deliberately broken adapter, to prove the conformance harness catches each defect.

:class:`BrokenAdapter` wraps the real Anthropic adapter (``streamfns.anthropic.stream_anthropic``)
and injects the defects switched on in :class:`Defects`, one at a time or together:

- ``raises_on_500``: iterating raises ``RuntimeError`` when the server answered 500;
- ``done_on_truncation``: a stream cut before its terminal marker ends ``done`` (success inferred from
  EOF), its open blocks closed;
- ``leaks_response``: the HTTP response is never closed, so the connection stays open;
- ``ignores_abort``: ``StreamOptions.signal`` is never looked at;
- ``double_start``: ``start`` is emitted twice;
- ``invents_tool_arguments``: every finished tool call gains an argument the model never sent.

With no defect it behaves exactly like ``stream_anthropic`` (through one shared HTTP client, which
keeps the self-test fast); the harness calls :meth:`BrokenAdapter.aclose` after the run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import httpx

from normalize import (
    AssistantMessage,
    AssistantMessageEvent,
    AssistantMessageEventStream,
    Context,
    DoneEvent,
    ErrorEvent,
    Model,
    StartEvent,
    StreamOptions,
    TextContent,
    TextEndEvent,
    TextStartEvent,
    ThinkingContent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
from streamfns.anthropic import stream_anthropic

__all__ = ["BrokenAdapter", "Defects"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Defects:
    """Which defects to inject (all off: a working adapter)."""

    raises_on_500: bool = False
    done_on_truncation: bool = False
    leaks_response: bool = False
    ignores_abort: bool = False
    double_start: bool = False
    invents_tool_arguments: bool = False

    def any_in_stream(self) -> bool:
        """True when a defect needs the event stream rewritten."""
        return self.raises_on_500 or self.done_on_truncation or self.double_start or self.invents_tool_arguments


class _NeverClosed(httpx.AsyncByteStream):
    """A response body whose ``aclose`` does nothing; the iterators are kept so that garbage
    collection cannot close them either."""

    def __init__(self, inner: httpx.AsyncByteStream, kept: list[Any]) -> None:
        self._inner = inner
        self._kept = kept

    def __aiter__(self) -> AsyncIterator[bytes]:
        iterator = self._inner.__aiter__()
        self._kept.append(iterator)
        return iterator

    async def aclose(self) -> None:
        return  # the defect: the connection is never released


class _LeakyTransport(httpx.AsyncBaseTransport):
    def __init__(self) -> None:
        self._inner = httpx.AsyncHTTPTransport()
        self._streams: list[httpx.AsyncByteStream] = []
        self._iterators: list[Any] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        stream = response.stream
        assert isinstance(stream, httpx.AsyncByteStream)
        self._streams.append(stream)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_NeverClosed(stream, self._iterators),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        for iterator in self._iterators:
            aclose = getattr(iterator, "aclose", None)
            if aclose is not None:
                await aclose()
        for stream in self._streams:
            await stream.aclose()
        await self._inner.aclose()


class BrokenAdapter:
    """A StreamFn with the chosen :class:`Defects` (see the module docstring)."""

    def __init__(self, defects: Defects | None = None) -> None:
        self.defects = defects or Defects()
        transport = _LeakyTransport() if self.defects.leaks_response else httpx.AsyncHTTPTransport()
        self._client = httpx.AsyncClient(transport=transport)

    def __call__(
        self, model: Model, context: Context, options: StreamOptions | None = None, /
    ) -> AssistantMessageEventStream | AsyncIterator[AssistantMessageEvent]:
        """Stream through the Anthropic adapter, with the defects applied."""
        chosen = options or StreamOptions()
        chosen = dataclasses.replace(chosen, http_client=self._client)
        if self.defects.ignores_abort:
            chosen = dataclasses.replace(chosen, signal=None)
        inner = stream_anthropic(model, context, chosen)
        if not self.defects.any_in_stream():
            return inner
        return self._rewrite(inner)

    async def aclose(self) -> None:
        """Close the shared client (and whatever the leaky transport kept open)."""
        await self._client.aclose()

    async def _rewrite(self, inner: AssistantMessageEventStream) -> AsyncIterator[AssistantMessageEvent]:
        defects = self.defects
        open_blocks: dict[int, str] = {}
        try:
            async for event in inner:
                if isinstance(event, TextStartEvent | ThinkingStartEvent | ToolCallStartEvent):
                    open_blocks[event.content_index] = event.type.removesuffix("_start")
                elif isinstance(event, TextEndEvent | ThinkingEndEvent | ToolCallEndEvent):
                    open_blocks.pop(event.content_index, None)
                if isinstance(event, StartEvent) and defects.double_start:
                    yield event
                    yield StartEvent(event.partial)
                    continue
                if isinstance(event, ToolCallEndEvent) and defects.invents_tool_arguments:
                    event.tool_call.arguments = {**event.tool_call.arguments, "confidence": "high"}
                if isinstance(event, ErrorEvent):
                    info = event.error.error_info
                    if defects.raises_on_500 and info is not None and info.status == 500:
                        raise RuntimeError("the server answered 500")
                    if defects.done_on_truncation and info is not None and info.kind == "truncated":
                        for done_event in _pretend_done(event.error, open_blocks):
                            yield done_event
                        return
                yield event
        finally:
            await inner.aclose()


def _pretend_done(message: AssistantMessage, open_blocks: dict[int, str]) -> list[AssistantMessageEvent]:
    """End the open blocks and declare success: what an adapter that trusts EOF does."""
    events: list[AssistantMessageEvent] = []
    for index in sorted(open_blocks):
        block = message.content[index]
        if isinstance(block, TextContent):
            events.append(TextEndEvent(index, block.text, message))
        elif isinstance(block, ThinkingContent):
            events.append(ThinkingEndEvent(index, block.thinking, message))
        else:
            events.append(ToolCallEndEvent(index, block, message))
    message.stop_reason = "stop"
    message.error_message = None
    message.error_info = None
    events.append(DoneEvent("stop", message))
    return events
