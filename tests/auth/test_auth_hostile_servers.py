"""What a review of the logins found, pinned: an OAuth server that echoes a token in UTF-16, one that
drips its answer for ever, a stream aborted while a rotating refresh is in flight, a store file with an
impossible expiry, a directory or lock file others could write, and an api origin the kit would refuse.
Each of these failed on the code before the fix."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from cassettes import CassetteWriter, RecordingTransport, SecretFound, load
from normalize import AbortController, AssistantMessage, Context, StreamOptions, UserMessage
from streamfns import cli, stream
from streamfns.auth import (
    CopilotOAuth,
    Credential,
    CredentialStore,
    StoreError,
    register_oauth_provider,
    reset_oauth_providers,
)
from streamfns.auth import _http as auth_http
from streamfns.auth.errors import quote_vendor
from streamfns.catalog import get_model
from streamfns.kit.provider_auth import register_provider_signer
from tests.auth.oauth_server import ACCOUNT_ID, OAuthServer, Received, Reply
from tests.telemetry._otel import recorded

CONTEXT = Context(messages=[UserMessage(content="hi")])
CODEX_BODY = (
    load(Path(__file__).resolve().parents[2] / "streamfns/openai_codex/codex_text_SYNTHETIC.jsonl")
    .interactions[0]
    .response.body
)
#: Shaped like a GitHub user token (obviously fake).
GITHUB_TOKEN = "ghu_FAKEfake0123456789FAKEfake0123456789"


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[CredentialStore]:
    path = tmp_path / "config" / "auth.json"
    monkeypatch.setenv("STREAMFNS_AUTH_FILE", str(path))
    for name in ("openai-codex", "github-copilot"):
        register_provider_signer(name, "streamfns.auth:signer_for")
    try:
        yield CredentialStore(path)
    finally:
        reset_oauth_providers()


async def run(provider: str, model_id: str, options: StreamOptions, base_url: str | None = None) -> AssistantMessage:
    model = get_model(provider, model_id)
    if base_url is not None:
        model.base_url = base_url
    made = stream(model, CONTEXT, options)
    _ = [event async for event in made]
    return await made.result()


def test_a_token_echoed_in_utf16_is_blanked(store: CredentialStore) -> None:
    with OAuthServer() as server:
        register_oauth_provider(server.copilot())
        store.save(Credential("github-copilot", "tid=stale-copilot-token-0000", GITHUB_TOKEN, time.time() - 10))
        body = f"token exchange failed for {GITHUB_TOKEN}".encode("utf-16-le")
        server.add_route(
            "GET",
            "/copilot_internal/v2/token",
            lambda _: Reply(500, body, {"content-type": "text/plain; charset=utf-16le"}),
        )
        message = asyncio.run(run("github-copilot", "gpt-4.1", StreamOptions(max_retries=0)))
    assert message.stop_reason == "error"
    assert message.error_info is not None
    assert message.error_info.kind == "server"
    shown = (message.error_message or "").replace("\ufffd", "").replace("\x00", "")
    assert "token exchange failed" in shown, "the server's words are quoted, decoded in its charset"
    assert GITHUB_TOKEN not in shown


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_quote_vendor_never_spells_a_token_through_nuls(encoding: str) -> None:
    as_utf8 = f"bad token {GITHUB_TOKEN}".encode(encoding).decode("utf-8", "replace")
    quoted = quote_vendor(as_utf8, [GITHUB_TOKEN])
    assert GITHUB_TOKEN not in quoted.replace("\ufffd", "")


def test_a_binary_body_is_not_quoted() -> None:
    assert quote_vendor(bytes(range(256)).decode("latin-1") * 4, []) == "(a body that is not text)"


async def _drip(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.readuntil(b"\r\n\r\n")
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000000\r\n\r\n")
    try:
        while True:  # one byte at a time, for ever: each read comes well within any read timeout
            writer.write(b" ")
            await writer.drain()
            await asyncio.sleep(0.05)
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


@pytest.fixture
async def dripping() -> AsyncIterator[str]:
    server = await asyncio.start_server(_drip, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()


async def test_a_token_server_that_drips_its_answer_ends_timeout(
    store: CredentialStore, dripping: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No stream timeout is set; only the renewal's own bound ends it (set short here: 30 s in use)."""
    monkeypatch.setattr(auth_http, "REQUEST_TOTAL_S", 0.3)
    register_oauth_provider(CopilotOAuth(github_url=dripping, api_url=dripping))
    store.save(Credential("github-copilot", "tid=stale-copilot-token-0000", GITHUB_TOKEN, time.time() - 10))
    message = await asyncio.wait_for(run("github-copilot", "gpt-4.1", StreamOptions(max_retries=0)), 60)
    assert message.stop_reason == "error"
    assert message.error_info is not None
    assert message.error_info.kind == "timeout"
    assert "did not answer within" in (message.error_message or "")


def test_a_refresh_token_rotated_while_the_stream_aborted_is_still_saved(store: CredentialStore) -> None:
    """The server rotates the refresh token (the old one is then refused), and answers only after the
    stream was aborted: the new tokens are saved all the same, and the next stream uses them."""
    answer = threading.Event()
    with OAuthServer() as server:
        register_oauth_provider(server.codex())
        seed = server.codex_seed()
        stale = Credential(
            "openai-codex", seed["access"], seed["refresh"], time.time() - 5, data={"account_id": ACCOUNT_ID}
        )
        store.save(stale)

        def held_refresh(request: Received) -> Reply:
            reply = server._oauth_token(request)  # pyright: ignore[reportPrivateUsage] - the real refresh, held
            answer.wait(30)
            return reply

        server.add_route("POST", "/oauth/token", held_refresh)
        server.add_route("POST", "/responses", lambda _: Reply(200, CODEX_BODY, {"content-type": "text/event-stream"}))

        async def scenario() -> tuple[AssistantMessage, AssistantMessage]:
            controller = AbortController()
            first = asyncio.ensure_future(
                run("openai-codex", "gpt-5.2", StreamOptions(max_retries=0, signal=controller.signal), server.url)
            )
            while server.counts.get("route POST /oauth/token", 0) == 0:  # noqa: ASYNC110 - another thread's count
                await asyncio.sleep(0.01)  # until the refresh reached the server
            controller.abort("stopped by the user")
            aborted = await first
            answer.set()
            for _ in range(3000):  # the renewal goes on without the stream; bounded, not timed
                current = store.load("openai-codex")
                if current is not None and current.access != stale.access:
                    break
                await asyncio.sleep(0.01)
            return aborted, await run("openai-codex", "gpt-5.2", StreamOptions(max_retries=0), server.url)

        aborted, after = asyncio.run(scenario())
    assert aborted.stop_reason == "aborted"
    assert after.stop_reason == "stop", after.error_message
    saved = store.load("openai-codex")
    assert saved is not None
    assert saved.refresh != stale.refresh, "the rotated refresh token was saved"


@pytest.mark.parametrize("expires", ["NaN", "Infinity", "-Infinity", "1e300"])
def test_an_impossible_expiry_reads_as_expired_and_auth_status_shows_it(
    store: CredentialStore, expires: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store.save(Credential("openai-codex", "FAKE-access-token-0123456789", "FAKE-refresh-token-012345", 1.0))
    text = store.path.read_text().replace('"expires": 1.0', f'"expires": {expires}')
    assert expires in text
    store.path.write_text(text)
    loaded = store.load("openai-codex")
    assert loaded is not None
    assert loaded.expires == 0.0
    assert cli.main(["auth", "status"]) == 0
    shown = capsys.readouterr().out
    assert "openai-codex" in shown
    assert "expired" in shown
    assert "FAKE-access" not in shown
    assert cli.main(["auth", "status", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert "FAKE-access" not in json.dumps(document)
    assert "openai-codex" in json.dumps(document)
    assert '"expired": true' in json.dumps(document)


@pytest.mark.skipif(os.name == "nt", reason="POSIX modes")
def test_a_store_directory_others_can_write_is_refused(store: CredentialStore) -> None:
    store.save(Credential("openai-codex", "FAKE-access-token-0123456789", "", time.time() + 3600))
    store.path.parent.chmod(0o777)
    try:
        with pytest.raises(StoreError, match="chmod 700"):
            store.save(Credential("openai-codex", "FAKE-access-token-9876543210", "", time.time() + 3600))
    finally:
        store.path.parent.chmod(0o700)


@pytest.mark.skipif(os.name == "nt", reason="POSIX modes")
def test_a_lock_file_others_can_write_is_refused(store: CredentialStore) -> None:
    store.save(Credential("openai-codex", "FAKE-access-token-0123456789", "", time.time() + 3600))
    store.lock_path.chmod(0o666)
    with pytest.raises(StoreError, match="lock file"):
        store.save(Credential("openai-codex", "FAKE-access-token-9876543210", "", time.time() + 3600))


@pytest.mark.parametrize(
    "api", ["https://ev il.githubcopilot.com", "https://a\u200b.githubcopilot.com", "https://api.githubcopilot.com:0"]
)
def test_an_origin_the_kit_would_refuse_is_not_kept(store: CredentialStore, api: str) -> None:
    with OAuthServer() as server:
        provider = server.copilot()
        credential = Credential("github-copilot", "tid=x", GITHUB_TOKEN, 0.0)
        server.add_route(
            "GET",
            "/copilot_internal/v2/token",
            lambda _: Reply(200, {"token": "tid=fresh-copilot-token", "refresh_in": 1500, "endpoints": {"api": api}}),
        )
        renewed = asyncio.run(provider.refresh(credential))
    assert "base_url" not in renewed.data


def test_the_span_names_the_accounts_api_host_not_the_catalogs(store: CredentialStore) -> None:
    """A Copilot account's api origin (from the token exchange) is where the request goes, and what the
    GenAI span's ``server.address`` says."""
    body = load(
        Path(__file__).resolve().parents[2] / "streamfns/openai_completions/copilot__text_gpt41_SYNTHETIC.jsonl"
    )
    with OAuthServer() as server:
        register_oauth_provider(server.copilot())
        store.save(Credential("github-copilot", "tid=stale-copilot-token-0000", server.github_seed(), 0.0))
        chunks = body.interactions[0].response.body
        server.add_route(
            "POST", "/chat/completions", lambda _: Reply(200, chunks, {"content-type": "text/event-stream"})
        )
        with recorded() as otel:
            message = asyncio.run(run("github-copilot", "gpt-4.1", StreamOptions(max_retries=0)))
        attributes = dict(otel.span().attributes or {})
    assert message.stop_reason == "stop", message.error_message
    assert attributes["server.address"] == "127.0.0.1", "the exchange's origin, not api.individual.githubcopilot.com"


@pytest.mark.parametrize("echo", [False, True])
def test_a_recording_of_a_logged_in_stream_never_holds_a_token(
    store: CredentialStore, tmp_path: Path, echo: bool
) -> None:
    """Recorded through the cassette recorder as a user would (``http_client`` a recording client): the
    login's tokens are in the call's secret set, so a server that echoes the Copilot token makes the
    recorder refuse the file, and a clean recording holds no token the login used."""
    root = Path(__file__).resolve().parents[2]
    chunks = (
        load(root / "streamfns/openai_completions/copilot__text_gpt41_SYNTHETIC.jsonl").interactions[0].response.body
    )
    path = tmp_path / "copilot.jsonl"
    with OAuthServer() as server:
        register_oauth_provider(server.copilot())
        store.save(Credential("github-copilot", "tid=stale-copilot-token-0000", server.github_seed(), 0.0))

        def answer(request: Received) -> Reply:
            token = request.headers.get("authorization", "").removeprefix("Bearer ")
            body = chunks.replace(b"\n\n", f"\n\n: seen {token}\n\n".encode(), 1) if echo else chunks
            return Reply(200, body, {"content-type": "text/event-stream"})

        server.add_route("POST", "/chat/completions", answer)

        async def record() -> AssistantMessage:
            writer = CassetteWriter(path, env={})
            async with httpx.AsyncClient(transport=RecordingTransport(httpx.AsyncHTTPTransport(), writer)) as client:
                message = await run("github-copilot", "gpt-4.1", StreamOptions(max_retries=0, http_client=client))
            if echo:
                assert isinstance(writer.failure, SecretFound)
            else:
                writer.close()
            return message

        asyncio.run(record())
        secrets = server.secrets()
    assert secrets
    if echo:
        assert not path.exists(), "a recording that echoes the token is refused, not written"
        return
    written = path.read_text()
    assert '"content-type"' in written
    for secret in secrets:
        assert secret not in written
