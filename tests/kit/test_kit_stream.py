"""The kit's contract over a real loopback socket, with a made-up vendor (``_fake.Echo``).

Every built-in adapter inherits these behaviours; the conformance harness checks the outcomes per
adapter, these tests pin the mechanism: retries and their limits, hooks, keys, timeouts, closing.
"""

from __future__ import annotations

import asyncio
import base64
import gc
import gzip
import json
import time
import types as types_module
import urllib.parse
from collections.abc import Callable
from dataclasses import replace
from typing import Any, cast

import pytest

from conformance.loopback import LoopbackServer, ReceivedRequest, Scripted, refused_url
from normalize import (
    AbortController,
    AssistantMessageEvent,
    Context,
    ImageContent,
    MessageBuilder,
    Model,
    ModelCost,
    StreamOptions,
    TextContent,
    Tool,
    UserMessage,
    event_to_json,
    validate_events,
)
from streamfns.kit import ApiKey, ServerSentEvent
from tests.kit._fake import CONTEXT, HELLO, KEY, WIRE, EchoDecoder, error_reply, model, options, reply, run, sse, types

# Every behaviour here holds on each of the kit's transports (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("each_transport")


async def test_a_full_stream_over_a_socket_and_the_connection_is_released() -> None:
    async with LoopbackServer(reply(*HELLO)) as server:
        events, result = await run(server.base_url)
        assert validate_events(events) == []
        assert result.stop_reason == "stop"
        assert result.content == [TextContent(text="Hello")]
        assert (result.usage.input, result.usage.output) == (5, 2)
        assert await server.all_connections_closed()
        request = server.requests[0]
        assert request.path == "/v1/echo"
        assert request.headers["x-echo-key"] == KEY
        assert json.loads(request.body) == {"model": "echo-1", "prompt": "Say hello.", "temperature": None}


async def test_headers_layer_key_builder_model_options_and_join_list_headers() -> None:
    async with LoopbackServer(reply(*HELLO)) as server:
        opts = options(headers={"x-model": "from-options", "X-Drop": None, "x-echo-features": "c, a"})
        await run(server.base_url, opts, headers={"X-Model": "from-model", "x-drop": "m", "x-echo-features": "b"})
        headers = server.requests[0].headers
        assert headers["x-model"] == "from-options"
        assert "x-drop" not in headers, "a None value in options.headers removes the header"
        assert headers["x-echo-features"] == "a,b,c", "list headers are joined, not replaced"
        assert headers["x-echo-key"] == KEY


# -- keys ---------------------------------------------------------------------------------------


async def test_a_missing_key_is_an_auth_error_naming_where_it_looked_and_sends_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ECHO_API_KEY", raising=False)
    async with LoopbackServer(reply(*HELLO)) as server:
        events, result = await run(server.base_url, StreamOptions())
        assert types(events) == ["start", "error"]
        assert result.error_info is not None
        assert result.error_info.kind == "auth"
        assert "ECHO_API_KEY" in (result.error_message or "")
        assert server.requests == []


async def test_the_key_comes_from_the_environment_trimmed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ECHO_API_KEY", "  env-key-123456\n")
    async with LoopbackServer(reply(*HELLO)) as server:
        _, result = await run(server.base_url, StreamOptions())
        assert result.stop_reason == "stop"
        assert server.requests[0].headers["x-echo-key"] == "env-key-123456"


async def test_a_key_with_bad_bytes_is_refused_without_quoting_it() -> None:
    async with LoopbackServer(reply(*HELLO)) as server:
        secret = "secret-\x01-key-5678"
        _, result = await run(server.base_url, StreamOptions(api_key=secret))
        assert result.error_info is not None
        assert result.error_info.kind == "auth"
        assert "5678" not in (result.error_message or "")
        assert server.requests == []


_ECHOES: dict[str, Callable[[str], str]] = {
    "raw": lambda key: key,
    "json-partly-escaped": lambda key: json.dumps(key, ensure_ascii=True)[1:-1].replace("-", "\\u002d"),
    "json-all-escaped": lambda key: "".join(f"\\u{ord(c):04x}" for c in key),
    "base64": lambda key: base64.b64encode(key.encode()).decode(),
    "base64-inside-another": lambda key: base64.b64encode(b"Bearer " + key.encode()).decode(),
    "url-encoded": lambda key: urllib.parse.quote(key + "/+", safe=""),
    "url-encoded-twice": lambda key: urllib.parse.quote(urllib.parse.quote(key, safe=""), safe=""),
    "upper-case": lambda key: key.upper(),
    "lower-case": lambda key: key.lower(),
    "hex": lambda key: key.encode().hex(),
    "hex-upper": lambda key: key.encode().hex().upper(),
    "html-decimal": lambda key: "".join(f"&#{ord(c)};" for c in key),
    "html-hex-in-part": lambda key: key.replace("-", "&#x2d;"),
}


@pytest.mark.parametrize("encoding", sorted(_ECHOES))
async def test_a_key_the_server_echoes_in_any_encoding_is_redacted(encoding: str) -> None:
    key = "sk-echo-Zq9/Xw+Y7-abcdef0123456789"
    echoed = _ECHOES[encoding](key)
    plan = Scripted(status=401, headers=[("content-type", "text/plain")], chunks=[(0.0, f"bad key: {echoed}".encode())])
    async with LoopbackServer(plan) as server:
        _, result = await run(server.base_url, StreamOptions(api_key=key))
        message = result.error_message or ""
        assert "[redacted]" in message, message
        assert echoed not in message
        assert "abcdef0123456789" not in message.lower()
        assert key.encode().hex()[-16:] not in message.lower()


async def test_a_key_optional_api_sends_no_key_header_when_none_is_given(monkeypatch: pytest.MonkeyPatch) -> None:

    monkeypatch.delenv("ECHO_API_KEY", raising=False)
    local = replace(WIRE, key=ApiKey(env=("ECHO_API_KEY",), required=False))
    async with LoopbackServer(reply(*HELLO)) as server:
        result = await local.stream_fn(model(server.base_url), CONTEXT).result()
        assert result.stop_reason == "stop"
        assert "authorization" not in server.requests[0].headers


# -- what is sent -----------------------------------------------------------------------------------


async def test_on_payload_can_replace_the_payload_and_on_response_sees_the_status() -> None:
    seen: list[int] = []

    async def replace_payload(payload: dict[str, object], _model: object) -> dict[str, object]:
        return {**payload, "metadata": {"user_id": "u-123"}}

    def on_response(status: int, headers: object, _model: object) -> None:
        seen.append(status)

    async with LoopbackServer(reply(*HELLO)) as server:
        _, result = await run(server.base_url, options(on_payload=replace_payload, on_response=on_response))
        assert result.stop_reason == "stop"
        assert json.loads(server.requests[0].body)["metadata"] == {"user_id": "u-123"}
        assert seen == [200]


async def test_raising_hooks_are_reported_not_raised() -> None:
    def broken(*_args: object) -> None:
        raise RuntimeError("hook bug")

    async with LoopbackServer(reply(*HELLO)) as server:
        _, before = await run(server.base_url, options(on_payload=broken))
        assert before.error_info is not None
        assert before.error_info.kind == "config"
        assert "hook bug" in (before.error_message or "")
        assert server.requests == []
        _, after = await run(server.base_url, options(on_response=broken, max_retries=0))
        assert after.error_info is not None
        assert after.error_info.kind == "config"
        assert await server.all_connections_closed()


async def test_a_payload_that_is_not_json_is_a_config_error_and_nothing_is_sent() -> None:
    def nan(payload: dict[str, object], _model: object) -> dict[str, object]:
        return {**payload, "temperature": float("nan")}

    async with LoopbackServer(reply(*HELLO)) as server:
        _, result = await run(server.base_url, options(on_payload=nan))
        assert result.error_info is not None
        assert result.error_info.kind == "config"
        assert "not valid JSON" in (result.error_message or "")
        assert server.requests == []


async def test_an_unsendable_base_url_is_a_config_error_not_retried() -> None:
    for base_url in ("ftp://127.0.0.1:9", "http://[::1"):
        _, result = await run(base_url)
        assert result.error_info is not None, base_url
        assert result.error_info.kind == "config", (base_url, result.error_message)
        assert not result.error_info.retryable


async def test_a_compat_mistake_is_a_config_error_naming_the_flag() -> None:
    async with LoopbackServer(reply(*HELLO)) as server:
        _, result = await run(server.base_url, compat={"shuot": True})
        assert result.error_info is not None
        assert result.error_info.kind == "config"
        assert "'shuot'" in (result.error_message or "")
        assert "(known: shout)" in (result.error_message or "")
        assert server.requests == []


async def test_a_compat_mistake_is_reported_even_when_the_key_is_missing_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ECHO_API_KEY", raising=False)
    _, result = await run("http://127.0.0.1:9", StreamOptions(), compat={"shuot": True})
    assert result.error_info is not None
    assert (result.error_info.kind, "'shuot'" in (result.error_message or "")) == ("config", True), result.error_message


async def test_a_key_rule_that_raises_is_a_config_error_naming_the_vendor() -> None:
    def broken_rule(_model: Model) -> ApiKey:
        raise LookupError("no rule for this region")

    stream = replace(WIRE, key=broken_rule).stream_fn(model(), CONTEXT, options())
    events = [event async for event in stream]
    result = await stream.result()
    assert validate_events(events) == []
    assert result.error_info is not None
    assert result.error_info.kind == "config"
    assert result.error_message == "cannot choose the Echo key: LookupError: no rule for this region"


async def test_a_request_builder_that_raises_is_an_invalid_request_error() -> None:

    def broken(*_args: object) -> object:
        raise ValueError(f"cannot render this transcript with key {KEY}")

    wire = replace(WIRE, build_request=broken)  # pyright: ignore[reportArgumentType]
    result = await wire.stream_fn(model(), CONTEXT, options()).result()
    assert result.error_info is not None
    assert result.error_info.kind == "invalid_request"
    assert KEY not in (result.error_message or "")


# -- timeouts, abort, closing -----------------------------------------------------------------------


async def test_abort_before_the_request_sends_nothing() -> None:
    controller = AbortController()
    controller.abort()
    async with LoopbackServer(reply(*HELLO)) as server:
        events, result = await run(server.base_url, options(signal=controller.signal))
        assert types(events) == ["start", "error"]
        assert result.stop_reason == "aborted"
        assert server.requests == []


async def test_idle_timeout_ends_with_a_timeout_error_keeping_partial_content() -> None:
    async with LoopbackServer(reply(*HELLO[:2], end="stall")) as server:
        started = time.perf_counter()
        events, result = await run(server.base_url, options(timeout=0.3, max_retries=0))
        assert time.perf_counter() - started < 3
        assert result.error_info is not None
        assert (result.error_info.kind, result.error_info.retryable, result.error_info.output_started) == (
            "timeout",
            True,
            True,
        )
        assert result.content == [TextContent(text="Hello")]
        assert validate_events(events) == []
        assert await server.all_connections_closed()


async def test_total_timeout_stops_a_server_that_dribbles_under_the_idle_timeout() -> None:
    dribble = reply(*(sse({"type": "text", "text": "."}) for _ in range(100)), delay_s=0.1)
    async with LoopbackServer(dribble) as server:
        started = time.perf_counter()
        _, result = await run(server.base_url, options(timeout=5, total_timeout=0.5))
        elapsed = time.perf_counter() - started
        assert 0.4 < elapsed < 2, elapsed
        assert result.error_info is not None
        assert result.error_info.kind == "timeout"
        assert "total timeout" in (result.error_message or "")
        assert isinstance(result.content[0], TextContent)
        assert result.content[0].text.startswith("...")
        assert await server.all_connections_closed()


async def test_total_timeout_also_bounds_the_wait_between_retries() -> None:
    async with LoopbackServer(error_reply(503, "overloaded", "busy", [("retry-after", "30")])) as server:
        started = time.perf_counter()
        _, result = await run(server.base_url, options(total_timeout=0.3))
        assert time.perf_counter() - started < 2
        assert result.error_info is not None
        assert result.error_info.kind == "timeout"
        assert "busy" in (result.error_message or "")
        assert len(server.requests) == 1


async def test_leaving_the_loop_early_closes_the_connection_at_once() -> None:
    async with LoopbackServer(reply(*HELLO[:2], end="stall")) as server:
        stream = WIRE.stream_fn(model(server.base_url), CONTEXT, options(timeout=30))
        async for event in stream:
            if event.type == "text_delta":
                break
        result = await asyncio.wait_for(stream.result(), 1.0)
        assert result.stop_reason == "aborted"
        assert result.content
        assert await server.all_connections_closed(timeout=1.0), "closed on break, not at the 30 s idle timeout"


def _kit_generators() -> dict[int, types_module.AsyncGeneratorType[Any, Any]]:
    """The kit's async generators alive now, by identity (others of earlier tests may still await the
    collector: the dict keeps them alive, so no new one takes an id of theirs)."""
    found: dict[int, types_module.AsyncGeneratorType[Any, Any]] = {}
    for obj in gc.get_objects():
        if isinstance(obj, types_module.AsyncGeneratorType):
            made = cast("types_module.AsyncGeneratorType[Any, Any]", obj)
            if "streamfns/kit/" in made.ag_code.co_filename:
                found[id(made)] = made
    return found


@pytest.mark.parametrize("hooked", [False, True], ids=["plain", "on_payload"])
async def test_a_stream_in_its_steady_state_holds_one_generator_of_the_kits(hooked: bool) -> None:
    # Each generator a stream holds for its life is an object, its frame and a weak reference (the
    # loop's set of async generators) for the collector to walk, a thousand streams at a time: the
    # call is prepared when the StreamFn is called, and its reading is one generator (an on_payload
    # hook, awaited on the first read, keeps one more).
    def unchanged(payload: dict[str, Any], _model: Model) -> dict[str, Any]:
        return payload

    before = _kit_generators()
    held: list[str] = []
    async with LoopbackServer(reply(*HELLO[:2], end="stall")) as server:
        opts = options(timeout=30, on_payload=unchanged if hooked else None)
        stream = WIRE.stream_fn(model(server.base_url), CONTEXT, opts)
        async for event in stream:
            if event.type == "text_delta":
                held = sorted(made.ag_code.co_name for key, made in _kit_generators().items() if key not in before)
                break
        await stream.aclose()
    assert held == (["_hooked", "run_stream"] if hooked else ["run_stream"])


@pytest.mark.parametrize("transport", ["httpx", "aiohttp"])
async def test_the_steady_states_read_is_awaited_with_no_coroutine_of_the_kits_around_it(transport: str) -> None:
    # At one event a read, each coroutine between the reader and the library's read is made, resumed
    # and freed once an event (and, a thousand streams at a time, walked by the collector's young
    # passes): the stream awaits the library's read itself, through the reading's steps.
    async with LoopbackServer(reply(*HELLO[:2], end="stall")) as server:
        stream = WIRE.stream_fn(model(server.base_url), CONTEXT, options(timeout=30, transport=transport))
        cursor = aiter(stream)
        deltas = 0
        while deltas < 2:  # both deltas the server sends: the next read waits on it
            deltas += (await anext(cursor)).type == "text_delta"
        pending = anext(cursor)
        reading = asyncio.ensure_future(pending)
        under: object = None
        for _ in range(200):  # until the read is pending in the library
            await asyncio.sleep(0.005)
            under = cast("types_module.CoroutineType[Any, Any, Any]", pending).cr_await
            if under is not None:
                break
        reading.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reading
        await stream.aclose()
    assert cast("types_module.CoroutineType[Any, Any, Any]", pending).cr_code.co_name == "__anext__"
    assert under is not None, "the read never began"
    # What the stream's reader awaits is the library's own: aiohttp's readchunk coroutine, or the step
    # of httpx's async iterator of the body.
    code = cast("types_module.CodeType | None", getattr(under, "cr_code", None))
    if transport == "aiohttp":
        assert code is not None
        assert code.co_qualname == "StreamReader.readchunk", code
    else:
        assert code is None
        assert type(under).__name__ == "async_generator_asend", under


async def test_preparing_a_call_that_raises_unforeseen_ends_the_stream_not_the_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The call is prepared as the StreamFn is called: a bug there must still not raise from the call.
    def broken(*_args: object) -> None:
        raise RuntimeError("a bug while preparing")

    monkeypatch.setattr("streamfns.kit.wire._draft", broken)
    async with LoopbackServer(reply(*HELLO)) as server:
        stream = WIRE.stream_fn(model(server.base_url), CONTEXT, options())  # does not raise
        events = [event async for event in stream]
        result = await stream.result()
        assert types(events) == ["start", "error"]
        assert result.error_info is not None
        assert result.error_info.kind == "protocol"
        assert "RuntimeError: a bug while preparing" in (result.error_message or "")
        assert server.requests == [], "nothing was sent"


async def test_abort_mid_stream_on_a_silent_server_is_prompt() -> None:
    async with LoopbackServer(reply(*HELLO[:2], end="stall")) as server:
        controller = AbortController()
        stream = WIRE.stream_fn(model(server.base_url), CONTEXT, options(signal=controller.signal))
        events: list[AssistantMessageEvent] = []
        aborted_at = 0.0
        async for event in stream:
            events.append(event)
            if event.type == "text_delta" and not aborted_at:
                asyncio.get_running_loop().call_later(0.05, controller.abort)
                aborted_at = time.perf_counter() + 0.05
        latency = time.perf_counter() - aborted_at
        result = await stream.result()
        assert result.stop_reason == "aborted"
        assert result.content, "the partial text is kept"
        assert validate_events(events) == []
        assert latency < 0.25, f"abort took {latency * 1000:.0f} ms"
        assert await server.all_connections_closed()


# -- how a body ends --------------------------------------------------------------------------------


async def test_eof_before_the_terminal_marker_is_truncated_and_names_it() -> None:
    async with LoopbackServer(reply(*HELLO[:3])) as server:
        _, result = await run(server.base_url, options(max_retries=0))
        assert result.error_info is not None
        assert (result.error_info.kind, result.error_info.retryable) == ("truncated", True)
        assert "[END]" in (result.error_message or "")


async def test_a_body_cut_inside_its_last_event_is_truncated_not_malformed() -> None:
    # The last event's JSON is half there: the body was cut short, so it is retryable `truncated`,
    # never `protocol` (the bytes that arrived are not malformed, they stop).
    async with LoopbackServer(reply(*HELLO[:2], b'data: {"type": "text", "te')) as server:
        _, result = await run(server.base_url, options(max_retries=0))
        assert result.error_info is not None
        assert (result.error_info.kind, result.error_info.retryable) == ("truncated", True)
        assert "ended inside an event" in (result.error_message or "")
        assert result.content, "what arrived before the cut is kept"


async def test_a_reset_mid_body_is_a_network_error_and_is_not_retried_after_output() -> None:
    async with LoopbackServer(reply(*HELLO[:2], end="reset")) as server:
        _, result = await run(server.base_url)
        assert result.error_info is not None
        assert (result.error_info.kind, result.error_info.output_started) == ("network", True)
        assert result.content
        assert len(server.requests) == 1


async def test_a_body_that_fails_to_decompress_is_a_network_error() -> None:
    body = bytearray(gzip.compress(b"".join(HELLO)))
    body[-8] ^= 0xFF  # break the CRC: the damage shows only at the end of the body
    plan = reply(bytes(body), headers=[("content-type", "text/event-stream"), ("content-encoding", "gzip")])
    async with LoopbackServer(plan) as server:
        _, result = await run(server.base_url, options(max_retries=0))
        assert result.error_info is not None
        assert result.error_info.kind == "network", result.error_message


async def test_a_body_compressed_one_flush_at_a_time_is_read_to_its_end() -> None:
    # Each flush its own gzip member (RFC 1952 allows a body of several): every one is decoded, in reads
    # that end anywhere, also between one member's end and the next one's magic bytes.
    body = b"".join(gzip.compress(chunk) for chunk in HELLO)
    reads = [body[start : start + 9] for start in range(0, len(body), 9)]
    plan = reply(*reads, headers=[("content-type", "text/event-stream"), ("content-encoding", "gzip")])
    async with LoopbackServer(plan) as server:
        events, result = await run(server.base_url, options(max_retries=0))
        assert validate_events(events) == []
        assert result.stop_reason == "stop", result.error_message
        assert result.content == [TextContent(text="Hello")]
        assert (result.usage.input, result.usage.output) == (5, 2)
        assert await server.all_connections_closed()


async def test_a_decoder_that_raises_keeps_the_events_built_before_it() -> None:
    chunks = [sse({"type": "text", "text": "kept"}, {"type": "boom", "why": "bug"})]
    async with LoopbackServer(reply(*chunks)) as server:
        events, result = await run(server.base_url, options(max_retries=0))
        assert types(events) == ["start", "text_start", "text_delta", "error"]
        assert validate_events(events) == []
        assert result.error_info is not None
        assert (result.error_info.kind, result.error_info.output_started) == ("protocol", True)
        assert "ZeroDivisionError" in (result.error_message or "")
        assert result.content == [TextContent(text="kept")]


@pytest.mark.parametrize(
    ("headers", "body"),
    [
        ([("content-type", "application/json")], b'{"id": "x", "text": "not a stream"}'),
        ([("content-type", "text/html")], b"<html><body>login</body></html>"),
        ([], b'{"id": "x", "text": "not a stream"}'),
        ([("content-type", "text/plain")], b"[1, 2, 3]"),
    ],
    ids=["json", "html", "no-content-type-json", "mislabelled-json"],
)
async def test_a_2xx_that_is_not_an_event_stream_is_a_protocol_error_quoting_it(
    headers: list[tuple[str, str]], body: bytes
) -> None:
    async with LoopbackServer(Scripted(headers=headers, chunks=[(0.0, body)])) as server:
        _, result = await run(server.base_url)
        assert result.error_info is not None
        assert (result.error_info.kind, result.error_info.retryable) == ("protocol", False)
        assert "not an event stream" in (result.error_message or "")
        assert len(server.requests) == 1, "not retried"


async def test_a_redirect_is_a_config_error_that_says_where() -> None:
    plan = Scripted(status=308, headers=[("location", "https://elsewhere.example/v1/echo")], chunks=[])
    async with LoopbackServer(plan) as server:
        _, result = await run(server.base_url)
        assert result.error_info is not None
        assert (result.error_info.kind, result.error_info.status) == ("config", 308)
        assert "https://elsewhere.example/v1/echo" in (result.error_message or "")
        assert len(server.requests) == 1


# -- errors and retries -----------------------------------------------------------------------------


async def test_a_429_with_retry_after_is_retried_then_succeeds() -> None:
    plans = [error_reply(429, "rate", "slow down", [("retry-after", "0.1")]), reply(*HELLO)]

    def respond(_request: ReceivedRequest) -> Scripted:
        return plans.pop(0)

    async with LoopbackServer(respond) as server:
        started = time.perf_counter()
        events, result = await run(server.base_url)
        assert time.perf_counter() - started >= 0.1, "the retry-after delay was honoured"
        assert result.stop_reason == "stop"
        assert len(server.requests) == 2
        assert types(events).count("start") == 1
        assert validate_events(events) == []


async def test_retries_are_bounded_and_report_the_vendor_error() -> None:
    async with LoopbackServer(error_reply(529, "overloaded", "Overloaded", [("retry-after", "0")])) as server:
        _, result = await run(server.base_url, options(max_retries=2))
        assert len(server.requests) == 3
        assert result.error_info is not None
        assert (result.error_info.kind, result.error_info.status, result.error_info.retryable) == (
            "overloaded",
            529,
            True,
        )
        assert result.error_message == "Echo API error 529 overloaded: Overloaded"


async def test_a_retry_delay_over_the_cap_fails_at_once() -> None:
    async with LoopbackServer(error_reply(429, "rate", "later", [("retry-after", "3600")])) as server:
        started = time.perf_counter()
        _, result = await run(server.base_url, options(max_retry_delay_s=5))
        assert time.perf_counter() - started < 2
        assert len(server.requests) == 1
        assert result.error_info is not None
        assert result.error_info.retry_after_s == 3600
        assert "3600" in (result.error_message or "")


async def test_the_backoff_sleep_is_abortable() -> None:
    controller = AbortController()
    async with LoopbackServer(error_reply(503, "overloaded", "busy", [("retry-after", "30")])) as server:
        asyncio.get_running_loop().call_later(0.2, controller.abort)
        started = time.perf_counter()
        _, result = await run(server.base_url, options(signal=controller.signal))
        assert time.perf_counter() - started < 2
        assert result.stop_reason == "aborted"
        assert len(server.requests) == 1


async def test_x_should_retry_overrides_the_status() -> None:
    async with LoopbackServer(error_reply(500, "bug", "no", [("x-should-retry", "false")])) as server:
        _, result = await run(server.base_url)
        assert len(server.requests) == 1
        assert result.error_info is not None
        assert not result.error_info.retryable


async def test_a_vendor_error_event_is_retried_before_content_but_not_after() -> None:
    overloaded = sse({"type": "error", "error": {"type": "overloaded", "message": "Overloaded"}})
    plans = [reply(sse({"type": "usage", "input": 3}), overloaded), reply(*HELLO)]
    async with LoopbackServer(lambda _request: plans.pop(0)) as server:
        _, result = await run(server.base_url)
        assert result.stop_reason == "stop"
        assert len(server.requests) == 2
        assert result.usage.input == 5, "the failed attempt's usage was forgotten"

    async with LoopbackServer(reply(*HELLO[:2], overloaded)) as server:
        _, result = await run(server.base_url)
        assert len(server.requests) == 1
        assert result.error_info is not None
        assert (result.error_info.kind, result.error_info.output_started) == ("overloaded", True)
        assert result.error_message == "Echo stream error (overloaded): Overloaded"


async def test_every_attempt_reads_its_response_with_a_fresh_decoder() -> None:
    # A decoder keeps state per response (half-placed calls, ids, stop reasons): a retried request
    # must not inherit what the failed attempt left in it.
    made: list[list[bytes]] = []

    class Recording(EchoDecoder):
        def __init__(self, builder: MessageBuilder, used: Model) -> None:
            super().__init__(builder, used)
            self.seen: list[bytes] = []
            made.append(self.seen)

        def on_event(self, event: ServerSentEvent) -> None:
            self.seen.append(event.data)
            super().on_event(event)

    overloaded = sse({"type": "error", "error": {"type": "overloaded", "message": "Overloaded"}})
    plans = [reply(sse({"type": "usage", "input": 3}), overloaded), reply(*HELLO)]
    wire = replace(WIRE, decoder=Recording)
    async with LoopbackServer(lambda _request: plans.pop(0)) as server:
        result = await wire.stream_fn(model(server.base_url), CONTEXT, options()).result()
    assert result.stop_reason == "stop"
    assert len(made) == 2
    assert [json.loads(data)["type"] for data in made[0]] == ["usage", "error"]
    assert made[1][-1] == b"[END]"
    assert not set(made[0]) & set(made[1])


async def test_a_refused_connection_is_a_retryable_network_error() -> None:
    _, result = await run(refused_url(), options(max_retries=0))
    assert result.error_info is not None
    assert (result.error_info.kind, result.error_info.retryable, result.error_info.output_started) == (
        "network",
        True,
        False,
    )


# -- caller mistakes --------------------------------------------------------------------------------


def _image(data: str, mime_type: str) -> Context:
    return Context(
        messages=[UserMessage(content=[TextContent(text="look"), ImageContent(data=data, mime_type=mime_type)])]
    )


@pytest.mark.parametrize(
    ("context", "opts", "kind", "field"),
    [
        (None, options(), "invalid_request", "context must be a normalize.Context"),
        (CONTEXT, "fast", "config", "options must be a normalize.StreamOptions"),
        (CONTEXT, options(temperature=float("nan")), "config", "options.temperature"),
        (CONTEXT, options(temperature=float("inf")), "config", "options.temperature"),
        (CONTEXT, options(temperature=10**400), "config", "options.temperature"),  # no float holds it
        (CONTEXT, options(timeout=10**400), "config", "options.timeout"),
        (CONTEXT, options(max_tokens=0), "config", "options.max_tokens"),
        (CONTEXT, options(timeout=-1), "config", "options.timeout"),
        (CONTEXT, options(reasoning="loud"), "config", "options.reasoning"),
        (Context(messages=[None]), options(), "invalid_request", "context.messages[0]"),  # pyright: ignore[reportArgumentType]
        (Context(tools=[Tool(name="t", parameters={"x": {1, 2}})]), options(), "invalid_request", "parameters"),
        (_image("not base64!!", "image/png"), options(), "invalid_request", "context.messages[0].content[1].data"),
        (_image("aGk=", "text/plain"), options(), "invalid_request", "context.messages[0].content[1].mime_type"),
    ],
    ids=[
        "context-none",
        "options-str",
        "nan-temperature",
        "inf-temperature",
        "huge-int-temperature",
        "huge-int-timeout",
        "zero-max-tokens",
        "negative-timeout",
        "unknown-reasoning",
        "message-none",
        "schema-not-json",
        "image-not-base64",
        "image-mime",
    ],
)
async def test_caller_mistakes_end_as_errors_naming_the_field_before_anything_is_sent(
    context: object, opts: object, kind: str, field: str
) -> None:
    async with LoopbackServer(reply(*HELLO)) as server:
        stream = WIRE.stream_fn(model(server.base_url), context, opts)  # pyright: ignore[reportArgumentType]
        events = [event async for event in stream]
        result = await stream.result()
        assert types(events) == ["start", "error"]
        assert result.error_info is not None
        assert result.error_info.kind == kind, result.error_message
        assert field in (result.error_message or ""), result.error_message
        assert server.requests == []


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"cost": None}, "model.cost"),
        ({"cost": ModelCost(input=float("nan"))}, "model.cost.input"),
        ({"cost": ModelCost(input=1e308, output=1e308)}, "model.cost.input"),  # would overflow to inf
        ({"max_tokens": 0}, "model.max_tokens"),
        ({"headers": {"x": 1}}, "model.headers"),
        ({"compat": ["a"]}, "model.compat"),
    ],
)
async def test_a_model_that_cannot_be_called_or_priced_is_refused_before_sending(
    overrides: dict[str, Any], field: str
) -> None:
    async with LoopbackServer(reply(*HELLO)) as server:
        _, result = await run(server.base_url, **overrides)
        assert result.error_info is not None
        assert result.error_info.kind == "config"
        assert field in (result.error_message or "")
        assert server.requests == []


async def test_vendor_text_in_a_stop_reason_is_redacted_too() -> None:
    # Not a StreamFailure: the decoder maps an unknown stop reason through builder.stop(), and the
    # builder quotes it in the error message. A server echoing the key there must not leak it.
    echo = sse({"type": "text", "text": "x"}, {"type": "stop", "reason": f"denied for key {KEY}"}, "[END]")
    async with LoopbackServer(reply(echo)) as server:
        events, result = await run(server.base_url)
        assert result.stop_reason == "error"
        assert KEY not in (result.error_message or "")
        assert "[redacted]" in (result.error_message or "")
        assert KEY not in (result.raw_stop_reason or "")
        assert all(KEY not in str(event_to_json(event, include_partial=True)) for event in events)
