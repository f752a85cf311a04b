"""Refreshing: the five-minute margin, the lock (across coroutines and across processes), adoption
after a 401, revoked logins, and expiries that survive clock skew."""

from __future__ import annotations

import asyncio
import multiprocessing
import time

import pytest

from streamfns.auth import (
    REFRESH_MARGIN_S,
    Credential,
    CredentialStore,
    LoginExpired,
    LoginRequired,
    fresh_credential,
    register_oauth_provider,
)
from streamfns.auth.credential import MAX_LIFETIME_S, MIN_LIFETIME_S, expiry
from tests.auth import race_worker
from tests.auth.oauth_server import ACCOUNT_ID, FakeTime, Interaction, OAuthServer


def seed_codex(server: OAuthServer, store: CredentialStore, *, left_s: float, now: float | None = None) -> Credential:
    tokens = server.codex_seed()
    credential = Credential(
        provider="openai-codex",
        access=tokens["access"],
        refresh=tokens["refresh"],
        expires=(time.time() if now is None else now) + left_s,
        account="someone@example.test",
        data={"account_id": ACCOUNT_ID},
    )
    store.save(credential)
    return credential


def seed_copilot(server: OAuthServer, store: CredentialStore, *, left_s: float) -> Credential:
    credential = Credential(
        provider="github-copilot",
        access="tid=fake-copilot-token-seed;exp=0",
        refresh=server.github_seed(),
        expires=time.time() + left_s,
        account="octocat-fake",
    )
    store.save(credential)
    return credential


async def test_refreshes_when_less_than_five_minutes_remain(server: OAuthServer, store: CredentialStore) -> None:
    register_oauth_provider(server.codex())
    stale = seed_codex(server, store, left_s=REFRESH_MARGIN_S - 1)
    fresh = await fresh_credential("openai-codex", store=store)
    assert server.counts["codex.refresh"] == 1
    assert fresh.access != stale.access
    assert fresh.refresh != stale.refresh  # rotated, and the new one kept
    assert fresh.expires == pytest.approx(time.time() + 3600, abs=5)
    assert store.load("openai-codex") == fresh
    # Fresh now: asked again, nothing is sent.
    assert await fresh_credential("openai-codex", store=store) == fresh
    assert server.counts["codex.refresh"] == 1


async def test_no_refresh_with_more_than_five_minutes_left(server: OAuthServer, store: CredentialStore) -> None:
    register_oauth_provider(server.codex())
    kept = seed_codex(server, store, left_s=REFRESH_MARGIN_S + 5)
    assert await fresh_credential("openai-codex", store=store) == kept
    assert server.counts["codex.refresh"] == 0


async def test_margin_is_measured_on_the_injected_clock(server: OAuthServer, store: CredentialStore) -> None:
    register_oauth_provider(server.codex())
    kept = seed_codex(server, store, left_s=3600)
    # The local clock jumped 58 minutes ahead (a laptop waking up): the token is nearly done.
    fresh = await fresh_credential("openai-codex", store=store, now=lambda: time.time() + 3480)
    assert fresh.access != kept.access
    assert server.counts["codex.refresh"] == 1


async def test_copilot_refresh_is_a_new_exchange(server: OAuthServer, store: CredentialStore) -> None:
    register_oauth_provider(server.copilot())
    stale = seed_copilot(server, store, left_s=10)
    fresh = await fresh_credential("github-copilot", store=store)
    assert server.counts["copilot.token"] == 1
    assert fresh.refresh == stale.refresh  # the GitHub token is kept
    assert fresh.access.startswith("tid=fake-copilot-token-")
    assert fresh.account == "octocat-fake"
    assert fresh.data["base_url"] == server.url


async def test_missing_login_names_the_command(store: CredentialStore) -> None:
    with pytest.raises(LoginRequired, match=r"run `streamfns login openai-codex`") as caught:
        await fresh_credential("openai-codex", store=store)
    assert caught.value.login_command == "streamfns login openai-codex"


@pytest.mark.parametrize("provider", ["openai-codex", "github-copilot"])
async def test_revoked_login_expires_and_is_kept(server: OAuthServer, store: CredentialStore, provider: str) -> None:
    register_oauth_provider(server.codex())
    register_oauth_provider(server.copilot())
    seeded = (
        seed_codex(server, store, left_s=1) if provider == "openai-codex" else seed_copilot(server, store, left_s=1)
    )
    server.revoked = True
    with pytest.raises(LoginExpired) as caught:
        await fresh_credential(provider, store=store)
    assert f"streamfns login {provider}" in str(caught.value)
    for secret in seeded.secrets():
        assert secret not in str(caught.value)
    assert store.load(provider) == seeded


async def test_force_adopts_a_token_another_process_saved(server: OAuthServer, store: CredentialStore) -> None:
    register_oauth_provider(server.codex())
    used = seed_codex(server, store, left_s=3600)
    # Another process refreshed and saved while this one's request was failing with a 401.
    newer = seed_codex(server, store, left_s=3600)
    adopted = await fresh_credential("openai-codex", store=store, force=True, seen=used)
    assert adopted == newer
    assert server.counts["codex.refresh"] == 0


async def test_force_refreshes_when_the_store_holds_the_rejected_token(
    server: OAuthServer, store: CredentialStore
) -> None:
    register_oauth_provider(server.codex())
    used = seed_codex(server, store, left_s=3600)  # plenty of time left, yet the server said 401
    renewed = await fresh_credential("openai-codex", store=store, force=True, seen=used)
    assert renewed.access != used.access
    assert server.counts["codex.refresh"] == 1


async def test_concurrent_coroutines_refresh_once(server: OAuthServer, store: CredentialStore) -> None:
    register_oauth_provider(server.codex())
    seed_codex(server, store, left_s=0)
    results = await asyncio.gather(*(fresh_credential("openai-codex", store=store) for _ in range(20)))
    assert server.counts["codex.refresh"] == 1
    assert len({result.access for result in results}) == 1


@pytest.mark.slow
def test_two_processes_racing_refresh_once(server: OAuthServer, store: CredentialStore) -> None:
    stale = seed_codex(server, store, left_s=-60)
    # The first refresh is held until a second arrives (or 3 s pass): without the lock both racers
    # reach the server; with it, the second waits and then finds the first's token.
    server.refresh_hold_s = 3.0
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(2)
    results: multiprocessing.Queue[tuple[str, str]] = context.Queue()
    racers = [
        context.Process(target=race_worker.refresh_once, args=(server.url, str(store.path), barrier, results))
        for _ in range(2)
    ]
    for racer in racers:
        racer.start()
    try:
        outcomes = [results.get(timeout=120) for _ in racers]
    finally:
        for racer in racers:
            racer.join(timeout=30)
    assert [kind for kind, _ in outcomes] == ["ok", "ok"], outcomes
    assert server.counts["codex.refresh"] == 1
    tokens = {access for _, access in outcomes}
    assert len(tokens) == 1
    stored = store.load("openai-codex")
    assert stored is not None
    assert tokens == {stored.access}
    assert stored.access != stale.access


# -- clock skew --------------------------------------------------------------------------------


def test_expiry_prefers_the_relative_lifetime() -> None:
    assert expiry(1000.0, relative=60, absolute=99_999_999) == 1060.0
    assert expiry(1000.0, relative="120", absolute=5) == 1120.0
    # No relative value: the absolute one, against the server's own clock when it said what it is.
    assert expiry(1000.0, absolute=50_000 + 1800, server_now=50_000) == 2800.0
    # Against the local clock: a time already past, or absurdly far, is clamped.
    assert expiry(1000.0, absolute=500) == 1000.0 + MIN_LIFETIME_S
    assert expiry(1000.0, absolute=1e12) == 1000.0 + MAX_LIFETIME_S
    assert expiry(1000.0, relative=1e12) == 1000.0 + MAX_LIFETIME_S
    # Garbage is ignored; the JWT exp is only a fallback.
    assert expiry(1000.0, relative=True, absolute="soon", fallback_absolute=1000 + 900) == 1900.0
    assert expiry(1000.0, relative=-5, default_s=42) == 1042.0
    assert expiry(1000.0, relative=float("nan"), absolute=float("inf"), default_s=7) == 1007.0


@pytest.mark.parametrize("offset_s", [-7200.0, 86_400.0 * 365])
async def test_copilot_expiry_ignores_server_clock_skew(store: CredentialStore, offset_s: float) -> None:
    fake = FakeTime()
    with OAuthServer(clock_offset_s=offset_s, copilot_refresh_in=None) as server:
        register_oauth_provider(server.copilot(sleep=fake.sleep, clock=fake.monotonic, now=fake.time))
        from streamfns.auth import login

        credential = await login("github-copilot", Interaction(), store=store)
        # expires_at (server clock) measured against the server's Date: the true 30-minute lifetime.
        assert credential.expires == pytest.approx(fake.time() + 1800, abs=5)

        server.send_date = False
        refreshed = await fresh_credential("github-copilot", store=store, force=True, seen=credential)
        # Without a Date, the skewed expires_at is clamped rather than trusted.
        expected = MIN_LIFETIME_S if offset_s < 0 else MAX_LIFETIME_S
        assert refreshed.expires == pytest.approx(fake.time() + expected, abs=5)


async def test_codex_expiry_uses_expires_in_not_the_skewed_jwt(store: CredentialStore) -> None:
    fake = FakeTime(start=2_000_000_000.0)  # the local clock is years off too
    with OAuthServer(clock_offset_s=-86_400.0 * 30) as server:
        register_oauth_provider(server.codex(sleep=fake.sleep, clock=fake.monotonic, now=fake.time))
        from streamfns.auth import login

        credential = await login("openai-codex", Interaction(), store=store)
        assert credential.expires == fake.time() + 3600
        assert await fresh_credential("openai-codex", store=store, now=fake.time) == credential
        assert server.counts["codex.refresh"] == 0
