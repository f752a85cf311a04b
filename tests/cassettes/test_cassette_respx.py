"""A cassette mounted as respx routes: a suite that mocks httpx with respx replays real recordings.

The adapter is called as in production — no ``http_client``: it builds its own httpx client, which
respx patches — and must end with the same message as when the recording is replayed through a
``ReplayTransport`` handed to it.
"""

from __future__ import annotations

import subprocess
import sys

import httpx
import pytest
import respx

import streamfns
from cassettes import ReplayTransport, RequestNotRecorded, library
from cassettes.respx_mount import mount
from normalize import AssistantMessage, Context, StreamOptions, UserMessage, validate_events
from streamfns.demo import model_for_cassette
from tests.cassettes._helpers import make_cassette

CONTEXT = Context(messages=[UserMessage(content="Hi")])


async def _through_a_transport(name: str) -> AssistantMessage:
    cassette = library.load(name)
    async with httpx.AsyncClient(transport=ReplayTransport(cassette, match="any")) as http:
        options = StreamOptions(api_key="test-key", http_client=http)
        return await streamfns.stream(model_for_cassette(cassette), CONTEXT, options).result()


@pytest.mark.parametrize("name", ["llma__text_haiku45", "llma__parallel_tool_use_x2_haiku45"])
async def test_an_adapter_with_its_own_client_replays_a_bundled_recording_through_respx(name: str) -> None:
    cassette = library.load(name)
    with respx.mock(assert_all_called=True) as router:
        replay = mount(router, cassette, match="any")
        stream = streamfns.stream(model_for_cassette(cassette), CONTEXT, StreamOptions(api_key="test-key"))
        events = [event async for event in stream]
        message = await stream.result()
        assert router.calls.call_count == 1  # respx forgets its calls when the mock ends
        assert router.calls.last.request.url == "https://api.anthropic.com/v1/messages"
    assert validate_events(events) == []
    assert replay.played == (0,)
    expected = await _through_a_transport(name)
    assert message.stop_reason == expected.stop_reason != "error"
    assert message.content == expected.content
    assert message.usage == expected.usage


async def test_chunks_keep_their_boundaries_for_async_and_sync_clients() -> None:
    chunks = [b"data: one\n\n", b"data: t", b"wo\n\n"]
    cassette = make_cassette(chunks, url="https://api.example.test/v1/stream")
    with respx.mock() as router:
        replay = mount(router, cassette, allow_repeats=True)
        async with (
            httpx.AsyncClient() as client,
            client.stream("POST", "https://api.example.test/v1/stream", content=b'{"model":"m","stream":true}') as r,
        ):
            assert [piece async for piece in r.aiter_raw()] == chunks
        with (
            httpx.Client() as client,
            client.stream("POST", "https://api.example.test/v1/stream", content=b'{"stream":true,"model":"m"}') as r,
        ):
            assert list(r.iter_raw()) == chunks  # key order is not a difference: bodies match canonically
    assert replay.played == (0, 0)


async def test_a_request_the_cassette_does_not_hold_fails_in_the_client_with_the_nearest_one() -> None:
    cassette = make_cassette([b"data: x\n\n"], url="https://api.example.test/v1/stream")
    with respx.mock(assert_all_called=False) as router:
        replay = mount(router, cassette)
        async with httpx.AsyncClient() as client:
            with pytest.raises(RequestNotRecorded, match=r"\$\.model: recorded \"m\", sent \"other\""):
                await client.post("https://api.example.test/v1/stream", json={"model": "other", "stream": True})
    assert len(replay.misses) == 1
    assert replay.unplayed() == [0]


async def test_routes_are_the_recorded_urls_and_the_suites_own_routes_still_answer() -> None:
    cassette = make_cassette([b"data: x\n\n"], url="https://api.example.test/v1/stream")
    with respx.mock() as router:
        mount(router, cassette)
        router.get("https://status.example.test/ok").respond(204)
        async with httpx.AsyncClient() as client:
            assert (await client.get("https://status.example.test/ok")).status_code == 204
            response = await client.post("https://api.example.test/v1/stream", content=b'{"model":"m","stream":true}')
            assert response.content == b"data: x\n\n"
            with pytest.raises(respx.models.AllMockedAssertionError):
                await client.post("https://api.example.test/v2/elsewhere", content=b"{}")


def test_importing_cassettes_does_not_import_respx() -> None:
    code = "import sys, cassettes; print('respx' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "False\n"
