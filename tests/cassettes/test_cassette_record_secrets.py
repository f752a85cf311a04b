"""The recorder never writes a credential it saw, whatever it looks like and however it is echoed.

A server (or a gateway in front of it) is made to echo the request's credential back — in a 401
body, in an allow-listed response header, encoded every way servers encode things — over a real
socket. Every case must end in `SecretFound` with no cassette (and no partial file) left behind.
The credentials here have no known key shape on purpose: only the recording's own secret set can
catch them.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from cassettes import (
    CassetteError,
    CassetteWriter,
    Chunk,
    End,
    RecordedRequest,
    RecordingTransport,
    SecretFound,
    load,
    recorder,
    secret_scan,
    use_cassette,
)
from cassettes.files import PartialFile
from cassettes.secret_scan import SecretSet
from conformance.loopback import LoopbackServer, ReceivedRequest, Scripted
from tests.cassettes._helpers import SSE_EVENTS, upstream

GATEWAY_KEY = "test-gateway-credential-0123456789"


def _echo(
    body: Callable[[str], bytes], *, headers: Callable[[str], list[tuple[str, str]]] | None = None
) -> Callable[[ReceivedRequest], Scripted]:
    """A responder whose 401 answer echoes the credential (`body(key)`, `headers(key)`)."""

    def respond(_request: ReceivedRequest) -> Scripted:
        extra = headers(GATEWAY_KEY) if headers else []
        return Scripted(
            status=401,
            headers=[("content-type", "application/json"), *extra],
            chunks=[(0.0, body(GATEWAY_KEY))],
        )

    return respond


def _b64_at(offset: int) -> Callable[[str], bytes]:
    def body(key: str) -> bytes:
        blob = base64.b64encode(b"p" * offset + key.encode() + b"tail").decode()
        return json.dumps({"error": {"debug": blob}}).encode()

    return body


def _json_escaped(every: int) -> Callable[[str], bytes]:
    """Every `every`-th character of the key spelled as a JSON \\u escape (1: all of them)."""

    def body(key: str) -> bytes:
        spelled = "".join(f"\\u{ord(c):04x}" if n % every == 0 else c for n, c in enumerate(key))
        return ('{"error": {"message": "bad key ' + spelled + '"}}').encode()

    return body


ECHOES: dict[str, Callable[[str], bytes]] = {
    "raw": lambda key: json.dumps({"error": {"message": f"invalid key {key}"}}).encode(),
    "base64, aligned": _b64_at(0),
    "base64, one byte in": _b64_at(1),
    "base64, two bytes in": _b64_at(2),
    "base64url": lambda key: base64.urlsafe_b64encode(b"\xfb\xff" + key.encode()),
    "JSON \\u escapes, all": _json_escaped(1),
    "JSON \\u escapes, some": _json_escaped(3),
    "URL-encoded, all": lambda key: "".join(f"%{b:02X}" for b in key.encode()).encode(),
    "URL-encoded, some, lower case": lambda key: "".join(
        f"%{b:02x}" if n % 2 else chr(b) for n, b in enumerate(key.encode())
    ).encode(),
    "URL-encoded inside JSON escapes": lambda key: quote(key, safe="").replace("%", "\\u0025").encode(),
    "upper case": lambda key: json.dumps({"error": {"message": f"invalid key {key.upper()}"}}).encode(),
    "hex": lambda key: json.dumps({"error": {"key_hex": key.encode().hex()}}).encode(),
    "hex, upper case": lambda key: json.dumps({"error": {"key_hex": key.encode().hex().upper()}}).encode(),
    "HTML entities, decimal": lambda key: "".join(f"&#{ord(c)};" for c in key).encode(),
    "HTML entities, hex, some": lambda key: "".join(
        f"&#x{ord(c):X};" if n % 2 else c for n, c in enumerate(key)
    ).encode(),
}


async def _record(path: Path, responder: Callable[[ReceivedRequest], Scripted], **request: object) -> None:
    async with LoopbackServer(responder) as server, use_cassette(path, mode="once") as http:
        await http.post(server.base_url + "/v1/messages", **request)  # type: ignore[arg-type]


def _assert_refused_and_nothing_written(caught: pytest.ExceptionInfo[SecretFound], path: Path) -> None:
    assert GATEWAY_KEY not in str(caught.value)
    assert not path.exists()
    assert not path.with_name(path.name + ".partial").exists()


@pytest.mark.parametrize("form", ECHOES)
async def test_a_credential_header_echoed_in_any_spelling_is_refused(form: str, tmp_path: Path) -> None:
    path = tmp_path / "echo.jsonl"
    with pytest.raises(SecretFound, match=r"request credential \(x-api-key header\)") as caught:
        await _record(path, _echo(ECHOES[form]), json={"model": "m"}, headers={"x-api-key": GATEWAY_KEY})
    _assert_refused_and_nothing_written(caught, path)


@pytest.mark.parametrize(
    ("where", "sent"),
    [
        ("authorization header", {"headers": {"authorization": f"Bearer {GATEWAY_KEY}"}}),
        ("ocp-apim-subscription-key header", {"headers": {"ocp-apim-subscription-key": GATEWAY_KEY}}),
        ("query parameter key", {"params": {"key": GATEWAY_KEY}}),
        ("query parameter api-key", {"params": {"api-key": GATEWAY_KEY}}),
        ("query parameter subscription-key", {"params": {"subscription-key": GATEWAY_KEY}}),
        ("query parameter x-goog-api-key", {"params": {"x-goog-api-key": GATEWAY_KEY}}),
        ("body field token", {"json": {"model": "m", "token": GATEWAY_KEY}}),
        ("body field auth.key", {"json": {"model": "m", "auth": {"key": GATEWAY_KEY}}}),
        (
            "body field mcp_servers[0].authorization_token",
            {"json": {"model": "m", "mcp_servers": [{"name": "s", "authorization_token": GATEWAY_KEY}]}},
        ),
        # Known by their names alone: no list mentions them.
        ("x-portkey-api-key header", {"headers": {"x-portkey-api-key": GATEWAY_KEY}}),
        ("query parameter auth", {"params": {"auth": GATEWAY_KEY}}),
        ("query parameter code", {"params": {"code": GATEWAY_KEY}}),
        ("body field tools[0].authorization", {"json": {"model": "m", "tools": [{"authorization": GATEWAY_KEY}]}}),
        (
            "body field tools[0].headers.X-Api-Key",
            {"json": {"model": "m", "tools": [{"type": "mcp", "headers": {"X-Api-Key": GATEWAY_KEY}}]}},
        ),
    ],
)
async def test_every_credential_the_request_carries_joins_the_secret_set(
    where: str, sent: dict[str, object], tmp_path: Path
) -> None:
    path = tmp_path / "echo.jsonl"
    with pytest.raises(SecretFound, match=re.escape(f"request credential ({where})")) as caught:
        await _record(path, _echo(ECHOES["base64, one byte in"]), **{"json": {"model": "m"}, **sent})
    _assert_refused_and_nothing_written(caught, path)


async def test_basic_credentials_are_looked_for_decoded(tmp_path: Path) -> None:
    path = tmp_path / "basic.jsonl"
    token = base64.b64encode(f"user:{GATEWAY_KEY}".encode()).decode()
    with pytest.raises(SecretFound, match="authorization header") as caught:
        await _record(path, _echo(ECHOES["raw"]), json={"model": "m"}, headers={"authorization": f"Basic {token}"})
    _assert_refused_and_nothing_written(caught, path)


@pytest.mark.parametrize("header", ["request-id", "x-ratelimit-debug"])
async def test_an_echo_in_an_allow_listed_response_header_is_refused(header: str, tmp_path: Path) -> None:
    path = tmp_path / "header.jsonl"
    responder = _echo(
        lambda _key: b'{"error": "no"}',
        headers=lambda key: [(header, base64.b64encode(b"req_" + key.encode()).decode())],
    )
    with pytest.raises(SecretFound, match=rf"response header {header}") as caught:
        await _record(path, responder, json={"model": "m"}, headers={"x-api-key": GATEWAY_KEY})
    _assert_refused_and_nothing_written(caught, path)


async def test_an_echo_split_across_chunks_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "split.jsonl"
    spelled = "".join(f"\\u{ord(c):04x}" for c in GATEWAY_KEY).encode()
    pieces = [b'data: {"echo": "', spelled[:13], spelled[13:100], spelled[100:] + b'"}\n\n']
    with pytest.raises(SecretFound, match="response body") as caught:
        await _record(path, lambda _r: upstream(pieces), json={"model": "m"}, headers={"x-api-key": GATEWAY_KEY})
    _assert_refused_and_nothing_written(caught, path)


async def test_an_environment_key_with_a_trailing_newline_is_looked_for_trimmed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_GATEWAY_TOKEN", GATEWAY_KEY + "\n")
    path = tmp_path / "env.jsonl"
    with pytest.raises(SecretFound, match="environment variable MY_GATEWAY_TOKEN") as caught:
        await _record(path, _echo(ECHOES["raw"]), json={"model": "m"})
    _assert_refused_and_nothing_written(caught, path)


async def test_a_secret_learned_from_a_later_request_is_looked_for_in_earlier_interactions(tmp_path: Path) -> None:
    """The first response says the key before the recorder has seen it; the second request carries
    it. The finished file is scanned again with every secret seen, so it is never committed."""
    path = tmp_path / "late.jsonl"

    async def two_requests(url: str) -> None:
        async with use_cassette(path, mode="once") as http:
            await http.post(url, json={"n": 1})
            await http.post(url, json={"n": 2}, headers={"x-api-key": GATEWAY_KEY})

    async with LoopbackServer(upstream([b"data: " + GATEWAY_KEY.encode() + b"\n\n"])) as server:
        with pytest.raises(SecretFound, match=r"request credential \(x-api-key header\)"):
            await two_requests(server.base_url + "/v1/messages")
    assert not path.exists()


async def test_credentials_are_scrubbed_but_look_alike_structure_is_kept(tmp_path: Path) -> None:
    """Credential-named fields holding a string are removed; an object under such a name (a tool
    schema property called `token`) is data, kept and scrubbed inside."""
    path = tmp_path / "scrubbed.jsonl"
    schema = {"type": "object", "properties": {"token": {"type": "string"}, "key": {"type": "string"}}}
    body = {
        "model": "m",
        "tools": [{"name": "t", "input_schema": schema}],
        "mcp_servers": [{"name": "s", "url": "https://mcp.test/", "authorization_token": GATEWAY_KEY}],
    }
    async with LoopbackServer(upstream()) as server, use_cassette(path, mode="once") as http:
        url = server.base_url + "/v1/messages"
        await http.post(url, params={"subscription-key": GATEWAY_KEY, "alt": "sse"}, json=body)
    assert GATEWAY_KEY not in path.read_text(encoding="utf-8")
    stored = load(path).interactions[0]
    assert json.loads(stored.request.body) == {
        "model": "m",
        "tools": [{"name": "t", "input_schema": schema}],
        "mcp_servers": [{"name": "s", "url": "https://mcp.test/"}],
    }
    assert httpx.URL(stored.request.url).params.multi_items() == [("alt", "sse")]
    assert stored.response.body == b"".join(SSE_EVENTS)


async def test_a_json_body_too_deep_to_scrub_is_refused_before_it_is_sent(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    deep = b'{"api_key": "' + GATEWAY_KEY.encode() + b'", "x": ' + b"[" * 150 + b"]" * 150 + b"}"
    async with LoopbackServer(upstream()) as server:
        with pytest.raises(CassetteError, match="nested more than 100 levels deep"):
            async with use_cassette(path, mode="once") as http:
                await http.post(server.base_url + "/v1/messages", content=deep)
        assert server.requests == [], "nothing was sent"
    assert not path.exists()


def test_a_body_in_one_byte_chunks_is_scanned_linearly_and_nothing_unscanned_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunks are held back until their batch is scanned, so the partial file never holds a whole
    echo (spread here over hundreds of one-byte chunks), and the body costs O(N) bytes of scanning."""
    scanned: list[int] = []
    real_hits = secret_scan._hits  # pyright: ignore[reportPrivateUsage]

    def counted(data: bytes, secrets: SecretSet | None, *, unescape: bool = True) -> list[tuple[str, int, int]]:
        scanned.append(len(data))
        return real_hits(data, secrets, unescape=unescape)

    monkeypatch.setattr(secret_scan, "_hits", counted)
    written: list[bytes] = []
    real_write = PartialFile.write

    def spy(self: PartialFile, data: bytes) -> None:
        written.append(data)
        real_write(self, data)

    monkeypatch.setattr(PartialFile, "write", spy)
    path = tmp_path / "drip.jsonl"
    spelled = "".join(f"\\u{ord(c):04x}" for c in GATEWAY_KEY).encode()
    body = b'data: {"n": 1}\n\n' * 200 + b'data: {"echo": "' + spelled + b'"}\n\n'
    writer = CassetteWriter(path, env={})
    request = RecordedRequest("POST", "https://api.example.test/v1/messages", body=b'{"model":"m"}')
    index = writer.begin(request, 200, (), 0.0, credentials=[("x-api-key header", GATEWAY_KEY)])
    scanned.clear()

    def drip() -> None:
        for n in range(len(body)):
            writer.chunk(index, Chunk(body[n : n + 1], 1.0))
        writer.end(index, End("eof", 1.0))  # the last batch is scanned here at the latest

    try:
        with pytest.raises(SecretFound, match="response body"):
            drip()
    finally:
        writer.discard()
    stored = b"".join(
        base64.b64decode(record["b64"]) if "b64" in record else record["data"].encode()
        for line in b"".join(written).splitlines()
        if (record := json.loads(line))["type"] == "chunk"
    )
    assert stored, "the chunks before the echo's batch were written"
    assert spelled not in stored
    assert not path.exists()
    assert not path.with_name(path.name + ".partial").exists()
    assert sum(scanned) <= 3 * len(body), (sum(scanned), len(body))


async def test_a_refusal_found_as_a_cancelled_body_ends_never_replaces_the_cancellation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chunk still held for its batch is scanned when the body ends. When the end is the caller's
    cancellation, the cancellation goes on; the refusal is kept in `writer.failure` and nothing is
    written."""

    def no_time_passes(_start: float) -> float:
        return 0.0

    monkeypatch.setattr(recorder, "_now_ms", no_time_passes)  # no pause: the echo's chunk is held
    waiting = asyncio.Event()

    class Upstream(httpx.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            yield b"data: clean\n\n"
            yield b"data: " + GATEWAY_KEY.encode() + b"\n\n"
            waiting.set()
            await asyncio.Event().wait()

    class Server(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Upstream())

    path = tmp_path / "cancelled.jsonl"
    writer = CassetteWriter(path, env={})
    client = httpx.AsyncClient(transport=RecordingTransport(Server(), writer))

    async def read() -> None:
        headers = {"x-api-key": GATEWAY_KEY}
        async with client.stream("POST", "https://api.example.test/v1/messages", headers=headers) as response:
            async for _ in response.aiter_raw():
                pass

    task = asyncio.create_task(read())
    await waiting.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert isinstance(writer.failure, SecretFound)
    await client.aclose()
    assert not path.exists()
    assert not path.with_name(path.name + ".partial").exists()
