"""After a Copilot login, each catalog model's policy is accepted for the account (as Copilot's own
clients do once: some models answer 400 until it is), at the api host the token exchange named. It is
best effort: refusals and failures never fail the login, and nothing of it reaches a message."""

from __future__ import annotations

import asyncio
import json

import pytest

from streamfns.auth import CredentialStore, login, register_oauth_provider, reset_oauth_providers
from streamfns.catalog import list_models
from tests.auth.oauth_server import FakeTime, Interaction, OAuthServer, Received, Reply

IDS = [model.id for model in list_models("github-copilot")]


@pytest.fixture(autouse=True)
def _fresh_registry() -> object:
    yield None
    reset_oauth_providers()


@pytest.mark.parametrize("status", [200, 400, 500])
def test_a_login_accepts_each_models_policy_and_any_answer_keeps_the_login(
    status: int, tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeTime()
    seen: list[Received] = []
    with OAuthServer() as server:
        register_oauth_provider(server.copilot(sleep=fake.sleep, clock=fake.monotonic))

        def policy(request: Received) -> Reply:
            seen.append(request)
            return Reply(status, {"error": f"policy said {request.headers.get('authorization', '')}"})

        for model_id in IDS:
            server.add_route("POST", f"/models/{model_id}/policy", policy)
        store = CredentialStore(f"{tmp_path}/auth.json")
        credential = asyncio.run(login("github-copilot", Interaction(), store=store))
    assert store.load("github-copilot") is not None, "the login stands whatever the policies answered"
    assert sorted(request.path for request in seen) == sorted(f"/models/{model_id}/policy" for model_id in IDS)
    for request in seen:
        assert json.loads(request.body) == {"state": "enabled"}
        assert request.headers["authorization"] == f"Bearer {credential.access}"
        assert request.headers["openai-intent"] == "chat-policy"
        assert request.headers["copilot-integration-id"] == "vscode-chat"


def test_an_unreachable_policy_host_does_not_fail_the_login(tmp_path: object) -> None:
    fake = FakeTime()
    with OAuthServer() as server:
        # The exchange names an api host nothing listens on (a closed loopback port).
        server.copilot_api = "http://127.0.0.1:9"
        register_oauth_provider(server.copilot(sleep=fake.sleep, clock=fake.monotonic))
        store = CredentialStore(f"{tmp_path}/auth.json")
        asyncio.run(login("github-copilot", Interaction(), store=store))
    assert store.load("github-copilot") is not None
