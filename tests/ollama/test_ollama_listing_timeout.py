"""``pulled_models`` (what ``streamfns models ollama`` calls): its ``timeout`` bounds the whole call, not
each read (issue 35, item 7). Over real loopback HTTP: a server that trickles ``/api/tags`` one byte at a
time, far slower than the timeout allows, ends the listing with None long before the trickle would
have finished; a trickling ``/api/show`` costs the details, not the listing."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest

from conformance.loopback import LoopbackServer, ReceivedRequest, Scripted
from streamfns.ollama.server import pulled_models, pulled_models_async

TAGS = json.dumps({"models": [{"name": "gemma3:1b"}, {"name": "qwen3:8b"}]}).encode()
SHOW = json.dumps({"model_info": {"gemma3.context_length": 32768}, "capabilities": ["completion"]}).encode()
DRIP_S = 0.2
JSON = [("content-type", "application/json")]


def _trickled(body: bytes) -> Scripted:
    """``body`` one byte every DRIP_S seconds."""
    return Scripted(headers=JSON, chunks=[(DRIP_S, body[at : at + 1]) for at in range(len(body))])


def _trickle_s(body: bytes) -> float:
    return DRIP_S * len(body)


async def test_a_trickled_tag_listing_ends_at_the_timeout_not_after_the_trickle() -> None:
    async with LoopbackServer(_trickled(TAGS)) as server:
        started = time.monotonic()
        found = await pulled_models_async(server.base_url, timeout=0.5)
        took = time.monotonic() - started
        assert len(server.requests) == 1, "the server was asked"
    assert found is None
    # The trickle takes 15 s; each read comes within 0.2 s, so a per-read timeout would wait it out.
    assert _trickle_s(TAGS) > 10
    assert took < _trickle_s(TAGS) / 5, f"took {took:.1f}s of a {_trickle_s(TAGS):.0f}s trickle"


async def test_the_blocking_call_keeps_the_same_bound() -> None:
    async with LoopbackServer(_trickled(TAGS)) as server:
        started = time.monotonic()
        found = await asyncio.to_thread(pulled_models, server.base_url, timeout=0.5)
        took = time.monotonic() - started
    assert found is None
    assert took < _trickle_s(TAGS) / 5, f"took {took:.1f}s of a {_trickle_s(TAGS):.0f}s trickle"


async def test_a_trickled_show_costs_the_details_not_the_listing() -> None:
    def respond(request: ReceivedRequest) -> Scripted:
        if request.path == "/api/tags":
            return Scripted(headers=JSON, chunks=[(0.0, TAGS)])
        return _trickled(SHOW)

    async with LoopbackServer(respond) as server:
        started = time.monotonic()
        found = await pulled_models_async(server.base_url, timeout=0.6)
        took = time.monotonic() - started
    assert found is not None
    assert [(model.id, model.context_window) for model in found] == [("gemma3:1b", 0), ("qwen3:8b", 0)]
    assert took < _trickle_s(SHOW) / 5, f"took {took:.1f}s of a {_trickle_s(SHOW):.0f}s trickle"


async def test_called_blocking_from_a_running_loop_it_still_answers() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/tags":
            return httpx.Response(200, content=TAGS)
        return httpx.Response(200, content=SHOW)

    found = pulled_models("http://box:11434", transport=httpx.MockTransport(handler))  # on this loop's thread
    assert found is not None
    assert [(model.id, model.context_window) for model in found] == [("gemma3:1b", 32768), ("qwen3:8b", 32768)]


@pytest.mark.parametrize("host", ["x@127.0.0.1:{port}", "127.0.0.1:{port}#@ollama.com", "127.0.0.1:{port}/?"])
async def test_an_ollama_host_that_could_move_the_listing_asks_nobody(
    monkeypatch: pytest.MonkeyPatch, host: str
) -> None:
    async with LoopbackServer(Scripted(headers=JSON, chunks=[(0.0, TAGS)])) as server:
        port = server.base_url.rsplit(":", 1)[1]
        monkeypatch.setenv("OLLAMA_HOST", host.format(port=port))
        assert await pulled_models_async(timeout=1.0) is None
        assert server.requests == []
