"""Suite-wide settings.

Property tests are deterministic in this suite: every hypothesis test draws the same examples on every
run (``derandomize``), so CI never turns red on an example no developer saw. A test that wants more
examples says so with its own ``@settings``; they all start from this profile.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
from hypothesis import settings

from streamfns.kit import set_default_transport

settings.register_profile("streamfns", derandomize=True, print_blob=True)
settings.load_profile("streamfns")

os.environ["STREAMFNS_AUTH_FILE"] = str(Path(tempfile.mkdtemp(prefix="streamfns-test-auth-")) / "auth.json")


@pytest.fixture(params=["httpx", "aiohttp", "native"])
def each_transport(request: pytest.FixtureRequest) -> Iterator[str]:
    """Runs a test once per transport of the kit's own (``streamfns.kit.set_default_transport``): a
    module of tests about the kit's HTTP behaviour marks itself with it, so every guarantee it pins
    holds on httpx and on aiohttp alike."""
    name = cast("str", request.param)
    set_default_transport(name)
    try:
        yield name
    finally:
        set_default_transport(None)
