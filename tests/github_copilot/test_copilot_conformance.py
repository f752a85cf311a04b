"""The Copilot conformance targets: their StreamFn signs in through the real login path (a loopback
token exchange, a temporary store, the OAuth signer), redacts the token the login obtained, leaves the
registrations as it found them — and each target is conformant."""

from __future__ import annotations

from pathlib import Path

import pytest

import conformance
from conformance import API_KEY
from conformance.copilot_target import GITHUB_TOKEN, TARGETS, CopilotStreamFn, copilot_recordings
from conformance.loopback import LoopbackServer, Scripted
from conformance.targets import github_copilot, github_copilot_completions, github_copilot_messages
from normalize import Context, Model, StreamOptions, UserMessage
from streamfns.auth import oauth_providers
from streamfns.kit.provider_auth import provider_signers

BODY = (Path(__file__).resolve().parent / "bodies" / "copilot_chat_text_gpt41.sse").read_bytes()
CONTEXT = Context(messages=[UserMessage(content="Hello")])
BY_NAME = {
    "github_copilot": github_copilot,
    "github_copilot_completions": github_copilot_completions,
    "github_copilot_messages": github_copilot_messages,
}


def made() -> CopilotStreamFn:
    fn = github_copilot_completions.stream_fn()
    assert isinstance(fn, CopilotStreamFn)
    return fn


def harness_model(base_url: str) -> Model:
    # As the harness builds it: its own provider name, the scenario's loopback server.
    return Model(id="gpt-4.1", api="openai-completions", provider="conformance", base_url=base_url)


async def test_each_call_is_signed_by_the_login_with_the_token_the_exchange_issued() -> None:
    fn = made()
    signer_before = provider_signers().get("github-copilot")
    oauth_before = oauth_providers().get("github-copilot")
    try:
        async with LoopbackServer(Scripted(chunks=[(0.0, BODY)])) as server:
            message = await fn(harness_model(server.base_url), CONTEXT, StreamOptions(api_key=API_KEY)).result()
            assert message.stop_reason == "stop", message.error_message
            assert message.provider == "github-copilot"
            (sent,) = server.requests
            # The harness's key reached the server only as the Copilot token the exchange handed out.
            assert sent.headers["authorization"] == f"Bearer {API_KEY}"
            assert sent.headers["copilot-integration-id"] == "vscode-chat"
            assert sent.headers["x-initiator"] == "user"
            assert GITHUB_TOKEN.encode() not in sent.body
            assert all(GITHUB_TOKEN not in value for value in sent.headers.values())
        token_server = fn.token_server
        assert token_server is not None
        assert token_server.exchanges == 1
        assert provider_signers().get("github-copilot") is not signer_before
    finally:
        await fn.aclose()
    assert fn.token_server is None
    assert provider_signers().get("github-copilot") == signer_before
    assert oauth_providers().get("github-copilot") is oauth_before


async def test_a_401_that_quotes_the_token_back_is_redacted_and_names_the_login() -> None:
    fn = made()
    echo = f'{{"error":{{"message":"bad token {API_KEY}","type":"authentication_error"}}}}'.encode()
    unauthorized = Scripted(status=401, headers=[("content-type", "application/json")], chunks=[(0.0, echo)])
    try:
        async with LoopbackServer(unauthorized) as server:
            message = await fn(harness_model(server.base_url), CONTEXT, StreamOptions(api_key=API_KEY)).result()
            assert len(server.requests) == 1, "the renewed login holds the same token: no second try"
        assert message.error_info is not None
        assert message.error_info.kind == "auth"
        text = message.error_message or ""
        assert API_KEY not in text
        assert "bad token" in text
        assert "streamfns login github-copilot" in text
        token_server = fn.token_server
        assert token_server is not None
        assert token_server.exchanges == 2, "the 401 forced an exchange"
    finally:
        await fn.aclose()


def test_each_target_covers_the_api_of_its_copilot_models_with_copilots_own_recordings_first() -> None:
    expected = {
        "github_copilot": ("openai-responses", ["vercel__github_copilot_SANITIZED"]),
        "github_copilot_completions": (
            "openai-completions",
            ["copilot__text_gpt41_SYNTHETIC", "copilot__tool_call_gemini3pro_SYNTHETIC"],
        ),
        "github_copilot_messages": (
            "anthropic-messages",
            ["copilot__thinking_sonnet45_SYNTHETIC", "copilot__tool_use_haiku45_SYNTHETIC"],
        ),
    }
    assert set(TARGETS) == set(expected) == set(BY_NAME)
    for name, (api, recorded) in expected.items():
        target = BY_NAME[name]
        assert target.capabilities.api == api
        package = "streamfns." + ("anthropic" if api == "anthropic-messages" else api.replace("-", "_"))
        assert [cassette.name for _, cassette in copilot_recordings(api, package)] == recorded
        given = target.cassettes
        assert isinstance(given, list)
        assert [Path(str(path)).stem for path in given][: len(recorded)] == recorded


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BY_NAME))
async def test_every_copilot_target_is_conformant(name: str) -> None:
    report = await conformance.run(BY_NAME[name])
    assert report.failing == [], report.to_text()
    assert report.ids("unsupported") == [], report.to_text()
    assert report.verdict == "conformant", report.to_text()
