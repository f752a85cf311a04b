"""ReplayTransport: exact chunks, timing modes, transport failures, matching and play accounting."""

from __future__ import annotations

import time
from dataclasses import replace

import httpx
import pytest

from cassettes import (
    Cassette,
    ReplayTransport,
    RequestNotRecorded,
    Timing,
    UnplayedInteractions,
    stall,
    truncate,
)
from tests.cassettes._helpers import make_cassette

URL = "https://api.example.test/v1/messages"
CHUNKS = [b'event: a\ndata: {"x": 1}\n\n', b"event: b\nda", b"ta: {}\n\n", b"\xe2\x82", b"\xac\n\n"]


async def _read_into(client: httpx.AsyncClient, seen: list[bytes]) -> None:
    """Stream the body into `seen` chunk by chunk, so a test can see what came before a failure."""
    async with client.stream("POST", URL, json={"model": "m", "stream": True}) as response:
        async for chunk in response.aiter_raw():
            seen.append(chunk)  # noqa: PERF401 - the list must fill up before the error, not after


async def _collect(client: httpx.AsyncClient) -> tuple[httpx.Response, list[bytes]]:
    seen: list[bytes] = []
    async with client.stream("POST", URL, json={"model": "m", "stream": True}) as response:
        seen.extend([chunk async for chunk in response.aiter_raw()])
    return response, seen


async def test_replay_yields_exactly_the_recorded_chunks() -> None:
    transport = ReplayTransport(make_cassette(CHUNKS))
    async with httpx.AsyncClient(transport=transport) as client:
        response, seen = await _collect(client)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream"
    assert seen == CHUNKS
    assert transport.played == (0,)
    assert transport.unplayed() == []


def test_the_sync_twin_replays_the_same_chunks() -> None:
    transport = ReplayTransport(make_cassette(CHUNKS))
    with (
        httpx.Client(transport=transport) as client,
        client.stream("POST", URL, json={"model": "m", "stream": True}) as response,
    ):
        seen = list(response.iter_raw())
    assert seen == CHUNKS


async def _elapsed(cassette: Cassette, timing: Timing) -> float:
    transport = ReplayTransport(cassette, timing=timing)
    async with httpx.AsyncClient(transport=transport) as client:
        start = time.monotonic()
        await _collect(client)
        return time.monotonic() - start


async def test_timing_instant_recorded_and_scaled() -> None:
    cassette = make_cassette([b"a", b"b", b"c"], times=[0, 100, 200])
    assert await _elapsed(cassette, "instant") < 0.05
    recorded = await _elapsed(cassette, "recorded")
    assert 0.19 <= recorded < 0.6
    scaled = await _elapsed(cassette, 0.25)
    assert 0.045 <= scaled < 0.15


async def test_recorded_timing_delays_the_response_head_too() -> None:
    cassette = make_cassette([b"a"], times=[150])
    interaction = cassette.interactions[0]
    late_head = replace(interaction, response=replace(interaction.response, t_ms=120))
    transport = ReplayTransport(replace(cassette, interactions=(late_head,)), timing="recorded")
    async with httpx.AsyncClient(transport=transport) as client:
        start = time.monotonic()
        async with client.stream("POST", URL, json={"model": "m", "stream": True}) as response:
            head_after = time.monotonic() - start
            await response.aread()
    assert head_after >= 0.11


def test_negative_or_unknown_timing_is_rejected() -> None:
    with pytest.raises(ValueError, match="timing"):
        ReplayTransport(make_cassette([b"a"]), timing=-1)
    with pytest.raises(ValueError, match="timing"):
        ReplayTransport(make_cassette([b"a"]), timing="fast")  # type: ignore[arg-type]


async def test_reset_raises_read_error_after_the_prefix() -> None:
    transport = ReplayTransport(make_cassette(CHUNKS[:2], end="reset"))
    seen: list[bytes] = []
    async with httpx.AsyncClient(transport=transport) as client:
        with pytest.raises(httpx.ReadError) as caught:
            await _read_into(client, seen)
    assert seen == CHUNKS[:2]
    assert caught.value.request.url == URL


async def test_timeout_end_raises_read_timeout() -> None:
    transport = ReplayTransport(make_cassette([b"data: 1\n\n"], end="timeout"))
    async with httpx.AsyncClient(transport=transport) as client:
        with pytest.raises(httpx.ReadTimeout):
            await _collect(client)


async def test_a_stall_sleeps_even_with_instant_timing() -> None:
    cassette = stall(make_cassette([b"a", b"b"]), at_chunk=1, seconds=0.2)
    assert await _elapsed(cassette, "instant") >= 0.19


async def test_a_stall_longer_than_the_read_timeout_raises_read_timeout() -> None:
    cassette = stall(make_cassette([b"a", b"b"]), at_chunk=1, seconds=30)
    seen: list[bytes] = []
    async with httpx.AsyncClient(transport=ReplayTransport(cassette), timeout=httpx.Timeout(5, read=0.1)) as client:
        start = time.monotonic()
        with pytest.raises(httpx.ReadTimeout):
            await _read_into(client, seen)
        elapsed = time.monotonic() - start
    assert seen == [b"a"]
    assert 0.09 <= elapsed < 1


async def test_closing_mid_stream_is_clean() -> None:
    transport = ReplayTransport(make_cassette(CHUNKS))
    async with httpx.AsyncClient(transport=transport) as client:
        async with client.stream("POST", URL, json={"model": "m", "stream": True}) as response:
            first = await anext(response.aiter_raw())
            await response.aclose()
        assert response.is_closed
    assert first == CHUNKS[0]


def _two_requests() -> Cassette:
    first = make_cassette([b"one"], body=b'{"model":"m","n":1}')
    second = make_cassette([b"two"], body=b'{"model":"m","n":2}')
    return replace(first, interactions=first.interactions + second.interactions)


async def test_matching_picks_by_body_and_reports_unplayed() -> None:
    transport = ReplayTransport(_two_requests())
    async with httpx.AsyncClient(transport=transport) as client:
        response = await client.post(URL, json={"n": 2, "model": "m"})
    assert response.content == b"two"
    assert transport.unplayed() == [0]
    with pytest.raises(UnplayedInteractions) as caught:
        transport.assert_all_played()
    assert caught.value.unplayed == (0,)
    assert f"#0 POST {URL}" in str(caught.value)


async def test_an_unmatched_request_shows_the_nearest_and_the_differing_paths() -> None:
    transport = ReplayTransport(_two_requests(), name="two.jsonl")
    async with httpx.AsyncClient(transport=transport) as client:
        with pytest.raises(RequestNotRecorded) as caught:
            await client.post(URL, json={"model": "m", "n": 3, "extra": True})
    message = str(caught.value)
    assert "no recorded interaction matches POST" in message
    assert "two.jsonl" in message
    assert "nearest recorded request: #0" in message
    assert "body $.n: recorded 1, sent 3" in message
    assert "body $.extra: only in the sent request (true)" in message


async def test_a_different_url_or_method_is_named() -> None:
    transport = ReplayTransport(make_cassette([b"x"]))
    async with httpx.AsyncClient(transport=transport) as client:
        with pytest.raises(RequestNotRecorded, match=r"url: recorded https://api\.example\.test/v1/messages, sent"):
            await client.post(URL + "?beta=1", json={"model": "m", "stream": True})
        with pytest.raises(RequestNotRecorded, match="method: recorded POST, sent PUT"):
            await client.put(URL, json={"model": "m", "stream": True})


async def test_identical_requests_play_in_recorded_order_then_fail() -> None:
    first = make_cassette([b"first"])
    second = make_cassette([b"second"])
    transport = ReplayTransport(replace(first, interactions=first.interactions + second.interactions))
    async with httpx.AsyncClient(transport=transport) as client:
        bodies = [(await client.post(URL, json={"model": "m", "stream": True})).content for _ in range(2)]
        with pytest.raises(RequestNotRecorded, match=r"recorded 2 time\(s\) \(#0, #1\) and each was already played"):
            await client.post(URL, json={"model": "m", "stream": True})
    assert bodies == [b"first", b"second"]


async def test_allow_repeats_replays_the_last_match() -> None:
    transport = ReplayTransport(make_cassette([b"only"]), allow_repeats=True)
    async with httpx.AsyncClient(transport=transport) as client:
        bodies = [(await client.post(URL, json={"model": "m", "stream": True})).content for _ in range(3)]
    assert bodies == [b"only"] * 3


async def test_match_any_ignores_the_request_and_plays_in_order() -> None:
    transport = ReplayTransport(_two_requests(), match="any")
    async with httpx.AsyncClient(transport=transport) as client:
        one = await client.get("http://whatever.test/else")
        two = await client.post("http://other.test/", content=b"anything")
        with pytest.raises(RequestNotRecorded, match="all 2 interactions were already played"):
            await client.get("http://whatever.test/")
    assert (one.content, two.content) == (b"one", b"two")


async def test_ignored_json_paths_and_key_order_do_not_matter() -> None:
    cassette = make_cassette([b"ok"], body=b'{"metadata":{"user_id":"a"},"model":"m"}')
    transport = ReplayTransport(cassette, ignore_paths=["metadata.user_id"])
    async with httpx.AsyncClient(transport=transport) as client:
        response = await client.post(URL, content=b'{ "model" : "m", "metadata": {"user_id": "zzz"} }')
    assert response.content == b"ok"


async def test_credentials_in_live_requests_do_not_prevent_a_match() -> None:
    fake_key = "AIza" + "Q" * 35
    cassette = make_cassette([b"ok"], url="https://gen.example.test/v1:stream?alt=sse")
    transport = ReplayTransport(cassette)
    async with httpx.AsyncClient(transport=transport) as client:
        response = await client.post(
            "https://gen.example.test/v1:stream",
            params={"key": fake_key, "alt": "sse"},
            headers={"x-goog-api-key": fake_key},
            json={"model": "m", "stream": True, "api_key": fake_key},
        )
    assert response.content == b"ok"


async def test_framing_headers_from_a_recording_are_not_replayed() -> None:
    cassette = make_cassette([b"plain"])
    interaction = cassette.interactions[0]
    headers = (*interaction.response.headers, ("content-encoding", "gzip"), ("content-length", "999"))
    tampered = replace(interaction, response=replace(interaction.response, headers=headers))
    transport = ReplayTransport(replace(cassette, interactions=(tampered,)))
    async with httpx.AsyncClient(transport=transport) as client:
        response = await client.post(URL, json={"model": "m", "stream": True})
    assert response.content == b"plain"
    assert "content-encoding" not in response.headers


async def test_a_truncated_cassette_replays_its_prefix_then_resets() -> None:
    cassette = truncate(make_cassette(CHUNKS), after_bytes=30)
    transport = ReplayTransport(cassette)
    seen: list[bytes] = []
    async with httpx.AsyncClient(transport=transport) as client:
        with pytest.raises(httpx.ReadError):
            await _read_into(client, seen)
    assert b"".join(seen) == b"".join(CHUNKS)[:30]


def test_an_empty_cassette_says_it_holds_nothing() -> None:
    transport = ReplayTransport(Cassette())
    with httpx.Client(transport=transport) as client, pytest.raises(RequestNotRecorded, match="holds no interactions"):
        client.get(URL)
