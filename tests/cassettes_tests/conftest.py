"""Fixtures for the cassettes tests (helpers live in cassette_helpers.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from cassette_helpers import LoopbackServer


@pytest.fixture
async def server() -> AsyncIterator[LoopbackServer]:
    """A started loopback server, stopped after the test."""
    loopback = LoopbackServer()
    await loopback.start()
    try:
        yield loopback
    finally:
        await loopback.stop()
