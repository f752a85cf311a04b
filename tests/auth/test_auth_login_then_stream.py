"""Issue 37's "done when", end to end on loopback: ``streamfns login NAME`` (the command itself, in
this process; it runs its own event loop, so the tests are plain functions) plays the vendor's
device-code flow against ``tests/auth/oauth_server.py`` and stores a credential; a stream on a catalog
model of that provider, with no key anywhere, is then signed from the store by the kit's built-in
provider signer and replays a recorded body to ``done``:

- ``openai-codex``: the Codex text body (``streamfns/openai_codex/codex_text_SYNTHETIC.jsonl``), sent
  with the login's access token and ChatGPT account id;
- ``github-copilot``: the recorded Copilot Responses body (``vercel__github_copilot_SANITIZED``), sent
  to the account's api origin from the token exchange with the Copilot token.

Nothing any server issued appears in what the command printed or in the final message.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from cassettes import library, load
from normalize import AssistantMessage, Context, StreamOptions, UserMessage, validate_events
from streamfns import cli, stream
from streamfns.auth import CredentialStore, register_oauth_provider, reset_oauth_providers
from streamfns.catalog import get_model
from streamfns.kit.provider_auth import register_provider_signer
from tests.auth.oauth_server import ACCOUNT_ID, FakeTime, OAuthServer, Reply

pytestmark = pytest.mark.usefixtures("each_transport")

CONTEXT = Context(messages=[UserMessage(content="Hello")])
CODEX_BODY = load(Path(__file__).resolve().parents[2] / "streamfns/openai_codex/codex_text_SYNTHETIC.jsonl")
COPILOT_BODY = library.load("vercel__github_copilot_SANITIZED")


@pytest.fixture
def store_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The store every step uses (``STREAMFNS_AUTH_FILE``), and the built-in provider signers."""
    path = tmp_path / "config" / "auth.json"
    monkeypatch.setenv("STREAMFNS_AUTH_FILE", str(path))
    for name in ("openai-codex", "github-copilot"):
        register_provider_signer(name, "streamfns.auth:signer_for")
    try:
        yield path
    finally:
        reset_oauth_providers()


def login(capsys: pytest.CaptureFixture[str], name: str) -> str:
    """``streamfns login NAME`` as a user runs it; returns what it printed (stdout and stderr)."""
    try:
        status = cli.main(["login", name])
    except SystemExit as exc:
        status = exc.code
    out, err = capsys.readouterr()
    assert status == 0, err
    return out + err


def sse(body: bytes) -> Reply:
    return Reply(200, body, {"content-type": "text/event-stream"})


async def run(provider: str, model_id: str, base_url: str | None = None) -> AssistantMessage:
    model = get_model(provider, model_id)
    if base_url is not None:
        model.base_url = base_url  # a fresh object of our own (get_model's promise)
    made = stream(model, CONTEXT, StreamOptions(max_retries=0))
    events = [event async for event in made]
    assert validate_events(events) == []
    return await made.result()


def assert_no_token_in(server: OAuthServer, *texts: str) -> None:
    secrets = server.secrets()
    assert secrets, "the server issued tokens: the check examined something"
    for text in texts:
        for secret in secrets:
            assert secret not in text


def test_codex_login_then_a_stream_replays_to_done(capsys: pytest.CaptureFixture[str], store_path: Path) -> None:
    fake = FakeTime()
    with OAuthServer() as server:
        register_oauth_provider(server.codex(sleep=fake.sleep, clock=fake.monotonic))
        printed = login(capsys, "openai-codex")
        stored = CredentialStore(store_path).load("openai-codex")
        assert stored is not None, "the login stored a credential"
        assert store_path.stat().st_mode & 0o777 == 0o600

        server.add_route("POST", "/responses", lambda _: sse(CODEX_BODY.interactions[0].response.body))
        message = asyncio.run(run("openai-codex", "gpt-5.2", base_url=server.url))

        assert message.stop_reason == "stop", message.error_message
        assert (message.provider, message.api) == ("openai-codex", "openai-codex-responses")
        assert message.usage.cost.basis == "subscription"
        assert any(block.type == "text" and block.text for block in message.content), message.content
        (sent,) = [request for request in server.requests if request.path == "/responses"]
        assert sent.headers["authorization"] == f"Bearer {stored.access}"
        assert sent.headers["chatgpt-account-id"] == ACCOUNT_ID
        assert json.loads(sent.body)["store"] is False
        assert_no_token_in(server, printed, json.dumps(message.to_json()), repr(message))


def test_copilot_login_then_a_stream_replays_the_recorded_body_to_done(
    capsys: pytest.CaptureFixture[str], store_path: Path
) -> None:
    fake = FakeTime()
    with OAuthServer(github_script=("authorization_pending",)) as server:
        register_oauth_provider(server.copilot(sleep=fake.sleep, clock=fake.monotonic))
        printed = login(capsys, "github-copilot")
        stored = CredentialStore(store_path).load("github-copilot")
        assert stored is not None, "the login stored a credential"

        # No base_url of ours: the request goes to the account's api origin the exchange named.
        server.add_route("POST", "/responses", lambda _: sse(COPILOT_BODY.interactions[0].response.body))
        message = asyncio.run(run("github-copilot", "gpt-5.3-codex"))

        assert message.stop_reason == "stop", message.error_message
        assert (message.provider, message.api) == ("github-copilot", "openai-responses")
        assert message.usage.cost.basis == "subscription"
        assert any(block.type == "text" and block.text for block in message.content), message.content
        current = CredentialStore(store_path).load("github-copilot")
        assert current is not None
        (sent,) = [request for request in server.requests if request.path == "/responses"]
        assert sent.headers["authorization"] == f"Bearer {current.access}"
        assert sent.headers["copilot-integration-id"] == "vscode-chat"
        assert_no_token_in(server, printed, json.dumps(message.to_json()), repr(message))
