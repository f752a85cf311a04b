"""The kit's HTTP seam: which transport a call uses, a caller's own clients of each library, and the
promises a transport keeps whatever the library (over real loopback sockets).

The kit's behaviours themselves (timeouts, abort, retries, decompression, redaction) are pinned by
the kit's other network tests, which run once per transport (``each_transport`` in tests/conftest.py).
"""

from __future__ import annotations

import asyncio
import gzip
import sys
import time
from collections.abc import Iterator
from typing import Any

import aiohttp
import httpx
import httpx2
import pytest

from conformance.loopback import LoopbackServer, Scripted, refused_url
from normalize import StreamOptions, TextContent, validate_events
from streamfns.kit import (
    TRANSPORT_ENV,
    DirectRead,
    HttpRequest,
    HttpResponse,
    Transport,
    TransportError,
    default_transport,
    set_default_transport,
)
from streamfns.kit.transport import TransportKind
from tests.kit._fake import CONTEXT, HELLO, KEY, options, reply, run, sse


@pytest.fixture(autouse=True)
def _process_default_restored() -> Iterator[None]:
    yield
    set_default_transport(None)


async def test_a_callers_httpx_client_is_used_and_left_open() -> None:
    async with LoopbackServer(reply(*HELLO)) as server, httpx.AsyncClient(headers={"x-pool": "mine"}) as client:
        events, result = await run(server.base_url, options(http_client=client))
        assert validate_events(events) == []
        assert result.content == [TextContent(text="Hello")]
        assert server.requests[0].headers["x-pool"] == "mine", "the request went through the caller's client"
        assert not client.is_closed, "the kit never closes a caller's client"


async def test_a_callers_httpx2_client_is_accepted() -> None:
    # The vendor SDKs' own stack since anthropic 2.x / openai 3.x: handing one over used to end in a
    # TypeError on the kit's httpx.Timeout.
    async with LoopbackServer(reply(*HELLO)) as server, httpx2.AsyncClient(headers={"x-pool": "sdk"}) as client:
        events, result = await run(server.base_url, options(http_client=client))
        assert validate_events(events) == []
        assert result.stop_reason == "stop"
        assert result.content == [TextContent(text="Hello")]
        assert server.requests[0].headers["x-pool"] == "sdk"
        assert not client.is_closed


async def test_a_callers_aiohttp_session_is_used_without_its_decompression_and_left_open() -> None:
    # The caller's session decompresses by default; the kit turns that off per request so its own
    # bounded decoder reads the gzip body (a session that inflated it would hand the framer gzip bytes
    # already decoded, and a bomb unbounded).
    body = gzip.compress(b"".join(HELLO))
    plan = Scripted(headers=[("content-type", "text/event-stream"), ("content-encoding", "gzip")], chunks=[(0.0, body)])
    async with LoopbackServer(plan) as server, aiohttp.ClientSession(headers={"x-pool": "aio"}) as session:
        events, result = await run(server.base_url, options(http_client=session))
        assert validate_events(events) == []
        assert result.content == [TextContent(text="Hello")]
        assert server.requests[0].headers["x-pool"] == "aio"
        assert not session.closed, "the kit never closes a caller's session"
        events, again = await run(server.base_url, options(http_client=session))
        assert again.stop_reason == "stop", "the session still serves the next call"


async def test_the_call_chooses_its_transport_over_the_process_default() -> None:
    set_default_transport("httpx")
    async with LoopbackServer(reply(*HELLO)) as server:
        await run(server.base_url, options(transport="aiohttp"))
        await run(server.base_url)
    agents = [request.headers.get("user-agent", "") for request in server.requests]
    assert "aiohttp" in agents[0]
    assert "httpx" in agents[1]


async def test_the_environment_names_the_process_transport(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TRANSPORT_ENV, "aiohttp")
    assert default_transport() == "aiohttp"
    async with LoopbackServer(reply(*HELLO)) as server:
        _, result = await run(server.base_url)
    assert result.stop_reason == "stop"
    assert "aiohttp" in server.requests[0].headers.get("user-agent", "")
    set_default_transport("httpx")
    assert default_transport() == "httpx", "set_default_transport wins over the environment"


def test_an_unknown_transport_is_refused_where_it_is_chosen() -> None:
    with pytest.raises(ValueError, match="unknown transport 'curl'"):
        set_default_transport("curl")


async def test_an_unknown_transport_on_a_call_ends_it_as_config_sending_nothing() -> None:
    async with LoopbackServer(reply(*HELLO)) as server:
        events, result = await run(server.base_url, options(transport="curl"))
    assert validate_events(events) == []
    assert result.error_info is not None
    assert result.error_info.kind == "config"
    assert "StreamOptions.transport: unknown transport 'curl'" in (result.error_message or "")
    assert server.requests == []


async def test_aiohttp_missing_is_a_config_error_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "aiohttp", None)  # import aiohttp now raises ImportError
    _, result = await run("http://127.0.0.1:9", options(transport="aiohttp"))
    assert result.error_info is not None
    assert result.error_info.kind == "config"
    assert "pip install 'streamfns[aiohttp]'" in (result.error_message or "")
    with pytest.raises(ValueError, match="aiohttp extra"):
        set_default_transport("aiohttp")


async def test_a_client_the_kit_cannot_drive_is_a_config_error() -> None:
    _, result = await run("http://127.0.0.1:9", options(http_client=object()))
    assert result.error_info is not None
    assert result.error_info.kind == "config"
    assert "StreamOptions.http_client is a builtins.object" in (result.error_message or "")


class _Silent(HttpResponse):
    """A body that never sends a byte and has no timeout of its own."""

    def __init__(self) -> None:
        super().__init__(200, {"content-type": "text/event-stream"})
        self.closed = False

    def header_values(self, name: str) -> list[str]:
        return []

    async def read(self) -> bytes:
        await asyncio.Event().wait()
        return b""

    async def aclose(self) -> None:
        self.closed = True


class _SilentTransport(Transport):
    name = "silent"

    def __init__(self) -> None:
        self.sent: list[HttpRequest] = []
        self.responses: list[_Silent] = []

    async def send(self, request: HttpRequest) -> HttpResponse:
        self.sent.append(request)
        response = _Silent()
        self.responses.append(response)
        return response


async def test_the_idle_timeout_bounds_a_transport_that_has_none() -> None:
    # The kit's idle clock is its own, not the library's: a transport (or a caller's mock) that would
    # wait forever still ends in a timeout, and its response is closed.
    transport = _SilentTransport()
    started = time.monotonic()
    _, result = await run("http://127.0.0.1:9", options(http_client=transport, timeout=0.3, max_retries=0))
    assert result.error_info is not None
    assert result.error_info.kind == "timeout"
    assert "sent nothing within the idle timeout: no bytes for 0.3s" in (result.error_message or "")
    assert time.monotonic() - started < 10, "bounded (an upper bound only: never a timing assertion)"
    assert [response.closed for response in transport.responses] == [True]
    assert transport.sent[0].headers["x-echo-key"] == KEY


class _Failing(Transport):
    def __init__(self, error: TransportError) -> None:
        self.error = error

    async def send(self, request: HttpRequest) -> HttpResponse:
        raise self.error


@pytest.mark.parametrize(("kind", "retryable"), [("network", True), ("timeout", True), ("config", False)])
async def test_a_transport_error_keeps_its_kind_and_its_words(kind: TransportKind, retryable: bool) -> None:
    error = TransportError(kind, "connection failed", f"Boom: {KEY} in the library's message")
    _, result = await run("http://127.0.0.1:9", options(http_client=_Failing(error), max_retries=0))
    assert result.error_info is not None
    assert (result.error_info.kind, result.error_info.retryable) == (kind, retryable)
    assert result.error_message == "Echo connection failed: Boom: [redacted] in the library's message"


@pytest.mark.parametrize("transport", ["httpx", "aiohttp", "native"])
async def test_an_unsendable_header_is_config_on_every_transport(transport: str) -> None:
    async with LoopbackServer(reply(*HELLO)) as server:
        opts = StreamOptions(api_key=KEY, transport=transport, headers={"x-bad": "one\r\ntwo"}, max_retries=0)
        _, result = await run(server.base_url, opts)
    assert result.error_info is not None
    assert result.error_info.kind == "config", result.error_message
    assert server.requests == []


@pytest.mark.parametrize("transport", ["httpx", "aiohttp", "native"])
async def test_a_refused_connection_is_network_not_a_timeout_on_every_transport(transport: str) -> None:
    # httpx-aiohttp 0.2.0 reports a refused connection as ConnectTimeout; the kit's kinds do not move.
    _, result = await run(refused_url(), StreamOptions(api_key=KEY, transport=transport, max_retries=0))
    assert result.error_info is not None
    assert result.error_info.kind == "network", result.error_message
    assert (result.error_message or "").startswith("Echo connection failed: ")


async def test_the_aiohttp_transport_takes_its_proxy_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # One loopback server plays the proxy (a request sent through a proxy names the whole target URL;
    # the target's name is never resolved here), the other the vendor that NO_PROXY exempts.
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    async with LoopbackServer(reply(*HELLO)) as proxy, LoopbackServer(reply(*HELLO)) as vendor:
        monkeypatch.setenv("HTTP_PROXY", proxy.base_url)
        _, result = await run("http://vendor.invalid", options(transport="aiohttp"))
        assert result.stop_reason == "stop", result.error_message
        assert proxy.requests[0].path == "http://vendor.invalid/v1/echo"
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        _, direct = await run(vendor.base_url, options(transport="aiohttp"))
        assert direct.stop_reason == "stop", direct.error_message
        assert len(proxy.requests) == 1, "NO_PROXY names the host: the proxy is not used"
        assert vendor.requests[0].path == "/v1/echo"


async def test_a_cassette_replays_while_the_process_runs_on_aiohttp() -> None:
    # Cassettes are httpx transports: the caller's replay client is the call's transport whatever the
    # process-wide choice (over a real socket, the conformance harness serves them to any transport).
    import streamfns
    from cassettes import library
    from streamfns.demo import model_for_cassette, replay_client

    set_default_transport("aiohttp")
    cassette = library.load("llma__thinking_sonnet45")
    async with replay_client(cassette) as client:
        stream = streamfns.stream(
            model_for_cassette(cassette), CONTEXT, StreamOptions(api_key="offline", http_client=client)
        )
        events = [event async for event in stream]
        result = await stream.result()
    assert validate_events(events) == []
    assert result.stop_reason == "stop"
    assert any(block.type == "thinking" for block in result.content)


@pytest.mark.parametrize("library", ["httpx", "httpx2", "aiohttp"])
async def test_an_idle_timeout_on_a_callers_client_closes_its_connection(library: str) -> None:
    # The kit's idle clock cancels the read; the caller's pool must not keep the half-read connection.
    # (With httpx's read timeout at the same deadline, the two cancellations once left it ACTIVE.)
    client: object
    if library == "aiohttp":
        client = aiohttp.ClientSession()
    else:
        client = httpx.AsyncClient() if library == "httpx" else httpx2.AsyncClient()
    try:
        async with LoopbackServer(reply(*HELLO[:2], end="stall")) as server:
            _, result = await run(server.base_url, options(http_client=client, timeout=0.3, max_retries=0))
            assert result.error_info is not None
            assert result.error_info.kind == "timeout"
            assert result.content == [TextContent(text="Hello")], "the partial content stays"
            assert await server.all_connections_closed(timeout=5.0), "the connection was closed with the stream"
    finally:
        closer = getattr(client, "aclose", None) or client.close  # type: ignore[attr-defined]
        await closer()


@pytest.mark.parametrize("library", ["kit", "httpx", "httpx2"])
async def test_an_httpx_read_arms_no_loop_timer_of_its_own(library: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The kit's idle clock bounds each read, so httpx gets no read timeout: with one, httpcore armed
    # and cancelled a loop timer per read, and under plain asyncio the cancelled ones piled up in the
    # loop's heap behind the kit's longer clocks, running the garbage collector over every stream.
    reads = 30
    chunks = [(0.01, sse({"type": "text", "text": f"{i} "})) for i in range(reads)]
    plan = Scripted(chunks=[*chunks, (0.0, HELLO[2]), (0.0, HELLO[3])])
    loop = asyncio.get_running_loop()
    armed: list[str] = []
    call_at = loop.call_at

    def counting_call_at(when: float, callback: Any, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
        name = getattr(callback, "__qualname__", repr(callback))
        if name != "_set_result_unless_cancelled":  # the server's sleeps between chunks, on this same loop
            armed.append(name)
        return call_at(when, callback, *args, **kwargs)

    monkeypatch.setattr(loop, "call_at", counting_call_at)
    client: httpx.AsyncClient | httpx2.AsyncClient | None = None
    if library != "kit":
        client = httpx.AsyncClient() if library == "httpx" else httpx2.AsyncClient()
    try:
        async with LoopbackServer(plan) as server:
            opts = options(transport="httpx", timeout=30.0) if client is None else options(http_client=client)
            events, result = await run(server.base_url, opts)
    finally:
        if client is not None:
            await client.aclose()
    assert validate_events(events) == []
    assert result.stop_reason == "stop"
    assert sum(event.type == "text_delta" for event in events) == reads
    # Connecting, writing the request, the kit's own clocks and the server arm about eight; a timer per
    # read would add one for each of the (up to) 30 reads the paced chunks arrive in.
    assert 0 < len(armed) < reads // 2, f"{len(armed)} loop timers armed for {reads} reads: {armed}"


class _Offered(HttpResponse):
    """A body of scripted reads offered as a DirectRead: each result a (bytes, skip) pair as aiohttp's
    readchunk gives them; an exception raised as it comes."""

    def __init__(self, results: list[tuple[bytes, bool] | Exception]) -> None:
        super().__init__(200, {"content-type": "text/event-stream"})
        self.results = results
        self.direct_reads = 0
        self.plain_reads = 0

    def header_values(self, name: str) -> list[str]:
        return []

    async def _next(self) -> tuple[bytes, bool]:
        self.direct_reads += 1
        result = self.results.pop(0) if self.results else (b"", False)
        if isinstance(result, Exception):
            raise result
        return result

    async def read(self) -> bytes:  # what direct_read offers, the slow way (never used by the kit here)
        self.plain_reads += 1
        raise AssertionError("the kit read through read(), not the direct read it was offered")

    def direct_read(self) -> DirectRead:
        def taken(result: tuple[bytes, bool]) -> bytes | None:
            data, skip = result
            return None if skip else data

        def failed(exc: Exception) -> bytes | Exception:
            if isinstance(exc, ConnectionResetError):
                return TransportError("network", "connection failed", "ConnectionResetError: reset")
            return exc

        return DirectRead(self._next, taken, failed)

    async def aclose(self) -> None:
        return


class _OfferingTransport(Transport):
    def __init__(self, response: _Offered) -> None:
        self.response = response

    async def send(self, request: HttpRequest) -> HttpResponse:
        return self.response


async def test_a_direct_read_is_put_together_as_read_would_be() -> None:
    # Marks of a chunk's end (skip) are read past, the bytes are the body, (b"", False) ends it.
    results: list[tuple[bytes, bool] | Exception] = []
    for chunk in HELLO:
        results += [(chunk, False), (b"", True)]
    response = _Offered(results)
    events, result = await run("http://127.0.0.1:9", options(http_client=_OfferingTransport(response)))
    assert result.stop_reason == "stop"
    assert result.content == [TextContent(text="Hello")]
    assert validate_events(events) == []
    assert response.plain_reads == 0
    assert response.direct_reads == 2 * len(HELLO) - 1  # each mark read past; the terminal ends the reads


@pytest.mark.parametrize(
    ("failure", "kind", "said"),
    [
        (ConnectionResetError("reset"), "network", "connection failed: ConnectionResetError: reset"),
        (ZeroDivisionError("not the library's"), "protocol", "ZeroDivisionError: not the library's"),
    ],
)
async def test_a_direct_reads_failure_is_what_its_failed_part_says(
    failure: Exception, kind: TransportKind | str, said: str
) -> None:
    response = _Offered([(HELLO[0], False), failure])
    _, result = await run("http://127.0.0.1:9", options(http_client=_OfferingTransport(response), max_retries=0))
    assert result.stop_reason == "error"
    assert result.error_info is not None
    assert result.error_info.kind == kind
    assert said in (result.error_message or "")
    assert result.content == [TextContent(text="Hel")]  # what came before the failure stays
