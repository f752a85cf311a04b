"""``OAuthSigner``: what a request carries, explicit keys, failures as ``StreamFailure``, and the
renewal after a 401 (adopt, refresh, or give up)."""

from __future__ import annotations

import json
import time

import pytest

from normalize import Model, StreamOptions
from streamfns.auth import (
    Credential,
    CredentialStore,
    OAuthSigner,
    ProviderAuth,
    copilot_initiator,
    register_oauth_provider,
    signer_for,
)
from streamfns.kit import SigningRequest, StreamFailure
from tests.auth.oauth_server import ACCOUNT_ID, OAuthServer, fake_jwt


def signing(provider: str = "openai-codex", *, api_key: str | None = None, body: bytes = b"{}") -> SigningRequest:
    model = Model(id="gpt-fake", api="openai-responses", provider=provider, base_url="https://example.invalid/v1")
    return SigningRequest(
        "POST", "https://example.invalid/v1/responses", {}, body, model, StreamOptions(api_key=api_key)
    )


def stored(server: OAuthServer, store: CredentialStore, *, left_s: float = 3600) -> Credential:
    tokens = server.codex_seed()
    credential = Credential(
        provider="openai-codex",
        access=tokens["access"],
        refresh=tokens["refresh"],
        expires=time.time() + left_s,
        data={"account_id": ACCOUNT_ID},
    )
    store.save(credential)
    return credential


async def test_codex_signature_carries_token_account_and_secrets(server: OAuthServer, store: CredentialStore) -> None:
    register_oauth_provider(server.codex())
    credential = stored(server, store)
    signer = OAuthSigner("openai-codex", store=store)
    assert signer.login_hint == "run `streamfns login openai-codex`"
    signature = await signer(signing())
    assert signature.headers == {"authorization": f"Bearer {credential.access}", "chatgpt-account-id": ACCOUNT_ID}
    assert set(signature.secrets) == {credential.access, credential.refresh}
    assert signature.origin is None
    assert credential.access not in repr(signature)


async def test_copilot_signature_moves_to_the_account_origin(server: OAuthServer, store: CredentialStore) -> None:
    register_oauth_provider(server.copilot())
    credential = Credential(
        provider="github-copilot",
        access="tid=fake-copilot-token-abc;exp=1",
        refresh=server.github_seed(),
        expires=time.time() + 3600,
        data={"base_url": "https://api.business.githubcopilot.com"},
    )
    store.save(credential)
    body = json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode()
    signature = await OAuthSigner("github-copilot", store=store)(signing("github-copilot", body=body))
    assert signature.origin == "https://api.business.githubcopilot.com"
    assert signature.headers["authorization"] == f"Bearer {credential.access}"
    assert signature.headers["x-initiator"] == "user"
    assert signature.headers["copilot-integration-id"] == "vscode-chat"


async def test_explicit_api_key_skips_the_store(store: CredentialStore) -> None:
    token = fake_jwt({"https://api.openai.com/auth": {"chatgpt_account_id": "acct-from-key"}})
    signer = signer_for("openai-codex")
    signature = await signer(signing(api_key=f" {token} "))
    assert signature.headers == {"authorization": f"Bearer {token}", "chatgpt-account-id": "acct-from-key"}
    assert signature.secrets == (token,)
    assert await signer.unauthorized(signing(api_key=token)) is False
    assert not store.path.exists()


async def test_missing_login_is_an_auth_failure_naming_the_command(store: CredentialStore) -> None:
    with pytest.raises(StreamFailure) as caught:
        await OAuthSigner("openai-codex", store=store)(signing())
    assert caught.value.info.kind == "auth"
    assert "streamfns login openai-codex" in caught.value.message


async def test_unusable_store_is_an_auth_failure(store: CredentialStore) -> None:
    store.path.parent.mkdir(parents=True)
    store.path.write_text("[")
    store.path.chmod(0o600)
    with pytest.raises(StreamFailure) as caught:
        await OAuthSigner("openai-codex", store=store)(signing())
    assert caught.value.info.kind == "auth"
    assert str(store.path) in caught.value.message


async def test_unreachable_token_server_is_a_network_failure(store: CredentialStore) -> None:
    with OAuthServer() as server:
        register_oauth_provider(server.codex())
        stored(server, store, left_s=0)
    # The server is gone: the refresh cannot be asked.
    with pytest.raises(StreamFailure) as caught:
        await OAuthSigner("openai-codex", store=store)(signing())
    assert caught.value.info.kind == "network"


async def test_unauthorized_adopts_a_token_saved_elsewhere(server: OAuthServer, store: CredentialStore) -> None:
    register_oauth_provider(server.codex())
    stored(server, store)
    signer = OAuthSigner("openai-codex", store=store)
    request = signing()
    first = await signer(request)
    newer = stored(server, store)  # another process refreshed
    assert await signer.unauthorized(request) is True
    assert server.counts["codex.refresh"] == 0
    again = await signer(request)
    assert again.headers["authorization"] == f"Bearer {newer.access}" != first.headers["authorization"]


async def test_unauthorized_refreshes_a_rejected_token(server: OAuthServer, store: CredentialStore) -> None:
    register_oauth_provider(server.codex())
    used = stored(server, store)
    signer = OAuthSigner("openai-codex", store=store)
    request = signing()
    await signer(request)
    assert await signer.unauthorized(request) is True
    assert server.counts["codex.refresh"] == 1
    renewed = store.load("openai-codex")
    assert renewed is not None
    assert renewed.access != used.access


async def test_unauthorized_answers_the_credential_its_call_used(server: OAuthServer, store: CredentialStore) -> None:
    register_oauth_provider(server.codex())
    stored(server, store)
    signer = OAuthSigner("openai-codex", store=store)
    old_call, new_call = signing(), signing()
    await signer(old_call)
    stored(server, store)  # saved elsewhere, then used by a newer call of this signer
    await signer(new_call)
    # The old call's 401 answers the old token: the newer one is adopted, nothing is refreshed.
    assert await signer.unauthorized(old_call) is True
    assert server.counts["codex.refresh"] == 0


async def test_unauthorized_gives_up_when_the_refresh_is_refused(server: OAuthServer, store: CredentialStore) -> None:
    register_oauth_provider(server.codex())
    stored(server, store)
    signer = OAuthSigner("openai-codex", store=store)
    request = signing()
    await signer(request)
    server.revoked = True
    assert await signer.unauthorized(request) is False


def test_provider_auth_repr_masks() -> None:
    shown = repr(ProviderAuth({"authorization": "Bearer fake-token-abcdefghijkl"}, origin="https://x.test"))
    assert "fake-token-abcdefghijkl" not in shown
    assert "https://x.test" in shown


@pytest.mark.parametrize(
    ("body", "initiator"),
    [
        ({"messages": [{"role": "user", "content": "hi"}]}, "user"),
        ({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "x"}]}, "agent"),
        ({"messages": [{"role": "tool", "tool_call_id": "1", "content": "42"}]}, "agent"),
        ({"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]}]}, "agent"),
        ({"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}, "user"),
        ({"input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]}, "user"),
        ({"input": [{"type": "message", "role": "user", "content": "hi"}]}, "user"),
        ({"input": [{"type": "function_call_output", "call_id": "c", "output": "1"}]}, "agent"),
        ({"input": []}, "user"),
        ([1, 2], "user"),
    ],
)
def test_copilot_initiator(body: object, initiator: str) -> None:
    assert copilot_initiator(json.dumps(body).encode()) == initiator


def test_copilot_initiator_unreadable_body_is_user() -> None:
    assert copilot_initiator(b"\xff{") == "user"


@pytest.mark.parametrize(
    ("api", "kept"),
    [
        ("https://api.individual.githubcopilot.com", "https://api.individual.githubcopilot.com"),
        ("https://api.githubcopilot.com/", "https://api.githubcopilot.com"),
        ("https://evil.example", None),
        ("http://api.githubcopilot.com", None),
        ("https://api.githubcopilot.com/v1", None),
        ("https://user:pw@api.githubcopilot.com", None),
        ("https://githubcopilot.com.evil.example", None),
    ],
)
async def test_copilot_keeps_only_a_copilot_api_origin(
    server: OAuthServer, store: CredentialStore, api: str, kept: str | None
) -> None:
    from streamfns.auth import fresh_credential

    register_oauth_provider(server.copilot())
    store.save(Credential("github-copilot", "tid=fake-old-token;exp=1", server.github_seed(), time.time() - 1))
    server.copilot_api = api
    fresh = await fresh_credential("github-copilot", store=store)
    assert fresh.data.get("base_url") == kept
