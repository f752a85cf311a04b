"""Recording through a real loopback HTTP server: live tee, exact replay, scrubbing, crash safety."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest

from cassettes import SecretFound, load, use_cassette
from conformance.loopback import LoopbackServer, refused_url
from normalize.wire.tags import API_EXTENSION
from tests.cassettes._helpers import SSE_EVENTS, upstream

BODY = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


async def _read_into(http: httpx.AsyncClient, url: str, seen: list[bytes], times: list[float] | None = None) -> None:
    async with http.stream("POST", url, json=BODY) as response:
        async for chunk in response.aiter_raw():
            seen.append(chunk)
            if times is not None:
                times.append(time.monotonic())


def _chunk_lines(path: Path) -> int:
    return path.read_text(encoding="utf-8").count('"type":"chunk"') if path.exists() else 0


def _partial(path: Path) -> Path:
    return path.with_name(path.name + ".partial")


async def test_chunks_reach_the_caller_live_and_replay_byte_identical(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    live: list[bytes] = []
    arrivals: list[float] = []
    on_disk_at_first_chunk = -1
    url = ""
    async with (
        LoopbackServer(upstream(delay=0.1)) as server,
        use_cassette(path, mode="once") as http,
        http.stream("POST", server.base_url + "/v1/messages", json=BODY) as response,
    ):
        url = server.base_url + "/v1/messages"
        async for chunk in response.aiter_raw():
            live.append(chunk)
            arrivals.append(time.monotonic())
            if on_disk_at_first_chunk < 0:
                on_disk_at_first_chunk = _chunk_lines(_partial(path))
                assert not path.exists(), "the cassette appears only once the recording is complete"
    # Five chunks 100 ms apart: the first one reached the caller ~400 ms before the last.
    assert arrivals[0] < arrivals[-1] - 0.25
    assert on_disk_at_first_chunk == 1, "each chunk is written to the partial file as it arrives"
    assert not _partial(path).exists()
    assert live == SSE_EVENTS

    response_record = load(path).interactions[0].response
    assert [c.data for c in response_record.chunks] == live
    stamps = [c.t_ms for c in response_record.chunks]
    assert stamps == sorted(stamps)
    assert stamps[-1] - stamps[0] >= 350
    assert response_record.end.kind == "eof"

    replayed: list[bytes] = []
    async with use_cassette(path) as http:
        await _read_into(http, url, replayed)
    assert replayed == live, "replayed without a server"


async def test_what_is_stored_is_scrubbed_and_decoded(tmp_path: Path) -> None:
    path = tmp_path / "gzip.jsonl"
    async with LoopbackServer(upstream(compress=True)) as server, use_cassette(path, mode="once") as http:
        # The kit tags every request with its adapter's api; the recorder takes it from there.
        tag = {API_EXTENSION: "anthropic-messages"}
        response = await http.post(server.base_url + "/v1/messages", json=BODY, extensions=tag)
    assert response.content == b"".join(SSE_EVENTS)
    assert server.requests[0].headers["accept-encoding"] == "identity"
    cassette = load(path)
    assert cassette.api == "anthropic-messages"
    assert cassette.model == "m"
    stored = cassette.interactions[0].response
    assert stored.body == b"".join(SSE_EVENTS), "the body is stored decoded"
    assert dict(stored.headers) == {
        "content-type": "text/event-stream",
        "request-id": "req_loopback",
        "x-ratelimit-remaining-requests": "99",
    }


async def test_credentials_in_header_query_and_body_never_reach_disk(server: LoopbackServer, tmp_path: Path) -> None:
    anthropic_key = "sk-ant-api03-" + "k" * 40
    google_key = "AIza" + "g" * 35
    access_token = "ya29." + "t" * 30
    path = tmp_path / "secret.jsonl"
    url = server.base_url + "/v1beta/models/m:streamGenerateContent"
    request_body: dict[str, object] = {
        "model": "m",
        "api_key": anthropic_key,
        "auth": {"access_token": access_token},
        "contents": [],
    }
    headers = {"x-api-key": anthropic_key, "authorization": "Bearer " + access_token, "anthropic-version": "2023-06-01"}
    async with use_cassette(path, mode="once") as http:
        await http.post(url, params={"alt": "sse", "key": google_key}, headers=headers, json=request_body)

    sent = server.requests[0]
    assert google_key in sent.path
    assert sent.headers["x-api-key"] == anthropic_key
    assert access_token.encode() in sent.body, "the real request still carried every credential"

    text = path.read_text(encoding="utf-8")
    for secret in (anthropic_key, google_key, access_token):
        assert secret not in text
    stored = load(path).interactions[0].request
    assert dict(stored.headers) == {"content-type": "application/json", "anthropic-version": "2023-06-01"}
    assert stored.url == url + "?alt=sse"
    assert json.loads(stored.body) == {"model": "m", "auth": {}, "contents": []}

    # The same request, credentials and all, replays from the scrubbed cassette.
    async with use_cassette(path) as http:
        replayed = await http.post(url, params={"alt": "sse", "key": google_key}, headers=headers, json=request_body)
    assert replayed.content == b"".join(SSE_EVENTS)


async def test_a_key_in_the_response_aborts_and_leaves_no_file(tmp_path: Path) -> None:
    planted = "sk-ant-api03-" + "p" * 40
    # Split across two chunks, so only a scan that looks across boundaries can see it.
    plan = upstream([SSE_EVENTS[0], b"data: " + planted[:20].encode(), planted[20:].encode() + b"\n\n"])
    path = tmp_path / "planted.jsonl"
    seen: list[bytes] = []
    with pytest.raises(SecretFound) as caught:
        async with LoopbackServer(plan) as server, use_cassette(path, mode="once") as http:
            await _read_into(http, server.base_url + "/v1/messages", seen)
    assert "Anthropic API key" in str(caught.value)
    assert planted not in str(caught.value)
    assert not path.exists()


async def test_an_environment_secret_in_the_request_aborts_before_writing(
    server: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    value = "loopback-" + "z" * 16
    monkeypatch.setenv("LOOPBACK_SERVICE_TOKEN", value)
    path = tmp_path / "env.jsonl"
    with pytest.raises(SecretFound, match="environment variable LOOPBACK_SERVICE_TOKEN") as caught:
        async with use_cassette(path, mode="once") as http:
            await http.post(server.base_url + "/v1/messages", json={"model": "m", "prompt": f"my token is {value}"})
    assert value not in str(caught.value)
    assert not path.exists()


async def test_a_refused_append_restores_the_existing_file(
    server: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "existing.jsonl"
    async with use_cassette(path, mode="once") as http:
        await http.post(server.base_url + "/v1/messages", json=BODY)
    before = path.read_bytes()
    value = "appended-" + "s" * 16
    monkeypatch.setenv("OTHER_SECRET", value)
    with pytest.raises(SecretFound):
        async with use_cassette(path, mode="new_episodes") as http:
            await http.post(server.base_url + "/v1/messages", json={"model": "m", "prompt": value})
    assert path.read_bytes() == before


async def test_a_connection_reset_mid_body_is_recorded_and_replayed(tmp_path: Path) -> None:
    path = tmp_path / "reset.jsonl"
    live: list[bytes] = []
    async with LoopbackServer(upstream(SSE_EVENTS[:2], delay=0.05, end="reset")) as server:
        url = server.base_url + "/v1/messages"
        with pytest.raises(httpx.TransportError):
            async with use_cassette(path, mode="once") as http:
                await _read_into(http, url, live)
    assert live == SSE_EVENTS[:2]
    stored = load(path).interactions[0].response
    assert [c.data for c in stored.chunks] == live
    assert stored.end.kind == "reset"

    replayed: list[bytes] = []
    with pytest.raises(httpx.ReadError):
        async with use_cassette(path) as http:
            await _read_into(http, url, replayed)
    assert replayed == live


async def test_a_failed_connection_records_nothing(tmp_path: Path) -> None:
    url = refused_url()  # nothing listens on this port
    path = tmp_path / "refused.jsonl"
    with pytest.raises(httpx.ConnectError):
        async with use_cassette(path, mode="once") as http:
            await http.get(url)
    assert not path.exists()
