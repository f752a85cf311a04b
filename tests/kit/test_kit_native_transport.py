"""The native transport (``streamfns.kit.transport_native``): its HTTP/1.1 response parser against
hostile and oddly cut bytes, its back-pressure, and over real loopback sockets its proxies (absolute
form, ``CONNECT`` tunnels, credentials), TLS verification and error kinds.

The kit's HTTP guarantees (timeouts, aborts, caps, redaction, every adapter's wire) are pinned once
per transport by the modules that take ``each_transport`` (tests/conftest.py); this module holds
what is the native client's own.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ssl
from collections.abc import AsyncGenerator

import pytest
import trustme

from conformance.loopback import LoopbackServer
from normalize import TextContent
from streamfns.kit import TransportError
from streamfns.kit import transport_native as native
from streamfns.kit.transport_native import HIGH_WATER, MAX_HEAD_BYTES, MAX_LINE_BYTES
from tests.kit._fake import HELLO, options, reply, run

_Connection = native._Connection  # pyright: ignore[reportPrivateUsage]
_failure = native._failure  # pyright: ignore[reportPrivateUsage]

CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
BODY_PIECES = [b"data: one\n\n", b"data: two\n\n", b"x" * 300]
CHUNKED = (
    CHUNKED_HEAD
    + b"b\r\ndata: one\n\n\r\n"
    + b"B;name=value\r\ndata: two\n\n\r\n"  # a chunk extension, an upper-case size
    + b"12c\r\n"
    + b"x" * 300
    + b"\r\n0\r\nx-trailer: t\r\n\r\n"
)


class _Socket:
    """What a connection writes to and pauses: an ``asyncio.Transport`` as far as the parser uses one."""

    def __init__(self) -> None:
        self.pauses = 0
        self.resumes = 0
        self.aborted = False

    def pause_reading(self) -> None:
        self.pauses += 1

    def resume_reading(self) -> None:
        self.resumes += 1

    def abort(self) -> None:
        self.aborted = True

    def is_closing(self) -> bool:
        return self.aborted

    def write(self, data: bytes) -> None:
        del data


def fed(*pieces: bytes, lost: Exception | None = None, close: bool = True) -> tuple[native._Connection, _Socket]:  # pyright: ignore[reportPrivateUsage]
    connection = _Connection()
    socket = _Socket()
    connection.connection_made(socket)  # pyright: ignore[reportArgumentType]
    for piece in pieces:
        connection.data_received(piece)
    if close:
        connection.connection_lost(lost)
    return connection, socket


async def body_of(connection: native._Connection) -> bytes:  # pyright: ignore[reportPrivateUsage]
    await connection.read_head()
    out = b""
    while piece := await connection.next_piece():
        out += piece
    return out


async def failure_of(connection: native._Connection) -> TransportError:  # pyright: ignore[reportPrivateUsage]
    with pytest.raises(Exception) as raised:
        await body_of(connection)
    outcome = _failure(raised.value)
    assert isinstance(outcome, TransportError), raised.value
    return outcome


async def test_a_chunked_body_reads_the_same_however_its_bytes_are_cut() -> None:
    expected = b"".join(BODY_PIECES)
    for cut in range(1, len(CHUNKED)):
        connection, _ = fed(CHUNKED[:cut], CHUNKED[cut:])
        assert await body_of(connection) == expected, cut
    connection, _ = fed(*(CHUNKED[i : i + 1] for i in range(len(CHUNKED))))
    assert await body_of(connection) == expected
    status, headers = await connection.read_head()
    assert status == 200
    assert headers["content-type"] == headers["Content-Type"] == "text/event-stream"


async def test_one_read_is_one_chunk_when_each_chunk_comes_alone() -> None:
    connection, _ = fed(CHUNKED, close=False)
    await connection.read_head()
    assert [await connection.next_piece() for _ in BODY_PIECES] == BODY_PIECES
    assert await connection.next_piece() == b""  # the last chunk and its trailers: the end


async def test_a_body_of_a_given_length_ends_there_and_what_follows_is_not_read() -> None:
    head = b"HTTP/1.1 200 OK\r\ncontent-length: 11\r\n\r\n"
    connection, _ = fed(head + b"data: one\n\n" + b"HTTP/1.1 200 OK\r\n\r\nsmuggled", close=False)
    assert await body_of(connection) == b"data: one\n\n"


async def test_a_body_without_a_length_is_read_to_the_connections_close() -> None:
    connection, _ = fed(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n", b"data: a\n\n", b"data: b\n\n")
    assert await body_of(connection) == b"data: a\n\ndata: b\n\n"


async def test_informational_heads_are_read_past() -> None:
    connection, _ = fed(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </x>\r\n\r\n" + CHUNKED)
    assert await body_of(connection) == b"".join(BODY_PIECES)


async def test_repeated_headers_are_kept_one_by_one() -> None:
    head = b"HTTP/1.1 429 Too Many Requests\r\nx-a: 1\r\nX-A: 2\r\ncontent-length: 0\r\n\r\n"
    connection, _ = fed(head)
    status, headers = await connection.read_head()
    response = native._NativeResponse(connection, status, headers)  # pyright: ignore[reportPrivateUsage]
    assert status == 429
    assert response.header_values("x-a") == ["1", "2"]
    assert headers["x-a"] == "1, 2"
    assert list(headers) == ["x-a", "content-length"]


@pytest.mark.parametrize(
    "data",
    [
        b"HTTP/2 200\r\n\r\n",  # not HTTP/1.x
        b"HTTP/1.1 20 OK\r\n\r\n",
        b"ICY 200 OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nx-a: 1\r\n folded: value\r\n\r\n",  # obsolete line folding
        b"HTTP/1.1 200 OK\r\nbad name: 1\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: -5\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: \xb2\r\n\r\n",  # a digit to str.isdigit, not to HTTP
        b"HTTP/1.1 200 OK\r\nx: " + b"a" * MAX_HEAD_BYTES + b"\r\n\r\n",  # a head too long, whole
        b"HTTP/1.1 200 OK\r\nx: " + b"a" * (MAX_HEAD_BYTES + 10),  # a head too long, still coming
    ],
)
async def test_a_malformed_head_is_a_network_failure(data: bytes) -> None:
    connection, socket = fed(data)
    failure = await failure_of(connection)
    assert failure.kind == "network"
    assert socket.aborted, "a response that broke the protocol drops its connection"


@pytest.mark.parametrize(
    "body",
    [
        b"zz\r\n",  # not a size
        b"-1\r\n",
        b"5\r\nabcdeXX\r\n",  # the chunk's data not followed by CRLF
        b"1" * (MAX_LINE_BYTES + 1),  # a size line that never ends
        b"10000000000000000\r\n",  # seventeen digits
        b"5\r\nab",  # cut inside a chunk
        b"5\r\nabcde\r\n",  # cut between chunks
        b"0\r\nx-trailer: t\r\n",  # cut inside the trailers
    ],
)
async def test_a_malformed_or_cut_chunked_body_is_a_network_failure(body: bytes) -> None:
    connection, _ = fed(CHUNKED_HEAD + body)
    failure = await failure_of(connection)
    assert failure.kind == "network"


async def test_a_body_cut_before_its_length_is_a_network_failure() -> None:
    connection, _ = fed(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nshort")
    assert (await failure_of(connection)).kind == "network"


async def test_a_connection_closed_before_the_head_is_a_network_failure() -> None:
    connection, _ = fed(b"HTTP/1.1 200 O")
    with pytest.raises(ConnectionResetError):
        await connection.read_head()


async def test_the_socket_is_paused_above_the_high_water_mark_and_resumed_once_taken() -> None:
    size = HIGH_WATER + 1
    connection, socket = fed(CHUNKED_HEAD + f"{size:x}\r\n".encode() + b"y" * size + b"\r\n", close=False)
    assert socket.pauses == 1
    await connection.read_head()
    assert len(await connection.next_piece()) == size
    assert socket.resumes == 1


async def test_a_head_trickled_a_byte_at_a_time_is_read_whole() -> None:
    head = b"HTTP/1.1 200 OK\r\n" + b"".join(b"x-%d: %s\r\n" % (n, b"v" * 200) for n in range(200))
    connection, _ = fed(*(bytes([b]) for b in head + b"content-length: 2\r\n\r\nok"))
    assert await body_of(connection) == b"ok"
    assert len((await connection.read_head())[1]) == 201


async def test_a_read_of_many_small_chunks_gives_each() -> None:
    pieces = [bytes([65 + n % 26]) * (1 + n % 7) for n in range(5000)]
    body = b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces) + b"0\r\n\r\n"
    connection, _ = fed(CHUNKED_HEAD + body)
    await connection.read_head()
    got = [piece async for piece in _pieces(connection)]
    assert got == pieces


async def _pieces(connection: native._Connection) -> AsyncGenerator[bytes, None]:  # pyright: ignore[reportPrivateUsage]
    while piece := await connection.next_piece():
        yield piece


# -- over loopback sockets ------------------------------------------------------------------------


@pytest.fixture
def no_proxy_environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "http_proxy", "HTTP_PROXY"):
        monkeypatch.delenv(name, raising=False)
    for name in ("https_proxy", "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


async def test_a_proxy_from_the_environment_gets_the_request_in_absolute_form_with_its_credentials(
    no_proxy_environment: pytest.MonkeyPatch,
) -> None:
    monkeypatch = no_proxy_environment
    async with LoopbackServer(reply(*HELLO)) as proxy, LoopbackServer(reply(*HELLO)) as vendor:
        port = proxy.base_url.rsplit(":", 1)[1]
        monkeypatch.setenv("HTTP_PROXY", f"http://user:p%40ss@127.0.0.1:{port}")
        _, result = await run("http://vendor.invalid", options(transport="native"))
        assert result.stop_reason == "stop", result.error_message
        (sent,) = proxy.requests
        assert sent.path == "http://vendor.invalid/v1/echo"
        assert sent.headers["proxy-authorization"] == "Basic " + base64.b64encode(b"user:p@ss").decode()
        assert sent.headers["host"] == "vendor.invalid"
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        _, direct = await run(vendor.base_url, options(transport="native"))
        assert direct.stop_reason == "stop", direct.error_message
        assert len(proxy.requests) == 1, "NO_PROXY names the host: the proxy is not used"
        assert vendor.requests[0].path == "/v1/echo"
        assert "proxy-authorization" not in vendor.requests[0].headers


async def test_a_proxy_of_another_scheme_is_a_config_error_sending_nothing(
    no_proxy_environment: pytest.MonkeyPatch,
) -> None:
    no_proxy_environment.setenv("HTTPS_PROXY", "socks5://127.0.0.1:9")
    _, result = await run("https://vendor.invalid", options(transport="native", max_retries=0))
    assert result.error_info is not None
    assert result.error_info.kind == "config", result.error_message
    assert "http:// proxies only" in (result.error_message or "")


# A TLS server on loopback, its certificate from a throwaway CA that the kit's context trusts only
# when a test says so.


@pytest.fixture(scope="module")
def authority() -> trustme.CA:
    return trustme.CA()


@contextlib.asynccontextmanager
async def tls_server(authority: trustme.CA, body: bytes) -> AsyncGenerator[str, None]:
    """An https server on 127.0.0.1 answering every request with a chunked ``body``; its base URL."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(context)  # pyright: ignore[reportUnknownMemberType]

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(CHUNKED_HEAD + f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n")
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass  # a client that refused our certificate
        finally:
            writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=context)
    try:
        yield f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()
        await server.wait_closed()


@pytest.fixture
def trusting(authority: trustme.CA, monkeypatch: pytest.MonkeyPatch) -> None:
    context = ssl.create_default_context()
    authority.configure_trust(context)  # pyright: ignore[reportUnknownMemberType]
    monkeypatch.setattr(native, "ssl_context", lambda: context)


async def test_tls_is_verified_against_the_kits_trust(
    authority: trustme.CA, no_proxy_environment: pytest.MonkeyPatch
) -> None:
    del no_proxy_environment
    async with tls_server(authority, b"".join(HELLO)) as url:
        _, result = await run(url, options(transport="native", max_retries=0))
    assert result.error_info is not None
    assert result.error_info.kind == "network", result.error_message
    assert "CERTIFICATE_VERIFY_FAILED" in (result.error_message or "")


async def test_a_stream_over_tls_reads_as_over_plain_http(
    authority: trustme.CA, trusting: None, no_proxy_environment: pytest.MonkeyPatch
) -> None:
    del trusting, no_proxy_environment
    async with tls_server(authority, b"".join(HELLO)) as url:
        _, result = await run(url, options(transport="native", max_retries=0))
    assert result.stop_reason == "stop", result.error_message
    assert [block.text for block in result.content if isinstance(block, TextContent)] == ["Hello"]


@contextlib.asynccontextmanager
async def connect_proxy(
    answer: bytes = b"HTTP/1.1 200 Connection established\r\n\r\n",
) -> AsyncGenerator[tuple[str, list[bytes]], None]:
    """A proxy on 127.0.0.1 that answers ``CONNECT`` with ``answer`` and, on a 200, joins the two
    sockets; its URL and the heads it was sent. Every socket it opened is closed when it stops."""
    heads: list[bytes] = []
    writers: list[asyncio.StreamWriter] = []

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        head = await reader.readuntil(b"\r\n\r\n")
        heads.append(head)
        writer.write(answer)
        if not answer.startswith(b"HTTP/1.1 200"):
            writer.close()
            return
        host, port = head.split(b" ")[1].decode().rsplit(":", 1)
        up_reader, up_writer = await asyncio.open_connection(host, int(port))
        writers.append(up_writer)
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", heads
    finally:
        server.close()
        for writer in writers:
            writer.close()
            with contextlib.suppress(ConnectionError, ssl.SSLError):
                await writer.wait_closed()
        await server.wait_closed()


async def test_https_through_a_proxy_goes_through_a_connect_tunnel(
    authority: trustme.CA, trusting: None, no_proxy_environment: pytest.MonkeyPatch
) -> None:
    del trusting
    async with tls_server(authority, b"".join(HELLO)) as url, connect_proxy() as (proxy, heads):
        no_proxy_environment.setenv("HTTPS_PROXY", proxy.replace("http://", "http://who:pw@"))
        _, result = await run(url, options(transport="native", max_retries=0))
    assert result.stop_reason == "stop", result.error_message
    (head,) = heads
    target = url.removeprefix("https://").encode()
    assert head.startswith(b"CONNECT " + target + b" HTTP/1.1\r\n")
    assert b"proxy-authorization: Basic " + base64.b64encode(b"who:pw") in head
    assert b"x-api-key" not in head.lower(), "the vendor's headers travel inside the tunnel alone"


async def test_a_tunnel_the_proxy_refuses_is_a_network_failure(no_proxy_environment: pytest.MonkeyPatch) -> None:
    async with connect_proxy(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n") as (proxy, heads):
        no_proxy_environment.setenv("HTTPS_PROXY", proxy)
        _, result = await run("https://vendor.invalid", options(transport="native", max_retries=0))
    assert result.error_info is not None
    assert result.error_info.kind == "network", result.error_message
    assert "403" in (result.error_message or "")
    assert heads[0].startswith(b"CONNECT vendor.invalid:443 HTTP/1.1\r\n")


async def test_a_target_with_what_a_request_line_cannot_hold_is_sent_escaped(
    no_proxy_environment: pytest.MonkeyPatch,
) -> None:
    del no_proxy_environment
    async with LoopbackServer(reply(*HELLO)) as server:
        _, result = await run(server.base_url + "/a b\u00e9%2F", options(transport="native"))
    assert result.stop_reason == "stop", result.error_message
    assert server.requests[0].path == "/a%20b%C3%A9%2F/v1/echo"


@pytest.mark.parametrize(
    "url", ["http://exa mple.test", "http://bad_host%00.test", "ftp://127.0.0.1", "http://127.0.0.1:99999"]
)
async def test_a_url_this_client_cannot_send_is_a_config_error(
    url: str, no_proxy_environment: pytest.MonkeyPatch
) -> None:
    del no_proxy_environment
    _, result = await run(url, options(transport="native", max_retries=0))
    assert result.error_info is not None
    assert result.error_info.kind == "config", result.error_message
