"""The Anthropic Messages StreamFn (api ``anthropic-messages``).

``stream_anthropic`` speaks the wire protocol itself (no SDK): ``request.py`` renders the payload,
``decode.py`` maps events to the builder, and the shared ``streamfns._http`` does HTTP, retries,
abort and timeouts. The API key comes from ``StreamOptions.api_key`` or ``ANTHROPIC_API_KEY``; with
neither, the stream ends ``error`` (kind ``auth``) and nothing is sent.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncGenerator, Sequence

from normalize import (
    AssistantMessageEvent,
    AssistantMessageEventStream,
    Context,
    ErrorInfo,
    MessageBuilder,
    Model,
    StreamOptions,
)
from streamfns._http import SseRequest, run_sse
from streamfns._registry import register_api
from streamfns.anthropic.decode import AnthropicDecoder, map_stop_reason
from streamfns.anthropic.errors import parse_error_body
from streamfns.anthropic.request import AnthropicRequest, anthropic_tool_call_id, build_request

__all__ = [
    "API",
    "AnthropicDecoder",
    "AnthropicRequest",
    "anthropic_tool_call_id",
    "build_request",
    "map_stop_reason",
    "parse_error_body",
    "stream_anthropic",
]

API = "anthropic-messages"


def stream_anthropic(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AssistantMessageEventStream:
    """Stream a Messages API response for ``model`` (see the module docstring). Never raises."""
    return AssistantMessageEventStream.from_batches(_run(model, context, options or StreamOptions()), model=model)


async def _run(
    model: Model, context: Context, options: StreamOptions
) -> AsyncGenerator[Sequence[AssistantMessageEvent], None]:
    builder = MessageBuilder(model)
    signal = options.signal
    if signal is not None and signal.aborted:
        builder.abort(signal.reason)
        yield builder.drain()
        return
    api_key = (options.api_key or os.environ.get("ANTHROPIC_API_KEY") or "").strip()
    if not api_key:
        builder.fail(
            ErrorInfo.of("auth"), "no Anthropic API key: set StreamOptions.api_key or the ANTHROPIC_API_KEY variable"
        )
        yield builder.drain()
        return
    if not (api_key.isascii() and api_key.isprintable()):
        # Said without quoting the key: a key read from a file with stray bytes must not leak.
        builder.fail(ErrorInfo.of("auth"), "the Anthropic API key contains characters that cannot be sent in a header")
        yield builder.drain()
        return
    try:
        request = build_request(model, context, options, api_key=api_key)
    except (TypeError, ValueError, KeyError) as exc:
        builder.fail(ErrorInfo.of("invalid_request"), f"cannot build the Anthropic request: {exc}")
        yield builder.drain()
        return
    decoder = AnthropicDecoder(builder)
    sse_request = SseRequest(
        url=request.url,
        headers=request.headers,
        payload=request.payload,
        on_event=decoder.handle,
        parse_error=parse_error_body,
        end_marker="message_stop",
        vendor="Anthropic",
        secret=api_key,
    )
    async with contextlib.aclosing(run_sse(sse_request, builder, model, options)) as batches:
        async for batch in batches:
            yield batch


register_api(API, stream_anthropic)
