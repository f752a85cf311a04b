"""Every adapter this project ships is conformant on the kit's aiohttp transport too: the same bar as
on httpx (``test_conformance_builtin``), with the kit's process-wide transport set to aiohttp."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

import conformance
from conformance.targets import builtin_targets
from streamfns._adapters import builtin_adapters
from streamfns.kit import HttpRequest, HttpResponse, set_default_transport
from streamfns.kit.transport_aiohttp import AiohttpTransport
from streamfns.kit.transport_httpx import HttpxTransport

BUILTIN_APIS = sorted(builtin_adapters())


class _Sent:
    """How many requests went out on each transport (the adapter runs in the harness's worker thread)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.by: dict[str, int] = {"aiohttp": 0, "httpx": 0}

    def count(self, name: str) -> None:
        with self.lock:
            self.by[name] += 1


@pytest.fixture
def on_aiohttp(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Sent]:
    """The kit's process-wide transport is aiohttp for the test (then back to the environment's
    choice); every request the kit sends is counted by transport."""
    sent = _Sent()
    aiohttp_send = AiohttpTransport.send
    httpx_send = HttpxTransport.send

    async def via_aiohttp(self: AiohttpTransport, request: HttpRequest) -> HttpResponse:
        sent.count("aiohttp")
        return await aiohttp_send(self, request)

    async def via_httpx(self: HttpxTransport, request: HttpRequest) -> HttpResponse:
        sent.count("httpx")
        return await httpx_send(self, request)

    monkeypatch.setattr(AiohttpTransport, "send", via_aiohttp)
    monkeypatch.setattr(HttpxTransport, "send", via_httpx)
    set_default_transport("aiohttp")
    try:
        yield sent
    finally:
        set_default_transport(None)


@pytest.mark.slow
@pytest.mark.parametrize("api", BUILTIN_APIS)
async def test_every_builtin_adapter_is_conformant_on_aiohttp(api: str, on_aiohttp: _Sent) -> None:
    report = await conformance.run(builtin_targets()[api])
    assert report.transport == "aiohttp", report.to_text()
    assert report.failing == [], report.to_text()
    assert report.ids("unsupported") == [], report.to_text()
    assert report.ids("xfail") == [], report.to_text()
    assert report.verdict == "conformant", report.to_text()
    # The run really went out on aiohttp: every request the kit sent, none on httpx.
    assert on_aiohttp.by["aiohttp"] > 0, on_aiohttp.by
    assert on_aiohttp.by["httpx"] == 0, on_aiohttp.by
