"""Both logins against the loopback server: device codes, polling (pending, slow_down, expired,
denied), abort, the stored credential, and a hostile server that echoes every token."""

from __future__ import annotations

import json
import stat
import sys
import threading

import pytest

from normalize import AbortController
from streamfns.auth import (
    CredentialStore,
    LoginFailed,
    login,
    logout,
    register_oauth_provider,
    status,
)
from streamfns.auth.codex import chatgpt_account_id
from tests.auth.oauth_server import ACCOUNT_ID, EMAIL, LOGIN, FakeTime, Interaction, OAuthServer, Received, Reply


def register(server: OAuthServer, fake: FakeTime) -> None:
    timing = {"sleep": fake.sleep, "clock": fake.monotonic, "now": fake.time}
    register_oauth_provider(server.codex(**timing))
    register_oauth_provider(server.copilot(**timing))


def assert_clean(text: str, server: OAuthServer) -> None:
    secrets = server.secrets()
    assert secrets, "the server issued nothing: the check would be vacuous"
    for secret in secrets:
        assert secret not in text


async def test_codex_login_stores_a_private_credential(
    server: OAuthServer, store: CredentialStore, fake: FakeTime
) -> None:
    register(server, fake)
    server.codex_pending = 2
    shown = Interaction()
    credential = await login("openai-codex", shown, store=store)

    assert shown.codes == [(f"{server.url}/codex/device", "FAKE-CODE", 900.0)]
    assert server.counts["codex.poll"] == 3  # two 403 "pending" answers, then the grant
    assert fake.sleeps == [5.0, 5.0, 5.0]  # the interval OpenAI sends as a string
    assert server.counts["codex.exchange"] == 1
    assert credential.account == EMAIL
    assert credential.data["account_id"] == ACCOUNT_ID
    assert credential.expires == pytest.approx(fake.time() + 3600)
    assert store.load("openai-codex") == credential
    if sys.platform != "win32":
        assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
        assert stat.S_IMODE(store.path.parent.stat().st_mode) == 0o700
    assert sorted(path.name for path in store.path.parent.iterdir()) == ["auth.json", "auth.json.lock"]
    assert_clean(repr(credential), server)


async def test_copilot_login_stores_github_and_copilot_tokens(
    server: OAuthServer, store: CredentialStore, fake: FakeTime
) -> None:
    register(server, fake)
    shown = Interaction()
    credential = await login("github-copilot", shown, store=store)

    assert shown.codes == [(f"{server.url}/login/device", "FAKE-GHCD", 900.0)]
    assert credential.access.startswith("tid=fake-copilot-token-")
    assert credential.refresh.startswith("fake-github-oauth-token-")
    assert credential.account == LOGIN
    assert credential.data["base_url"] == server.url
    # refresh_in (relative) wins over expires_at.
    assert credential.expires == pytest.approx(fake.time() + 1500)
    exchange = next(r for r in server.requests if r.name == "copilot.token")
    assert exchange.headers["authorization"] == f"token {credential.refresh}"
    assert exchange.headers["copilot-integration-id"] == "vscode-chat"
    assert store.load("github-copilot") == credential


async def test_slow_down_raises_the_interval_by_five_seconds(
    server: OAuthServer, store: CredentialStore, fake: FakeTime
) -> None:
    register(server, fake)
    server.github_script = ["authorization_pending", "slow_down", "authorization_pending", "slow_down"]
    shown = Interaction()
    await login("github-copilot", shown, store=store)
    assert fake.sleeps == [5.0, 5.0, 10.0, 10.0, 15.0]
    assert any("more slowly" in message for message in shown.messages)


async def test_slow_down_without_interval_still_adds_five(server: OAuthServer, fake: FakeTime) -> None:
    from streamfns.auth.device import DevicePoll, poll_device

    answers: list[DevicePoll[str]] = [
        DevicePoll(error="slow_down"),
        DevicePoll(error="slow_down"),
        DevicePoll(value="done"),
    ]

    async def poll() -> DevicePoll[str]:
        return answers.pop(0)

    result = await poll_device(
        poll, interval_s=2, expires_in_s=600, login_command="x", sleep=fake.sleep, clock=fake.monotonic
    )
    assert result == "done"
    assert fake.sleeps == [2.0, 7.0, 12.0]


@pytest.mark.parametrize(
    ("step", "says"),
    [
        ("expired_token", "code expired"),
        ("access_denied", "denied"),
        ("incorrect_device_code", "incorrect_device_code"),
    ],
)
async def test_final_poll_errors_fail_and_name_the_command(
    server: OAuthServer, store: CredentialStore, fake: FakeTime, step: str, says: str
) -> None:
    register(server, fake)
    server.github_script = ["authorization_pending", step]
    with pytest.raises(LoginFailed) as caught:
        await login("github-copilot", Interaction(), store=store)
    message = str(caught.value)
    assert says in message
    assert "streamfns login github-copilot" in message
    assert store.load("github-copilot") is None
    assert server.counts["github.poll"] == 2


async def test_deadline_ends_polling(server: OAuthServer, store: CredentialStore, fake: FakeTime) -> None:
    register(server, fake)
    server.github_script = ["authorization_pending"] * 1000
    with pytest.raises(LoginFailed, match=r"code expired.*streamfns login github-copilot"):
        await login("github-copilot", Interaction(), store=store)
    # 900 s of code lifetime at 5 s a poll: never more polls than fit.
    assert server.counts["github.poll"] <= 180
    assert sum(fake.sleeps) == pytest.approx(900)


async def test_codex_deadline_is_fifteen_minutes(server: OAuthServer, store: CredentialStore, fake: FakeTime) -> None:
    register(server, fake)
    server.codex_pending = 10_000
    with pytest.raises(LoginFailed, match=r"code expired.*streamfns login openai-codex"):
        await login("openai-codex", Interaction(), store=store)
    assert sum(fake.sleeps) == pytest.approx(900)


async def test_abort_mid_poll_ends_the_login(server: OAuthServer, store: CredentialStore, fake: FakeTime) -> None:
    register(server, fake)
    server.github_script = ["authorization_pending"] * 10
    controller = AbortController()
    fake.on_sleep = lambda count: controller.abort("user pressed Ctrl-C") if count == 3 else None
    with pytest.raises(LoginFailed, match="aborted: user pressed Ctrl-C"):
        await login("github-copilot", Interaction(controller.signal), store=store)
    assert server.counts["github.poll"] == 2  # the third poll was never sent
    assert store.load("github-copilot") is None


async def test_abort_while_a_request_is_in_flight(server: OAuthServer, store: CredentialStore, fake: FakeTime) -> None:
    register(server, fake)
    controller = AbortController()
    release = threading.Event()

    def stalled(_: Received) -> Reply:
        controller.abort("stop")
        release.wait(5)  # the server hangs; the client must not wait for it
        return Reply(500, {})

    server.add_route("POST", "/api/accounts/deviceauth/usercode", stalled)
    try:
        with pytest.raises(LoginFailed, match="aborted: stop"):
            await login("openai-codex", Interaction(controller.signal), store=store)
    finally:
        release.set()


async def test_already_aborted_signal_sends_nothing(
    server: OAuthServer, store: CredentialStore, fake: FakeTime
) -> None:
    register(server, fake)
    controller = AbortController()
    controller.abort()
    with pytest.raises(LoginFailed, match="aborted"):
        await login("openai-codex", Interaction(controller.signal), store=store)
    assert sum(server.counts.values()) == 0


async def test_unknown_provider_names_the_known_ones(store: CredentialStore) -> None:
    with pytest.raises(LoginFailed, match=r"'nope'.*github-copilot, openai-codex"):
        await login("nope", Interaction(), store=store)


async def test_unusable_store_is_refused_before_the_code_is_shown(
    server: OAuthServer, store: CredentialStore, fake: FakeTime
) -> None:
    from streamfns.auth import StoreError

    register(server, fake)
    store.path.parent.mkdir(parents=True)
    store.path.write_text("{not json")
    store.path.chmod(0o600)
    shown = Interaction()
    with pytest.raises(StoreError):
        await login("openai-codex", shown, store=store)
    assert shown.codes == []
    assert sum(server.counts.values()) == 0


async def test_hostile_server_echoes_never_reach_a_message(store: CredentialStore, fake: FakeTime) -> None:
    with OAuthServer(hostile=True) as server:
        register(server, fake)
        # A good login first, so the server holds tokens to echo.
        codex = await login("openai-codex", Interaction(), store=store)
        copilot = await login("github-copilot", Interaction(), store=store)
        messages: list[str] = []

        server.github_script = ["access_denied"]
        with pytest.raises(LoginFailed) as denied:
            await login("github-copilot", Interaction(), store=store)
        messages.append(str(denied.value))

        server.revoked = True
        from streamfns.auth import LoginExpired, fresh_credential

        for name in ("openai-codex", "github-copilot"):
            with pytest.raises(LoginExpired) as expired:
                await fresh_credential(name, store=store, force=True)
            messages.append(str(expired.value))
            messages.append(repr(expired.value))

        assert server.requests, "the server answered nothing"
        # The echo is there (quoted, redacted): the hostile body did reach the message path.
        assert any("[redacted]" in message for message in messages)
        for message in messages:
            assert len(message) < 1000
            assert_clean(message, server)
        shown = [repr(codex), repr(copilot), repr(status(store=store)), str(status(store=store))]
        for text in shown:
            assert_clean(text, server)


async def test_logout_deletes_and_status_shows_no_token(
    server: OAuthServer, store: CredentialStore, fake: FakeTime
) -> None:
    register(server, fake)
    await login("openai-codex", Interaction(), store=store)
    await login("github-copilot", Interaction(), store=store)
    rows = status(store=store, now=fake.time())
    assert [(row.provider, row.title, row.account, row.expired, row.refreshable) for row in rows] == [
        ("github-copilot", "GitHub Copilot", LOGIN, False, True),
        ("openai-codex", "ChatGPT Plus/Pro (Codex)", EMAIL, False, True),
    ]
    assert_clean(repr(rows), server)
    later = status(store=store, now=fake.time() + 2000)
    assert [row.expired for row in later] == [True, False]
    assert logout("openai-codex", store=store) is True
    assert logout("openai-codex", store=store) is False
    assert [row.provider for row in status(store=store)] == ["github-copilot"]


def test_account_id_is_read_from_a_jwt_only() -> None:
    from tests.auth.oauth_server import fake_jwt

    token = fake_jwt({"https://api.openai.com/auth": {"chatgpt_account_id": "acct-9"}})
    assert chatgpt_account_id("not-a-jwt", token) == "acct-9"
    assert chatgpt_account_id("a.b.c", "x") == ""


@pytest.mark.parametrize(
    "device",
    [
        {"user_code": "\x1b]0;owned\x07", "verification_uri": "https://github.com/login/device"},
        {"user_code": "ABCD-1234", "verification_uri": "javascript:alert(1)"},
        {"user_code": "X" * 500, "verification_uri": "https://github.com/login/device"},
    ],
)
async def test_device_codes_unfit_to_show_are_refused(
    server: OAuthServer, store: CredentialStore, fake: FakeTime, device: dict[str, str]
) -> None:
    register(server, fake)
    answer = {"device_code": "fake-device-code-hostile-1", "interval": 5, "expires_in": 900, **device}
    server.add_route("POST", "/login/device/code", lambda _: Reply(200, answer))
    shown = Interaction()
    with pytest.raises(LoginFailed, match="device code request failed"):
        await login("github-copilot", shown, store=store)
    assert shown.codes == []
    assert server.counts["github.poll"] == 0


def test_vendor_quotes_are_redacted_cut_and_printable() -> None:
    from streamfns.auth.errors import quote_vendor

    known = "fake-known-secret-abcdefgh"
    body = json.dumps({"error": "bad", "access_token": "fake-unknown-token-zzzzzzzz", "note": f"x {known}"})
    quoted = quote_vendor(body + "\x1b[2J" + "y" * 2000, [known])
    assert known not in quoted
    assert "fake-unknown-token-zzzzzzzz" not in quoted
    assert "\x1b" not in quoted
    assert len(quoted) < 320
    assert quote_vendor("refresh_token_invalidated: see https://docs.example/rest", []) == (
        "refresh_token_invalidated: see https://docs.example/rest"
    )
