"""A session through the kit: the stored login signs each request, a 401 mid-session renews it once
and the stream still ends ``done``; a revoked login ends ``auth`` naming the login command; no token
(sent, refreshed or echoed by a hostile api) reaches the message.

A made-up provider (``echo-oauth``: the Codex login pointed at the loopback OAuth server) drives the
kit's Echo wire api (``tests/kit/_fake.py``), so only the auth path is under test here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from conformance.loopback import LoopbackServer, ReceivedRequest, Scripted
from normalize import AssistantMessage, Model, StreamOptions
from streamfns.auth import Credential, CredentialStore, OAuthSigner, register_oauth_provider
from streamfns.kit import register_provider_signer
from tests.auth.oauth_server import ACCOUNT_ID, OAuthServer
from tests.kit._fake import CONTEXT, HELLO, WIRE, reply

PROVIDER = "echo-oauth"


@pytest.fixture
def signed(server: OAuthServer, store: CredentialStore) -> Iterator[Credential]:
    """The provider registered (login + kit signer) with a stored, valid login; yields it."""
    register_oauth_provider(server.codex(name=PROVIDER))
    register_provider_signer(PROVIDER, OAuthSigner(PROVIDER, store=store))
    tokens = server.codex_seed()
    credential = Credential(
        PROVIDER, tokens["access"], tokens["refresh"], time.time() + 3600, data={"account_id": ACCOUNT_ID}
    )
    store.save(credential)
    yield credential
    register_provider_signer(PROVIDER, None)


def hostile_401(request: ReceivedRequest) -> Scripted:
    seen = request.headers.get("authorization", "")
    body = json.dumps({"error": {"message": f"token expired: {seen}", "code": seen}}).encode()
    return Scripted(status=401, headers=[("content-type", "application/json")], chunks=[(0.0, body)])


async def run(base_url: str) -> AssistantMessage:
    model = Model(id="echo-1", api="echo", provider=PROVIDER, base_url=base_url)
    stream = WIRE.stream_fn(model, CONTEXT, StreamOptions(max_retries=0))
    _ = [event async for event in stream]
    return await stream.result()


def assert_clean(message: AssistantMessage, server: OAuthServer) -> None:
    shown = [message.error_message or "", repr(message), json.dumps(message.to_json())]
    for secret in server.secrets():
        assert all(secret not in text for text in shown)


async def test_a_401_mid_session_refreshes_once_and_the_stream_completes(
    server: OAuthServer, store: CredentialStore, signed: Credential
) -> None:
    revoked: set[str] = set()

    def api(request: ReceivedRequest) -> Scripted:
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        return hostile_401(request) if token in revoked else reply(*HELLO)

    async with LoopbackServer(api) as echo:
        first = await run(echo.base_url)
        assert first.stop_reason == "stop"
        revoked.add(signed.access)  # the vendor revokes the access token mid-session
        second = await run(echo.base_url)
        assert second.stop_reason == "stop", second.error_message
        sent = [request.headers.get("authorization") for request in echo.requests]
        assert echo.requests[0].headers.get("chatgpt-account-id") == ACCOUNT_ID
    assert server.counts["codex.refresh"] == 1
    renewed = store.load(PROVIDER)
    assert renewed is not None
    assert sent == [f"Bearer {signed.access}", f"Bearer {signed.access}", f"Bearer {renewed.access}"]
    assert_clean(second, server)


async def test_a_revoked_login_ends_auth_naming_the_login_command(
    server: OAuthServer, store: CredentialStore, signed: Credential
) -> None:
    server.revoked = True
    server.hostile = True
    async with LoopbackServer(hostile_401) as echo:
        message = await run(echo.base_url)
        assert len(echo.requests) == 1
    assert message.stop_reason == "error"
    assert message.error_info is not None
    assert message.error_info.kind == "auth"
    assert (message.error_message or "").endswith(f"; log in again: run `streamfns login {PROVIDER}`")
    assert server.counts["codex.refresh"] == 1
    assert_clean(message, server)


async def test_an_expired_login_is_refreshed_before_the_request(
    server: OAuthServer, store: CredentialStore, signed: Credential
) -> None:
    store.save(Credential(PROVIDER, signed.access, signed.refresh, time.time() + 10, data=dict(signed.data)))
    async with LoopbackServer(reply(*HELLO)) as echo:
        message = await run(echo.base_url)
        sent = echo.requests[0].headers.get("authorization")
    assert message.stop_reason == "stop"
    assert server.counts["codex.refresh"] == 1
    assert sent != f"Bearer {signed.access}"


async def test_no_login_ends_auth_before_anything_is_sent(
    server: OAuthServer, store: CredentialStore, signed: Credential
) -> None:
    store.delete(PROVIDER)
    async with LoopbackServer(reply(*HELLO)) as echo:
        message = await run(echo.base_url)
        assert echo.requests == []
    assert message.error_info is not None
    assert message.error_info.kind == "auth"
    assert f"streamfns login {PROVIDER}" in (message.error_message or "")
