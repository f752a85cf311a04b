"""The Anthropic adapter over a real loopback socket: what is Anthropic's own on the wire.

The kit's behaviours (keys, retries, timeouts, abort, closing) are tested once in ``tests/kit`` and
checked per adapter by the conformance harness (``test_conformance_builtin.py``).
"""

from __future__ import annotations

import json

import pytest

from conformance.loopback import LoopbackServer, Scripted
from normalize import StreamOptions, validate_events
from streamfns.anthropic import stream_anthropic
from streamfns.anthropic.request import INTERLEAVED_THINKING_BETA
from tests.adapters import ANTHROPIC, CONTEXT

# Every behaviour here holds on each of the kit's transports (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("each_transport")

TEXT = "llma__text_haiku45"


def error_body(status: int, error_type: str, message: str) -> Scripted:
    """An Anthropic error response: ``{"type": "error", "error": {...}}`` as JSON."""
    body = f'{{"type":"error","error":{{"type":"{error_type}","message":"{message}"}}}}'.encode()
    return Scripted(status=status, headers=[("content-type", "application/json")], chunks=[(0.0, body)])


def options(**kwargs: object) -> StreamOptions:
    return StreamOptions(api_key="test-key", **kwargs)  # pyright: ignore[reportArgumentType]


async def test_the_request_on_the_wire() -> None:
    async with LoopbackServer(ANTHROPIC.scripted(TEXT)) as server:
        stream = stream_anthropic(ANTHROPIC.model(base_url=server.base_url), CONTEXT, options())
        events = [event async for event in stream]
        assert validate_events(events) == []
        assert (await stream.result()).stop_reason == "stop"
        request = server.requests[0]
        assert request.path == "/v1/messages"
        assert request.headers["x-api-key"] == "test-key"
        assert "authorization" not in request.headers
        assert request.headers["anthropic-version"] == "2023-06-01"
        assert request.headers["accept"] == "text/event-stream"
        assert json.loads(request.body)["stream"] is True


async def test_beta_lists_from_the_adapter_the_model_and_the_options_are_joined() -> None:
    async with LoopbackServer(ANTHROPIC.scripted(TEXT)) as server:
        thinking_model = ANTHROPIC.model(base_url=server.base_url)
        thinking_model.reasoning = True
        thinking_model.compat = {"interleaved_thinking": True}
        thinking_model.headers = {"Anthropic-Beta": "context-1m-2025-08-07"}
        opts = options(reasoning="low", headers={"anthropic-beta": "files-api-2025-04-14"})
        await stream_anthropic(thinking_model, CONTEXT, opts).result()
        assert server.requests[0].headers["anthropic-beta"] == (
            f"{INTERLEAVED_THINKING_BETA},context-1m-2025-08-07,files-api-2025-04-14"
        )


async def test_eof_before_message_stop_is_truncated_and_says_so() -> None:
    async with LoopbackServer(ANTHROPIC.scripted(TEXT, keep=6, end="eof")) as server:
        result = await stream_anthropic(
            ANTHROPIC.model(base_url=server.base_url), CONTEXT, options(max_retries=0)
        ).result()
        assert result.error_info is not None
        assert result.error_info.kind == "truncated"
        assert result.error_message == "Anthropic stream ended before message_stop"


async def test_client_errors_are_not_retried_and_carry_the_vendor_message() -> None:
    async with LoopbackServer(error_body(401, "authentication_error", "invalid x-api-key")) as server:
        result = await stream_anthropic(ANTHROPIC.model(base_url=server.base_url), CONTEXT, options()).result()
        assert len(server.requests) == 1
        assert result.error_info is not None
        assert (result.error_info.kind, result.error_info.code, result.error_info.retryable) == (
            "auth",
            "authentication_error",
            False,
        )
        assert result.error_message == "Anthropic API error 401 authentication_error: invalid x-api-key"


async def test_a_prompt_too_long_is_a_context_overflow() -> None:
    async with LoopbackServer(error_body(400, "invalid_request_error", "prompt is too long: 201234 tokens")) as server:
        result = await stream_anthropic(ANTHROPIC.model(base_url=server.base_url), CONTEXT, options()).result()
        assert result.error_info is not None
        assert result.error_info.kind == "context_overflow"


async def test_overloaded_event_before_content_is_retried_but_not_after() -> None:
    start = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_a","model":"m",'
        b'"usage":{"input_tokens":5,"output_tokens":1}}}\n\n'
    )
    overloaded = b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
    plans = [Scripted(chunks=[(0.0, start), (0.0, overloaded)]), ANTHROPIC.scripted(TEXT)]
    async with LoopbackServer(lambda request: plans.pop(0)) as server:
        result = await stream_anthropic(ANTHROPIC.model(base_url=server.base_url), CONTEXT, options()).result()
        assert result.stop_reason == "stop"
        assert len(server.requests) == 2
        assert result.response_id != "msg_a"

    text = ANTHROPIC.scripted(TEXT, keep=5).chunks
    async with LoopbackServer(Scripted(chunks=[*text, (0.0, overloaded)])) as server:
        result = await stream_anthropic(ANTHROPIC.model(base_url=server.base_url), CONTEXT, options()).result()
        assert len(server.requests) == 1
        assert result.error_info is not None
        assert result.error_info.kind == "overloaded"
        assert result.error_info.retryable
        assert result.error_info.output_started
        assert result.content
        assert result.error_message == "Anthropic stream error (overloaded_error): Overloaded"
