"""The Anthropic adapter over a real loopback socket: abort, timeouts, resets, retries, closing."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from conformance.loopback import LoopbackServer, ReceivedRequest, Scripted
from normalize import AbortController, AssistantMessageEvent, StreamOptions, TextContent, validate_events
from streamfns.anthropic import stream_anthropic
from tests._anthropic import CONTEXT, error_body, model, scripted

TEXT = "llma__text_haiku45"


def options(**kwargs: object) -> StreamOptions:
    return StreamOptions(api_key="test-key", **kwargs)  # pyright: ignore[reportArgumentType]


async def test_full_stream_over_a_socket_and_the_connection_is_released() -> None:
    async with LoopbackServer(scripted(TEXT)) as server:
        stream = stream_anthropic(model(server.base_url), CONTEXT, options())
        events = [event async for event in stream]
        assert validate_events(events) == []
        result = await stream.result()
        assert result.stop_reason == "stop"
        assert await server.all_connections_closed()
        request = server.requests[0]
        assert request.path == "/v1/messages"
        assert request.headers["x-api-key"] == "test-key"
        assert request.headers["anthropic-version"] == "2023-06-01"


async def test_missing_key_is_an_auth_error_and_sends_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    async with LoopbackServer(scripted(TEXT)) as server:
        result = await stream_anthropic(model(server.base_url), CONTEXT, StreamOptions()).result()
        assert result.error_info is not None
        assert result.error_info.kind == "auth"
        assert server.requests == []


async def test_abort_before_the_request_sends_nothing() -> None:
    controller = AbortController()
    controller.abort()
    async with LoopbackServer(scripted(TEXT)) as server:
        stream = stream_anthropic(model(server.base_url), CONTEXT, options(signal=controller.signal))
        events = [event async for event in stream]
        assert [e.type for e in events] == ["start", "error"]
        assert (await stream.result()).stop_reason == "aborted"
        assert server.requests == []


async def test_abort_mid_stream_on_a_silent_server_is_prompt_and_keeps_partial() -> None:
    async with LoopbackServer(scripted(TEXT, keep=5, end="stall")) as server:
        controller = AbortController()
        stream = stream_anthropic(model(server.base_url), CONTEXT, options(signal=controller.signal))
        events: list[AssistantMessageEvent] = []
        aborted_at = 0.0
        async for event in stream:
            events.append(event)
            if event.type == "text_delta":
                # The server now says nothing more: only the abort can end this stream.
                asyncio.get_running_loop().call_later(0.05, controller.abort)
                aborted_at = time.perf_counter() + 0.05
        latency = time.perf_counter() - aborted_at
        result = await stream.result()
        assert result.stop_reason == "aborted"
        assert isinstance(result.content[0], TextContent)
        assert result.content[0].text, "the partial text is kept"
        assert result.usage.input > 0, "input usage from message_start survives the abort"
        assert validate_events(events) == []
        assert latency < 0.25, f"abort took {latency * 1000:.0f} ms"
        assert await server.all_connections_closed()


async def test_idle_timeout_ends_with_timeout_error_and_partial_content() -> None:
    async with LoopbackServer(scripted(TEXT, keep=5, end="stall")) as server:
        started = time.perf_counter()
        stream = stream_anthropic(model(server.base_url), CONTEXT, options(timeout=0.3, max_retries=0))
        events = [event async for event in stream]
        result = await stream.result()
        assert time.perf_counter() - started < 3
        assert result.error_info is not None
        assert result.error_info.kind == "timeout"
        assert result.error_info.retryable
        assert result.error_info.output_started
        assert result.content
        assert validate_events(events) == []
        assert await server.all_connections_closed()


async def test_connection_reset_mid_body_is_a_network_error() -> None:
    async with LoopbackServer(scripted(TEXT, keep=5, end="reset")) as server:
        result = await stream_anthropic(model(server.base_url), CONTEXT, options()).result()
        assert result.error_info is not None
        assert result.error_info.kind == "network"
        assert result.error_info.output_started
        assert result.content
        assert len(server.requests) == 1, "no retry once output has started"


async def test_eof_before_message_stop_is_truncated() -> None:
    async with LoopbackServer(scripted(TEXT, keep=6, end="eof")) as server:
        result = await stream_anthropic(model(server.base_url), CONTEXT, options()).result()
        assert result.stop_reason == "error"
        assert result.error_info is not None
        assert result.error_info.kind == "truncated"
        assert result.error_info.retryable
        assert "message_stop" in (result.error_message or "")


async def test_429_with_retry_after_is_retried_then_succeeds() -> None:
    plans = [error_body(429, "rate_limit_error", "slow down", [("retry-after", "0.1")]), scripted(TEXT)]

    def respond(request: ReceivedRequest) -> Scripted:
        return plans.pop(0)

    async with LoopbackServer(respond) as server:
        started = time.perf_counter()
        stream = stream_anthropic(model(server.base_url), CONTEXT, options())
        events = [event async for event in stream]
        assert time.perf_counter() - started >= 0.1, "the retry-after delay was honoured"
        assert (await stream.result()).stop_reason == "stop"
        assert len(server.requests) == 2
        assert [e.type for e in events].count("start") == 1
        assert validate_events(events) == []


async def test_retries_are_bounded_and_report_the_vendor_error() -> None:
    async with LoopbackServer(error_body(529, "overloaded_error", "Overloaded", [("retry-after", "0")])) as server:
        result = await stream_anthropic(model(server.base_url), CONTEXT, options(max_retries=2)).result()
        assert len(server.requests) == 3
        assert result.error_info is not None
        assert result.error_info.kind == "overloaded"
        assert result.error_info.status == 529
        assert result.error_info.retryable
        assert "Overloaded" in (result.error_message or "")


async def test_a_retry_delay_over_the_cap_fails_at_once() -> None:
    async with LoopbackServer(error_body(429, "rate_limit_error", "later", [("retry-after", "3600")])) as server:
        started = time.perf_counter()
        result = await stream_anthropic(model(server.base_url), CONTEXT, options(max_retry_delay_s=5)).result()
        assert time.perf_counter() - started < 2
        assert len(server.requests) == 1
        assert result.error_info is not None
        assert result.error_info.retry_after_s == 3600
        assert "3600" in (result.error_message or "")


async def test_backoff_sleep_is_abortable() -> None:
    controller = AbortController()
    async with LoopbackServer(error_body(529, "overloaded_error", "busy", [("retry-after", "30")])) as server:
        asyncio.get_running_loop().call_later(0.2, controller.abort)
        started = time.perf_counter()
        result = await stream_anthropic(model(server.base_url), CONTEXT, options(signal=controller.signal)).result()
        assert time.perf_counter() - started < 2
        assert result.stop_reason == "aborted"
        assert len(server.requests) == 1


async def test_client_errors_are_not_retried_and_carry_the_vendor_message() -> None:
    async with LoopbackServer(error_body(401, "authentication_error", "invalid x-api-key")) as server:
        result = await stream_anthropic(model(server.base_url), CONTEXT, options()).result()
        assert len(server.requests) == 1
        assert result.error_info is not None
        assert result.error_info.kind == "auth"
        assert not result.error_info.retryable
        assert result.error_message == "Anthropic API error 401 authentication_error: invalid x-api-key"


async def test_a_200_that_is_not_an_event_stream_is_a_protocol_error() -> None:
    plan = Scripted(headers=[("content-type", "application/json")], chunks=[(0.0, b'{"id":"msg_1","content":[]}')])
    async with LoopbackServer(plan) as server:
        result = await stream_anthropic(model(server.base_url), CONTEXT, options(max_retries=0)).result()
        assert result.error_info is not None
        assert result.error_info.kind == "protocol"
        assert "not an event stream" in (result.error_message or "")


async def test_overloaded_event_before_content_is_retried_but_not_after() -> None:
    start = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_a","model":"m",'
        b'"usage":{"input_tokens":5,"output_tokens":1}}}\n\n'
    )
    overloaded = b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
    plans = [Scripted(chunks=[(0.0, start), (0.0, overloaded)]), scripted(TEXT)]
    async with LoopbackServer(lambda request: plans.pop(0)) as server:
        result = await stream_anthropic(model(server.base_url), CONTEXT, options()).result()
        assert result.stop_reason == "stop"
        assert len(server.requests) == 2
        assert result.response_id != "msg_a"

    text = scripted(TEXT, keep=5).chunks
    async with LoopbackServer(Scripted(chunks=[*text, (0.0, overloaded)])) as server:
        result = await stream_anthropic(model(server.base_url), CONTEXT, options()).result()
        assert len(server.requests) == 1
        assert result.error_info is not None
        assert result.error_info.kind == "overloaded"
        assert result.error_info.retryable
        assert result.error_info.output_started
        assert result.content


async def test_connection_refused_is_a_retryable_network_error() -> None:
    async with LoopbackServer(scripted(TEXT)) as server:
        base_url = server.base_url
    result = await stream_anthropic(model(base_url), CONTEXT, options(max_retries=0)).result()
    assert result.error_info is not None
    assert result.error_info.kind == "network"
    assert result.error_info.retryable
    assert not result.error_info.output_started


async def test_leaving_the_loop_early_closes_the_connection_at_once() -> None:
    async with LoopbackServer(scripted(TEXT, keep=5, end="stall")) as server:
        stream = stream_anthropic(model(server.base_url), CONTEXT, options(timeout=30))
        async for event in stream:
            if event.type == "text_delta":
                break
        result = await asyncio.wait_for(stream.result(), 1.0)
        assert result.stop_reason == "aborted"
        assert result.content
        assert await server.all_connections_closed(timeout=1.0), "closed on break, not at the 30 s idle timeout"


async def test_on_payload_can_replace_the_payload_and_on_response_sees_the_status() -> None:
    seen: list[int] = []

    async def replace(payload: dict[str, object], _model: object) -> dict[str, object]:
        return {**payload, "metadata": {"user_id": "u-123"}}

    def on_response(status: int, headers: object, _model: object) -> None:
        seen.append(status)

    async with LoopbackServer(scripted(TEXT)) as server:
        result = await stream_anthropic(
            model(server.base_url), CONTEXT, options(on_payload=replace, on_response=on_response)
        ).result()
        assert result.stop_reason == "stop"
        body = json.loads(server.requests[0].body)
        assert body["metadata"] == {"user_id": "u-123"}
        assert body["stream"] is True
        assert seen == [200]


async def test_a_raising_on_payload_hook_is_reported_not_raised() -> None:
    def broken(payload: dict[str, object], _model: object) -> dict[str, object]:
        raise RuntimeError("hook bug")

    async with LoopbackServer(scripted(TEXT)) as server:
        result = await stream_anthropic(model(server.base_url), CONTEXT, options(on_payload=broken)).result()
        assert result.error_info is not None
        assert result.error_info.kind == "config"
        assert "hook bug" in (result.error_message or "")
        assert server.requests == []


async def test_a_key_with_a_stray_newline_is_trimmed_and_bad_bytes_are_refused_without_quoting_it() -> None:
    async with LoopbackServer(scripted(TEXT)) as server:
        ok = await stream_anthropic(model(server.base_url), CONTEXT, StreamOptions(api_key="test-key-1234\n")).result()
        assert ok.stop_reason == "stop"
        assert server.requests[0].headers["x-api-key"] == "test-key-1234"
        secret = "secret-\x01-key-5678"
        bad = await stream_anthropic(model(server.base_url), CONTEXT, StreamOptions(api_key=secret)).result()
        assert bad.error_info is not None
        assert bad.error_info.kind == "auth"
        assert "5678" not in (bad.error_message or "")
        assert len(server.requests) == 1, "nothing was sent with the bad key"


async def test_an_unsendable_base_url_is_a_config_error_not_retried() -> None:
    for base_url in ("ftp://127.0.0.1:9", "http://[::1"):
        result = await stream_anthropic(model(base_url), CONTEXT, options()).result()
        assert result.error_info is not None, base_url
        assert result.error_info.kind == "config", (base_url, result.error_message)
        assert not result.error_info.retryable
