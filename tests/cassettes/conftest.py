"""The `server` fixture: the project's loopback server playing five SSE events per request."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from conformance.loopback import LoopbackServer
from tests.cassettes._helpers import upstream


@pytest.fixture
async def server() -> AsyncIterator[LoopbackServer]:
    """A started loopback server (the default `upstream()` plan for every request), closed after the test."""
    async with LoopbackServer(upstream()) as loopback:
        yield loopback
