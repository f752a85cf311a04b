"""How a recorded body ends, over real sockets: the end it really had, never a made-up reset.

Every adapter stops reading at the vendor's terminal marker and closes the response; the recorder
then drains the rest (bounded) to learn whether the server finished (`eof`) or not
(`client_closed`, which replays as a clean end).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest

import conformance
from cassettes import CassetteWriter, RecordingTransport, ReplayTransport, library, load, use_cassette
from conformance.loopback import LoopbackServer
from conformance.plans import plan
from normalize import Context, Model, StreamOptions, UserMessage
from normalize.wire import profile_for
from tests.cassettes._helpers import SSE_EVENTS, upstream

BODY = {"model": "m", "stream": True}


def _recorder(path: Path, *, drain_timeout_s: float = 5.0, drain_max_bytes: int = 1 << 20) -> httpx.AsyncClient:
    transport = RecordingTransport(
        httpx.AsyncHTTPTransport(),
        CassetteWriter(path),
        drain_timeout_s=drain_timeout_s,
        drain_max_bytes=drain_max_bytes,
    )
    return httpx.AsyncClient(transport=transport)


async def _read_then_close(http: httpx.AsyncClient, url: str, chunks: int) -> tuple[list[bytes], float]:
    """Read `chunks` chunks, close the response; (what was read, seconds the close took)."""
    seen: list[bytes] = []
    async with http.stream("POST", url, json=BODY) as response:
        async for chunk in response.aiter_raw():
            seen.append(chunk)
            if len(seen) == chunks:
                break
        started = time.monotonic()
        await response.aclose()
    return seen, time.monotonic() - started


async def test_a_body_closed_early_is_drained_and_ends_in_eof_when_the_server_finished(tmp_path: Path) -> None:
    path = tmp_path / "early.jsonl"
    async with LoopbackServer(upstream(delay=0.05)) as server:
        async with use_cassette(path, mode="once") as http:
            seen, _ = await _read_then_close(http, server.base_url + "/v1/messages", chunks=2)
        assert await server.all_connections_closed(), "the drained response was still released"
    assert seen == SSE_EVENTS[:2]
    stored = load(path).interactions[0].response
    assert stored.end.kind == "eof", "the server finished the body; only the client stopped reading"
    assert [c.data for c in stored.chunks] == SSE_EVENTS, "what the client left unread is recorded too"


async def test_a_server_that_does_not_finish_in_time_ends_in_client_closed(tmp_path: Path) -> None:
    path = tmp_path / "stalled.jsonl"
    async with LoopbackServer(upstream(SSE_EVENTS[:2], end="stall")) as server:
        async with _recorder(path, drain_timeout_s=0.2) as http:
            seen, closing = await _read_then_close(http, server.base_url + "/v1/messages", chunks=1)
        assert await server.all_connections_closed()
    assert seen == SSE_EVENTS[:1]
    assert 0.15 <= closing < 2, "the drain waited for its time bound, and no longer"
    stored = load(path).interactions[0].response
    assert stored.end.kind == "client_closed"
    assert [c.data for c in stored.chunks] == SSE_EVENTS[:2], "the drained chunk is kept"
    # Replayed, the body ends cleanly where the recording stopped, by the transport and by a loopback plan.
    async with httpx.AsyncClient(transport=ReplayTransport(load(path), match="any")) as client:
        replayed = await client.post("http://replay.test/")
    assert replayed.content == b"".join(SSE_EVENTS[:2])
    assert plan(load(path)).end == "eof"


async def test_the_drain_stops_at_its_byte_budget(tmp_path: Path) -> None:
    path = tmp_path / "budget.jsonl"
    pieces = [b"data: " + bytes([65 + n]) * 94 + b"\n\n" for n in range(20)]  # 100 bytes each
    async with (
        LoopbackServer(upstream(pieces, delay=0.01, end="stall")) as server,
        _recorder(path, drain_max_bytes=250) as http,
    ):
        _, closing = await _read_then_close(http, server.base_url + "/v1/messages", chunks=1)
    stored = load(path).interactions[0].response
    assert stored.end.kind == "client_closed"
    assert 3 <= len(stored.chunks) <= 5, "one chunk read by the client, then about 250 bytes drained"
    assert closing < 2, "the byte budget ended the drain long before its 5 s time bound"


async def test_a_reader_cancelled_mid_read_records_client_closed_at_once(tmp_path: Path) -> None:
    path = tmp_path / "cancelled.jsonl"
    first_chunk = asyncio.Event()

    async def reader(http: httpx.AsyncClient, url: str) -> None:
        async with http.stream("POST", url, json=BODY) as response:
            async for _ in response.aiter_raw():
                first_chunk.set()

    async with LoopbackServer(upstream(SSE_EVENTS[:1], end="stall")) as server, _recorder(path) as http:
        task = asyncio.create_task(reader(http, server.base_url + "/v1/messages"))
        await asyncio.wait_for(first_chunk.wait(), 5)
        cancelled_at = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert time.monotonic() - cancelled_at < 1, "a cancelled reader never waits for the 5 s drain"
    stored = load(path).interactions[0].response
    assert stored.end.kind == "client_closed"
    assert [c.data for c in stored.chunks] == SSE_EVENTS[:1]


def _adapters() -> list[tuple[str, str]]:
    return [("anthropic", "anthropic-messages"), ("compatible_chat", "openai-completions")]


@pytest.mark.parametrize(("adapter", "api"), _adapters())
async def test_readme_steps_4_and_5_record_with_a_conformant_adapter_then_pass_the_harness(
    adapter: str, api: str, tmp_path: Path
) -> None:
    """Record a cassette through `use_cassette(mode="once")` with a real adapter against a loopback
    server, then run the harness on that cassette: the adapter stops at the terminal marker, so
    the recording must end as the server ended it or M4/T1 fail on the adapter's own recording."""
    if adapter == "anthropic":
        from conformance import Target
        from streamfns.anthropic import ADAPTER
        from streamfns.anthropic import stream_anthropic as stream_fn

        target = Target.from_adapter(ADAPTER)
    else:
        from examples.compatible_chat.adapter import stream_compatible_chat as stream_fn
        from examples.compatible_chat.conformance import TARGET as target
    profile = profile_for(api)
    assert profile is not None
    source = library.load(profile.recordings["text"])
    folder = tmp_path / "cassettes"
    async with LoopbackServer(plan(source)) as server:  # stands in for the vendor's API
        model = Model(id=source.model or "m", api=api, provider="loopback", base_url=server.base_url)
        async with use_cassette(folder / "text.jsonl", mode="once", api=api, model=model.id) as http:
            options = StreamOptions(api_key="test-key-not-a-secret", http_client=http)
            message = await stream_fn(model, Context(messages=[UserMessage(content="Say hello.")]), options).result()
    assert message.stop_reason == "stop", message.error_message
    recorded = load(folder / "text.jsonl").interactions[0].response
    assert recorded.end.kind == "eof"
    assert recorded.body == source.interactions[0].response.body
    report = await conformance.run(target, cassettes=folder, checks=["P1", "T1", "M4", "C1"])
    assert report.recordings == ("text",)
    assert report.ids("fail") == [], report.to_text()
    assert sorted(report.ids("pass")) == ["C1", "M4", "P1", "T1"], report.to_text()
