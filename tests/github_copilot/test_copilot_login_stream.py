"""A stream on a Copilot model with a stored GitHub login, end to end over loopback: the kit's
provider signer exchanges the GitHub token at GitHub's ``copilot_internal/v2/token`` (played by
``tests/auth/oauth_server.py``), signs the request with the Copilot token and Copilot's headers, and
sends it to the account's api origin from the exchange — the same loopback server, which replays a
Copilot body. Then the failures a plan adds: a revoked login, an expired Copilot token mid-session, a
plan's rate limit."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cassettes import library
from normalize import (
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    StreamOptions,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    validate_events,
)
from streamfns import stream
from streamfns.auth import Credential, CredentialStore, register_oauth_provider, reset_oauth_providers
from streamfns.catalog import get_model
from streamfns.kit.provider_auth import register_provider_signer
from tests.auth.oauth_server import OAuthServer, Received, Reply

# Every behaviour here holds on each of the kit's transports (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("each_transport")

BODIES = Path(__file__).resolve().parent / "bodies"
LOGIN_COMMAND = "streamfns login github-copilot"
CONTEXT = Context(messages=[UserMessage(content="Hello")])

#: api -> (a Copilot model on it, the path its adapter posts to, a Copilot body it answers with)
APIS = {
    "openai-responses": (
        "gpt-5.3-codex",
        "/responses",
        library.load("vercel__github_copilot_SANITIZED").interactions[0].response.body,
    ),
    "openai-completions": ("gpt-4.1", "/chat/completions", (BODIES / "copilot_chat_text_gpt41.sse").read_bytes()),
    "anthropic-messages": (
        "claude-sonnet-4.5",
        "/v1/messages",
        (BODIES / "copilot_messages_thinking_sonnet45.sse").read_bytes(),
    ),
}
#: What a rate-limited Copilot request answers. No captured body was found (see the closing note of
#: issue 37): the message is the one Copilot users report, in the OpenAI error shape Copilot's apis use;
#: the delay comes in ``retry-after`` (assumed, as the research notes say).
RATE_LIMITED = {
    "error": {
        "message": "Sorry, you've hit a rate limit that restricts the number of Copilot model requests you can "
        "make within a specific time period. Please try again in 42 seconds.",
        "code": "rate_limited",
    }
}


def sse(body: bytes) -> Reply:
    return Reply(200, body, {"content-type": "text/event-stream"})


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[OAuthServer]:
    """A loopback GitHub + Copilot server, ``github-copilot`` pointed at it, the built-in provider
    signer, and a store (``STREAMFNS_AUTH_FILE``) holding a GitHub login whose Copilot token ran out."""
    monkeypatch.setenv("STREAMFNS_AUTH_FILE", str(tmp_path / "config" / "auth.json"))
    register_provider_signer("github-copilot", "streamfns.auth:signer_for")  # the built-in, loaded lazily
    with OAuthServer() as oauth:
        register_oauth_provider(oauth.copilot())
        stale = Credential(
            provider="github-copilot", access="tid=fake-stale-copilot-token", refresh=oauth.github_seed(), expires=0.0
        )
        CredentialStore().save(stale)
        try:
            yield oauth
        finally:
            reset_oauth_providers()
            register_provider_signer("github-copilot", "streamfns.auth:signer_for")


async def run(
    model_id: str, context: Context = CONTEXT, options: StreamOptions | None = None
) -> tuple[list[AssistantMessageEvent], AssistantMessage]:
    made = stream(get_model("github-copilot", model_id), context, options or StreamOptions())
    events = [event async for event in made]
    return events, await made.result()


def model_requests(server: OAuthServer, path: str) -> list[Received]:
    return [request for request in server.requests if request.path == path]


def assert_no_token_in(text: str, server: OAuthServer) -> None:
    for secret in server.secrets():
        assert secret not in text


@pytest.mark.parametrize("api", sorted(APIS))
async def test_a_stored_login_streams_a_copilot_body_to_done(server: OAuthServer, api: str) -> None:
    model_id, path, body = APIS[api]
    server.add_route("POST", path, lambda _: sse(body))
    events, message = await run(model_id)
    assert validate_events(events) == []
    assert message.stop_reason == "stop", message.error_message
    assert (message.provider, message.api) == ("github-copilot", api)
    assert message.usage.cost.basis == "subscription"

    (exchange,) = [request for request in server.requests if request.name == "copilot.token"]
    github_token = CredentialStore().load("github-copilot")
    assert github_token is not None
    assert exchange.headers["authorization"] == f"token {github_token.refresh}"
    (sent,) = model_requests(server, path)
    assert sent.headers["authorization"] == f"Bearer {github_token.access}"
    assert github_token.access.startswith("tid=fake-copilot-token-"), "the token the exchange issued"
    assert sent.headers["copilot-integration-id"] == "vscode-chat"
    assert sent.headers["editor-version"].startswith("vscode/")
    assert sent.headers["x-initiator"] == "user"
    assert "x-api-key" not in sent.headers
    assert github_token.data["base_url"] == server.url, "the account's api origin, from the exchange"

    # The Copilot token is kept in the store: the next call signs with it, no new exchange.
    await run(model_id)
    assert server.counts["copilot.token"] == 1
    assert len(model_requests(server, path)) == 2


async def test_a_tool_loop_continuation_is_sent_as_agent_initiated(server: OAuthServer) -> None:
    model_id, path, body = APIS["openai-completions"]
    server.add_route("POST", path, lambda _: sse(body))
    call = ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"})
    turn = AssistantMessage(
        content=[call], api="openai-completions", provider="github-copilot", model=model_id, stop_reason="toolUse"
    )
    result = ToolResultMessage(tool_call_id="call_1", tool_name="get_weather", content=[TextContent(text="18 C")])
    _, message = await run(model_id, Context(messages=[UserMessage(content="Weather?"), turn, result]))
    assert message.stop_reason == "stop", message.error_message
    assert model_requests(server, path)[0].headers["x-initiator"] == "agent"


@pytest.mark.parametrize("api", sorted(APIS))
async def test_a_revoked_github_login_ends_auth_naming_the_login_command(server: OAuthServer, api: str) -> None:
    model_id, path, body = APIS[api]
    server.add_route("POST", path, lambda _: sse(body))
    server.revoked = True
    events, message = await run(model_id)
    assert validate_events(events) == []
    assert message.stop_reason == "error"
    assert message.error_info is not None
    assert message.error_info.kind == "auth"
    assert LOGIN_COMMAND in (message.error_message or "")
    assert model_requests(server, path) == [], "nothing is sent without a Copilot token"
    assert_no_token_in(message.error_message or "", server)


async def test_no_login_at_all_ends_auth_naming_the_login_command(server: OAuthServer) -> None:
    assert CredentialStore().delete("github-copilot")
    _, message = await run("gpt-4.1")
    assert message.error_info is not None
    assert message.error_info.kind == "auth"
    assert LOGIN_COMMAND in (message.error_message or "")


@pytest.mark.parametrize("api", sorted(APIS))
async def test_an_expired_copilot_token_mid_session_is_exchanged_again_and_the_call_retried(
    server: OAuthServer, api: str
) -> None:
    model_id, path, body = APIS[api]
    answers = iter([Reply(401, "unauthorized: token expired")])  # Copilot's plain-text 401
    server.add_route("POST", path, lambda _: next(answers, sse(body)))
    _, message = await run(model_id)
    assert message.stop_reason == "stop", message.error_message
    assert server.counts["copilot.token"] == 2, "the 401 forced a second exchange"
    first, second = model_requests(server, path)
    assert first.headers["authorization"] != second.headers["authorization"]
    stored = CredentialStore().load("github-copilot")
    assert stored is not None
    assert second.headers["authorization"] == f"Bearer {stored.access}"


@pytest.mark.parametrize("api", sorted(APIS))
async def test_a_plans_rate_limit_ends_rate_limit_with_the_vendors_delay(server: OAuthServer, api: str) -> None:
    model_id, path, _ = APIS[api]
    server.add_route("POST", path, lambda _: Reply(429, RATE_LIMITED, {"retry-after": "42"}))
    events, message = await run(model_id, options=StreamOptions(max_retries=0))
    assert validate_events(events) == []
    assert message.stop_reason == "error"
    assert message.error_info is not None
    assert message.error_info.kind == "rate_limit"
    assert message.error_info.retry_after_s == 42
    assert "rate limit" in (message.error_message or "")
    assert_no_token_in(message.error_message or "", server)


#: Copilot's answer to a prompt over the model's limit (as Copilot users report it).
OVERFLOW = {
    "error": {
        "message": "prompt token count of 140365 exceeds the limit of 128000",
        "code": "model_max_prompt_tokens_exceeded",
    }
}


@pytest.mark.parametrize("api", ["openai-completions", "openai-responses"])
@pytest.mark.parametrize("body", [OVERFLOW, {"error": {"message": OVERFLOW["error"]["message"]}}], ids=["code", "text"])
async def test_a_prompt_over_copilots_limit_ends_context_overflow(
    server: OAuthServer, api: str, body: dict[str, dict[str, str]]
) -> None:
    model_id, path, _ = APIS[api]
    server.add_route("POST", path, lambda _: Reply(400, body))
    _, message = await run(model_id)
    assert message.error_info is not None
    assert message.error_info.kind == "context_overflow", message.error_message
    assert "exceeds the limit of 128000" in (message.error_message or "")
