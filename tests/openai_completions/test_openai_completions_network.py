"""The Chat Completions adapter over a real loopback socket: what is its own on the wire (keys per
provider, the request, hooks, where it stops reading, errors and retries).

The kit's behaviours are tested once in ``tests/kit`` and checked for this adapter by the
conformance harness (``test_conformance_builtin.py``)."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from conformance.loopback import LoopbackServer, Scripted
from normalize import AbortController, StreamOptions, validate_events
from streamfns.openai_completions import stream_openai_completions
from tests.adapters import CONTEXT, texts
from tests.adapters import OPENAI_COMPLETIONS as OC
from tests.openai_completions._oc import chunk, sse_body

# Every behaviour here holds on each of the kit's transports (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("each_transport")

TEXT = "oai__text_usage_gpt4o"


def options(**kwargs: Any) -> StreamOptions:
    return StreamOptions(api_key="test-key", **kwargs)


def body_plan(body: bytes, *, end: str = "eof") -> Scripted:
    return Scripted(chunks=[(0.0, body)], end=end)  # pyright: ignore[reportArgumentType]


def error_plan(status: int, value: object, headers: list[tuple[str, str]] | None = None) -> Scripted:
    return Scripted(
        status=status,
        headers=[("content-type", "application/json"), *(headers or [])],
        chunks=[(0.0, json.dumps(value).encode())],
    )


async def test_the_request_on_the_wire() -> None:
    async with LoopbackServer(OC.scripted(TEXT)) as server:
        target = OC.model(base_url=f"{server.base_url}/v1")
        target.headers = {"OpenAI-Organization": "org-test"}
        stream = stream_openai_completions(target, CONTEXT, options(max_tokens=64, headers={"x-trace": "1"}))
        events = [event async for event in stream]
        assert validate_events(events) == []
        assert (await stream.result()).stop_reason == "stop"
        request = server.requests[0]
        assert (request.method, request.path) == ("POST", "/v1/chat/completions")
        assert request.headers["authorization"] == "Bearer test-key"
        assert request.headers["accept"] == "text/event-stream"
        assert request.headers["openai-organization"] == "org-test"
        assert request.headers["x-trace"] == "1"
        body = json.loads(request.body)
        assert body["messages"] == [{"role": "user", "content": "Say hello."}]
        assert body["max_completion_tokens"] == 64
        assert await server.all_connections_closed()


async def test_the_key_comes_from_the_providers_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROQ_API_KEY", "test-groq-key-123")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    async with LoopbackServer(OC.scripted(TEXT)) as server:
        groq = OC.model(base_url=f"{server.base_url}/openai/v1", id="llama-3.3-70b-versatile", provider="groq")
        assert (await stream_openai_completions(groq, CONTEXT).result()).stop_reason == "stop"
        assert server.requests[0].headers["authorization"] == "Bearer test-groq-key-123"
        # OpenAI's variable is not set: nothing is sent and the message names where it looked.
        result = await stream_openai_completions(OC.model(base_url=f"{server.base_url}/v1"), CONTEXT).result()
        assert result.error_info is not None
        assert result.error_info.kind == "auth"
        assert "OPENAI_API_KEY" in (result.error_message or "")
        assert len(server.requests) == 1


async def test_a_local_server_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)
    async with LoopbackServer(OC.scripted(TEXT)) as server:
        ollama = OC.model(base_url=f"{server.base_url}/v1", id="llama3.2", provider="ollama")
        assert (await stream_openai_completions(ollama, CONTEXT).result()).stop_reason == "stop"
        assert "authorization" not in server.requests[0].headers
        unknown_local = OC.model(base_url=f"{server.base_url}/v1", id="m", provider="homelab")
        assert (await stream_openai_completions(unknown_local, CONTEXT).result()).stop_reason == "stop"


async def test_a_compat_mistake_is_a_config_error_and_nothing_is_sent() -> None:
    async with LoopbackServer(OC.scripted(TEXT)) as server:
        target = OC.model(base_url=f"{server.base_url}/v1", compat={"thinking_fromat": "qwen"})
        result = await stream_openai_completions(target, CONTEXT, options()).result()
        assert result.error_info is not None
        assert result.error_info.kind == "config"
        assert "thinking_fromat" in (result.error_message or "")
        assert server.requests == []


async def test_on_payload_may_replace_the_payload_and_sees_the_model() -> None:
    seen: list[str] = []

    def hook(payload: dict[str, Any], used: Any) -> dict[str, Any]:
        seen.append(used.id)
        return {**payload, "seed": 7}

    async with LoopbackServer(OC.scripted(TEXT)) as server:
        await stream_openai_completions(
            OC.model(base_url=f"{server.base_url}/v1"), CONTEXT, options(on_payload=hook)
        ).result()
        assert seen == ["gpt-4o"]
        assert json.loads(server.requests[0].body)["seed"] == 7


async def test_reading_stops_at_done_even_if_the_server_keeps_the_connection_open() -> None:
    body = sse_body(chunk({"content": "Hi"}, finish="stop"))
    async with LoopbackServer(body_plan(body, end="stall")) as server:
        started = time.monotonic()
        result = await stream_openai_completions(
            OC.model(base_url=f"{server.base_url}/v1"), CONTEXT, options(timeout=5)
        ).result()
        assert result.stop_reason == "stop"
        assert time.monotonic() - started < 2
        assert await server.all_connections_closed()


async def test_a_finish_reason_then_silence_is_a_timeout_not_a_success() -> None:
    # Without [DONE] or EOF the usage may still come: a server that goes silent is a timeout.
    body = sse_body(chunk({"content": "Hi"}, finish="stop"), done=False)
    async with LoopbackServer(body_plan(body, end="stall")) as server:
        result = await stream_openai_completions(
            OC.model(base_url=f"{server.base_url}/v1"), CONTEXT, options(timeout=0.3, max_retries=0)
        ).result()
        assert result.error_info is not None
        assert result.error_info.kind == "timeout"
        assert texts(result) == "Hi"


async def test_a_429_for_an_exhausted_quota_is_not_retried() -> None:
    quota = {
        "error": {
            "message": "You exceeded your current quota",
            "type": "insufficient_quota",
            "code": "insufficient_quota",
        }
    }
    async with LoopbackServer(error_plan(429, quota, [("retry-after", "0")])) as server:
        result = await stream_openai_completions(
            OC.model(base_url=f"{server.base_url}/v1"), CONTEXT, options()
        ).result()
        assert len(server.requests) == 1
        assert result.error_info is not None
        assert (result.error_info.kind, result.error_info.retryable) == ("auth", False)


async def test_a_rate_limit_with_a_hint_in_the_text_is_retried_after_it() -> None:
    limited = {
        "error": {
            "message": "Rate limit reached. Please try again in 50ms.",
            "type": "requests",
            "code": "rate_limit_exceeded",
        }
    }
    plans = [error_plan(429, limited), OC.scripted(TEXT)]

    def respond(_request: Any) -> Scripted:
        return plans.pop(0)

    async with LoopbackServer(respond) as server:
        started = time.monotonic()
        result = await stream_openai_completions(
            OC.model(base_url=f"{server.base_url}/v1"), CONTEXT, options()
        ).result()
        assert result.stop_reason == "stop"
        assert len(server.requests) == 2
        assert server.requests[1].received_at - server.requests[0].received_at >= 0.045
        assert time.monotonic() - started < 2


async def test_an_error_chunk_after_output_is_never_retried() -> None:
    body = sse_body(chunk({"content": "partial"}), {"error": {"message": "overloaded", "code": 503}}, done=False)
    async with LoopbackServer(body_plan(body)) as server:
        result = await stream_openai_completions(
            OC.model(base_url=f"{server.base_url}/v1"), CONTEXT, options()
        ).result()
        assert len(server.requests) == 1
        assert result.error_info is not None
        assert (result.error_info.kind, result.error_info.output_started) == ("overloaded", True)
        assert texts(result) == "partial"


async def test_an_error_chunk_before_output_is_retried() -> None:
    plans = [body_plan(sse_body({"error": {"message": "upstream failed", "code": 502}}, done=False)), OC.scripted(TEXT)]

    def respond(_request: Any) -> Scripted:
        return plans.pop(0)

    async with LoopbackServer(respond) as server:
        result = await stream_openai_completions(
            OC.model(base_url=f"{server.base_url}/v1"), CONTEXT, options()
        ).result()
        assert result.stop_reason == "stop"
        assert len(server.requests) == 2


async def test_a_stream_cut_before_the_finish_is_retried_only_before_output() -> None:
    async with LoopbackServer(OC.scripted(TEXT, keep=1)) as server:  # only the role chunk, then EOF
        result = await stream_openai_completions(
            OC.model(base_url=f"{server.base_url}/v1"), CONTEXT, options(max_retries=1)
        ).result()
        assert len(server.requests) == 2
        assert result.error_info is not None
        assert result.error_info.kind == "truncated"
        assert result.error_message == "Chat Completions stream ended before a finish_reason"


async def test_an_abort_mid_stream_keeps_the_text() -> None:
    chunks = [
        (0.0, sse_body(chunk({"content": "Hel"}), done=False)),
        (5.0, sse_body(chunk({"content": "lo"}, finish="stop"))),
    ]
    async with LoopbackServer(Scripted(chunks=chunks)) as server:
        controller = AbortController()
        stream = stream_openai_completions(
            OC.model(base_url=f"{server.base_url}/v1"), CONTEXT, options(signal=controller.signal)
        )
        async for event in stream:
            if event.type == "text_delta":
                controller.abort()
        result = await stream.result()
        assert result.stop_reason == "aborted"
        assert texts(result) == "Hel"
        await asyncio.sleep(0)
        assert await server.all_connections_closed()


async def test_a_retried_request_does_not_inherit_the_failed_attempts_state() -> None:
    # The first attempt leaves a tool call without a name (nothing shown yet) and fails retryably;
    # the retry must not find that half-placed call at its end.
    nameless = chunk({"tool_calls": [{"index": 0, "id": "call_x", "function": {"arguments": '{"a'}}]})
    overloaded = b'event: error\ndata: {"error": {"message": "busy", "code": "service_unavailable"}}\n\n'
    plans = [body_plan(sse_body(nameless, done=False) + overloaded), OC.scripted(TEXT)]

    def respond(_request: Any) -> Scripted:
        return plans.pop(0)

    async with LoopbackServer(respond) as server:
        result = await stream_openai_completions(
            OC.model(base_url=f"{server.base_url}/v1"), CONTEXT, options()
        ).result()
        assert len(server.requests) == 2
        assert result.stop_reason == "stop", result.error_message
        assert result.response_id == "chatcmpl-ABfw031mOJeYCSHe4yI2ZjOA6kMJL"
