"""Fixtures of the auth tests: a loopback OAuth server, a store in a temporary directory, a fake clock,
and the provider registry reset after each test (tests register loopback copies of the built-ins)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from streamfns.auth import CredentialStore, reset_oauth_providers
from tests.auth.oauth_server import FakeTime, OAuthServer


@pytest.fixture(autouse=True)
def _fresh_registry(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    # Never the user's own store: a test that forgets `store=` still writes under tmp_path.
    monkeypatch.setenv("STREAMFNS_AUTH_FILE", str(tmp_path / "default" / "auth.json"))
    reset_oauth_providers()
    yield
    reset_oauth_providers()


@pytest.fixture
def server() -> Iterator[OAuthServer]:
    with OAuthServer() as running:
        yield running


@pytest.fixture
def store(tmp_path: Path) -> CredentialStore:
    return CredentialStore(tmp_path / "config" / "streamfns" / "auth.json")


@pytest.fixture
def fake() -> FakeTime:
    return FakeTime()
