"""``streamfns login``, ``logout`` and ``auth status``: the device-code UI on a terminal, the
credential store they write, the one-line errors and exit statuses, and never a token on screen.

A fake :class:`streamfns.auth.OAuthProvider` (no network) plays the subscription, and the auth tests'
loopback OAuth server (``tests.auth.oauth_server``) plays ChatGPT's and GitHub's for the end-to-end
logins; each test gets a fresh registry (``reset_oauth_providers``) and its own store under ``tmp_path``.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from normalize import AbortSignal
from streamfns import cli
from streamfns.auth import (
    Credential,
    CredentialStore,
    LoginFailed,
    LoginInteraction,
    OAuthProvider,
    ProviderAuth,
    register_oauth_provider,
    reset_oauth_providers,
)
from tests.auth.oauth_server import CODEX_USER_CODE, EMAIL, GITHUB_USER_CODE, LOGIN, FakeTime, OAuthServer

# Obviously fake, and shaped like nothing the secret scan knows, so a leak is found by value.
ACCESS = "FAKE-access-token-0123456789abcdef"
REFRESH = "FAKE-refresh-token-fedcba9876543210"
USER_CODE = "WDJB-MJHT"
PAGE = "https://login.example.test/device"
HOUR = 3600.0


class FakePlan(OAuthProvider):
    """A subscription login that needs no network: ``login`` shows a code, reports progress, then
    returns ``outcome`` (a credential, or raises it), or waits for the signal when ``hang``."""

    def __init__(
        self,
        name: str = "fake-plan",
        *,
        outcome: Credential | Exception | None = None,
        hang: bool = False,
        user_code: str = USER_CODE,
    ) -> None:
        self.name = name
        self.title = "Fake Plan (tests)"
        self.login_command = f"streamfns login {name}"
        self.outcome = outcome
        self.hang = hang
        self.user_code = user_code
        self.seen_signal: AbortSignal | None = None

    def credential(self, *, expires_in: float = HOUR, refresh: str = REFRESH, account: str = "pelican@example.test"):
        return Credential(self.name, ACCESS, refresh, time.time() + expires_in, account, {"account_id": "acct-1"})

    async def login(self, interaction: LoginInteraction) -> Credential:
        self.seen_signal = interaction.signal
        interaction.show_code(PAGE, self.user_code, 900.0)
        interaction.progress("waiting for approval in the browser …")
        if self.hang:
            await asyncio.get_running_loop().create_future()  # until cancelled (Ctrl-C)
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome or self.credential()

    async def refresh(self, credential: Credential) -> Credential:
        raise AssertionError("the CLI never refreshes")

    def to_auth(self, credential: Credential, request_body: bytes) -> ProviderAuth:
        return ProviderAuth({"authorization": f"Bearer {credential.access}"})


@pytest.fixture(autouse=True)
def _fresh_registry(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    # No test may touch the user's real store: the default path points into tmp_path as well.
    monkeypatch.setenv("STREAMFNS_AUTH_FILE", str(tmp_path / "default" / "auth.json"))
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    reset_oauth_providers()
    yield
    reset_oauth_providers()
    monkeypatch.delenv("TZ")
    time.tzset()


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "config" / "auth.json"


def _main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        status = cli.main(list(argv))
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _no_token_in(*texts: str, tokens: tuple[str, ...] = (ACCESS, REFRESH), window: int = 8) -> None:
    """Not a token, nor any ``window`` characters of one (a prefix, a suffix, a middle)."""
    for text in texts:
        for token in tokens:
            for start in range(len(token) - window + 1):
                assert token[start : start + window] not in text, (token[start : start + window], text)


def _no_server_token_in(server: OAuthServer, *texts: str) -> None:
    # The loopback server's fakes are spelled with public words ("fake-copilot-token-3"): a window of
    # 16 characters is longer than any name the output shows ("github-copilot").
    _no_token_in(*texts, tokens=tuple(server.secrets()), window=16)


# -- login ---------------------------------------------------------------------------------------------


def test_login_shows_the_page_and_code_stores_the_credential_and_never_prints_a_token(
    capsys: pytest.CaptureFixture[str], store_path: Path
) -> None:
    plan = FakePlan()
    register_oauth_provider(plan)
    status, out, err = _main(capsys, "login", "fake-plan", "--store", str(store_path))
    assert status == 0, err
    assert f"    {PAGE}\n" in out
    assert f"    {USER_CODE}\n" in out
    assert "The code expires in 15 min; Ctrl-C cancels." in out
    assert "Logged in to Fake Plan (tests) as pelican@example.test." in out
    assert "The token is valid until " in out
    assert "(in 60 min); it renews itself" in out
    assert f"Stored in {store_path}" in out
    # Progress on stderr, not mixed into what the user reads the code from.
    assert "streamfns: waiting for approval in the browser …\n" in err
    assert "waiting for approval" not in out
    _no_token_in(out, err)
    stored = CredentialStore(store_path).load("fake-plan")
    assert stored is not None
    assert (stored.access, stored.refresh) == (ACCESS, REFRESH)
    assert plan.seen_signal is not None
    assert not plan.seen_signal.aborted


def test_login_uses_the_default_store_without_store_option(capsys: pytest.CaptureFixture[str]) -> None:
    register_oauth_provider(FakePlan())
    status, out, _err = _main(capsys, "login", "fake-plan")
    assert status == 0
    default = Path(os.environ["STREAMFNS_AUTH_FILE"])
    assert f"Stored in {default}" in out
    assert CredentialStore(default).load("fake-plan") is not None


def test_an_unknown_login_name_is_a_usage_error_naming_the_close_ones(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = _main(capsys, "login", "github-copilt")
    assert (status, out) == (2, "")
    assert err == "streamfns: error: unknown login 'github-copilt'; did you mean: github-copilot?\n"
    status, _out, err = _main(capsys, "logout", "nope")
    assert status == 2
    assert err == "streamfns: error: unknown login 'nope'; known logins: github-copilot, openai-codex\n"


def test_a_failed_login_is_one_line_exit_1_and_stores_nothing(
    capsys: pytest.CaptureFixture[str], store_path: Path
) -> None:
    denied = LoginFailed("the login was denied: run `streamfns login fake-plan` again to retry\nsecond line")
    register_oauth_provider(FakePlan(outcome=denied))
    status, _out, err = _main(capsys, "login", "fake-plan", "--store", str(store_path))
    assert status == 1
    last = err.splitlines()[-1]
    assert last == (
        "streamfns: error: fake-plan: the login was denied: run `streamfns login fake-plan` again to retry second line"
    )
    assert "Traceback" not in err
    assert not store_path.exists()


def test_ctrl_c_during_login_ends_130_aborts_the_flow_and_stores_nothing(
    capsys: pytest.CaptureFixture[str], store_path: Path
) -> None:
    """A real SIGINT while the flow waits: the event loop cancels it, the interaction's signal aborts,
    and the command ends with status 130 and one line, no traceback."""
    plan = FakePlan(hang=True)
    register_oauth_provider(plan)

    real_progress = cli._TerminalLogin.progress  # pyright: ignore[reportPrivateUsage]

    def progress_then_interrupt(self: cli._TerminalLogin, message: str) -> None:  # pyright: ignore[reportPrivateUsage]
        real_progress(self, message)
        if "waiting for approval" in message:
            signal.raise_signal(signal.SIGINT)  # handled by the running loop: the task is cancelled

    # asyncio.run turns SIGINT into a cancellation only while Python's own handler is installed: had
    # anything before this test left another (SIG_IGN, a handler of its own), the signal would vanish
    # and the fake plan wait forever. Python's handler is put back for the test, and an alarm bounds
    # it: a SIGINT that is not honoured fails the test instead of hanging the suite.
    def too_long(_signum: int, _frame: object) -> None:
        raise TimeoutError("the SIGINT was not honoured within 30 s")

    interrupt = signal.signal(signal.SIGINT, signal.default_int_handler)
    alarm = signal.signal(signal.SIGALRM, too_long)
    signal.alarm(30)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(cli._TerminalLogin, "progress", progress_then_interrupt)  # pyright: ignore[reportPrivateUsage]
            status, out, err = _main(capsys, "login", "fake-plan", "--store", str(store_path))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, alarm)
        signal.signal(signal.SIGINT, interrupt)
    assert status == 130
    assert USER_CODE in out
    assert "streamfns: login cancelled; nothing was stored" in err
    assert "Traceback" not in err
    assert plan.seen_signal is not None
    assert plan.seen_signal.aborted
    assert not store_path.exists()


def test_a_hostile_server_cannot_drive_the_terminal(capsys: pytest.CaptureFixture[str], store_path: Path) -> None:
    register_oauth_provider(FakePlan(user_code="AB\x1b[2J\rCD"))
    status, out, _err = _main(capsys, "login", "fake-plan", "--store", str(store_path))
    assert status == 0
    assert "\x1b" not in out
    assert "\r" not in out
    assert "AB\\x1b[2J CD" in out  # escaped; the carriage return is plain whitespace


def test_a_corrupt_store_is_refused_before_the_code_is_shown(
    capsys: pytest.CaptureFixture[str], store_path: Path
) -> None:
    store_path.parent.mkdir(mode=0o700)
    store_path.write_text("{not json", encoding="utf-8")
    store_path.chmod(0o600)
    register_oauth_provider(FakePlan())
    status, out, err = _main(capsys, "login", "fake-plan", "--store", str(store_path))
    assert status == 1
    assert USER_CODE not in out
    (line,) = [line for line in err.splitlines() if line.startswith("streamfns: error:")]
    assert str(store_path) in line
    assert "Traceback" not in err


# -- login against the loopback OAuth server ---------------------------------------------------------------


def test_login_github_copilot_end_to_end_stores_a_credential_auth_status_shows(
    capsys: pytest.CaptureFixture[str], store_path: Path
) -> None:
    """GitHub's device flow (pending, then slow_down) and the Copilot token exchange, through the CLI."""
    fake = FakeTime()
    with OAuthServer(github_script=("authorization_pending", "slow_down")) as server:
        register_oauth_provider(server.copilot(sleep=fake.sleep, clock=fake.monotonic))
        status, out, err = _main(capsys, "login", "github-copilot", "--store", str(store_path))
        assert status == 0, err
        assert f"    {server.url}/login/device\n" in out
        assert f"    {GITHUB_USER_CODE}\n" in out
        assert f"Logged in to GitHub Copilot as {LOGIN}." in out
        assert "it renews itself while the login lasts" in out
        assert "streamfns: the server asked to poll more slowly: every 10 s" in err
        assert server.counts["copilot.token"] == 1
        stored = CredentialStore(store_path).load("github-copilot")
        assert stored is not None
        assert stored.account == LOGIN
        assert stored.access.startswith("tid=fake-copilot-token-")
        assert stored.data["base_url"] == server.url
        status, shown, _err = _main(capsys, "auth", "status", "--json", "--store", str(store_path))
        assert status == 0
        (copilot,) = [entry for entry in json.loads(shown)["logins"] if entry["provider"] == "github-copilot"]
        assert (copilot["logged_in"], copilot["account"], copilot["expired"]) == (True, LOGIN, False)
        _no_server_token_in(server, out, err, shown)


def test_login_openai_codex_end_to_end_names_the_account(capsys: pytest.CaptureFixture[str], store_path: Path) -> None:
    fake = FakeTime()
    with OAuthServer() as server:
        register_oauth_provider(server.codex(sleep=fake.sleep, clock=fake.monotonic))
        status, out, err = _main(capsys, "login", "openai-codex", "--store", str(store_path))
        assert status == 0, err
        assert f"    {server.url}/codex/device\n" in out
        assert f"    {CODEX_USER_CODE}\n" in out
        assert f"Logged in to ChatGPT Plus/Pro (Codex) as {EMAIL}." in out
        assert "(in 60 min)" in out
        stored = CredentialStore(store_path).load("openai-codex")
        assert stored is not None
        assert stored.refresh
        _no_server_token_in(server, out, err)
        status, out, _err = _main(capsys, "logout", "openai-codex", "--store", str(store_path))
        assert status == 0
        assert "revoked there: in ChatGPT, Settings → Security → Log out of all devices." in out
        assert CredentialStore(store_path).load("openai-codex") is None


def test_an_expired_code_from_a_hostile_server_is_one_line_without_a_token(
    capsys: pytest.CaptureFixture[str], store_path: Path
) -> None:
    """The server's error bodies echo every token and code it issued: the one error line quotes none."""
    fake = FakeTime()
    with OAuthServer(hostile=True, github_script=("authorization_pending", "expired_token")) as server:
        register_oauth_provider(server.copilot(sleep=fake.sleep, clock=fake.monotonic))
        status, out, err = _main(capsys, "login", "github-copilot", "--store", str(store_path))
        assert status == 1
        (line,) = [line for line in err.splitlines() if line.startswith("streamfns: error:")]
        assert line.startswith("streamfns: error: github-copilot: ")
        assert "streamfns login github-copilot" in line
        assert not store_path.exists()
        _no_server_token_in(server, out, err)


# -- logout --------------------------------------------------------------------------------------------


def test_logout_forgets_the_credential_and_says_where_to_revoke(
    capsys: pytest.CaptureFixture[str], store_path: Path
) -> None:
    plan = FakePlan()
    register_oauth_provider(plan)
    other = FakePlan("other-plan")
    register_oauth_provider(other)
    store = CredentialStore(store_path)
    store.save(plan.credential())
    store.save(other.credential())
    status, out, _err = _main(capsys, "logout", "fake-plan", "--store", str(store_path))
    assert status == 0
    assert f"Logged out of Fake Plan (tests): its tokens are deleted from {store_path}." in out
    assert 'revoked there: see "Revoking a login" in docs/subscriptions.md.' in out
    assert store.load("fake-plan") is None
    assert store.load("other-plan") is not None, "only the named login is forgotten"
    status, out, _err = _main(capsys, "logout", "fake-plan", "--store", str(store_path))
    assert status == 0
    assert out == f"Not logged in to Fake Plan (tests) in {store_path}: nothing to forget.\n"


# -- auth status ---------------------------------------------------------------------------------------


def test_auth_status_says_who_until_when_and_whether_it_renews_never_a_token(
    capsys: pytest.CaptureFixture[str], store_path: Path
) -> None:
    plan, stale, dead = FakePlan(), FakePlan("stale-plan"), FakePlan("dead-plan")
    for provider in (plan, stale, dead):
        register_oauth_provider(provider)
    store = CredentialStore(store_path)
    store.save(plan.credential(expires_in=2 * HOUR + 60))
    store.save(stale.credential(expires_in=-3 * HOUR, account=""))
    store.save(dead.credential(expires_in=-30 * 60, refresh=""))
    status, out, err = _main(capsys, "auth", "status", "--store", str(store_path))
    assert (status, err) == (0, "")
    lines = out.splitlines()
    expires = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(store.credentials()["fake-plan"].expires))
    assert lines[lines.index("fake-plan (Fake Plan (tests)): logged in as pelican@example.test") + 1] == (
        f"  token valid until {expires} (in 2 h); renews itself"
    )
    stale_line = lines[lines.index("stale-plan (Fake Plan (tests)): logged in") + 1]
    assert stale_line.startswith("  token expired ")
    assert stale_line.endswith("(3 h ago); renews itself on the next request")
    dead_line = lines[lines.index("dead-plan (Fake Plan (tests)): logged in as pelican@example.test") + 1]
    assert dead_line.endswith("(30 min ago); log in again: streamfns login dead-plan")
    assert "github-copilot (GitHub Copilot): not logged in — streamfns login github-copilot" in lines
    assert "openai-codex (ChatGPT Plus/Pro (Codex)): not logged in — streamfns login openai-codex" in lines
    assert lines[-1] == f"credential store: {store_path}"
    _no_token_in(out)


def test_auth_status_json_is_for_scripts_and_holds_no_token(
    capsys: pytest.CaptureFixture[str], store_path: Path
) -> None:
    plan = FakePlan()
    register_oauth_provider(plan)
    credential = plan.credential()
    CredentialStore(store_path).save(credential)
    status, out, _err = _main(capsys, "auth", "status", "--json", "--store", str(store_path))
    assert status == 0
    shown = json.loads(out)
    assert shown["store"] == str(store_path)
    by_name = {entry["provider"]: entry for entry in shown["logins"]}
    assert set(by_name) == {"fake-plan", "github-copilot", "openai-codex"}
    mine = by_name["fake-plan"]
    assert mine["logged_in"] is True
    assert mine["account"] == "pelican@example.test"
    assert mine["expires"] == pytest.approx(credential.expires)
    assert mine["expires_local"].endswith("+00:00")
    assert 3500 < mine["expires_in_s"] <= HOUR
    assert (mine["expired"], mine["refreshable"]) == (False, True)
    assert mine["login_command"] == "streamfns login fake-plan"
    assert by_name["github-copilot"]["logged_in"] is False
    assert by_name["github-copilot"]["expires"] is None
    _no_token_in(out)


def test_auth_status_with_a_store_others_can_read_is_one_line_naming_the_file(
    capsys: pytest.CaptureFixture[str], store_path: Path
) -> None:
    CredentialStore(store_path).save(FakePlan().credential())
    store_path.chmod(0o644)
    status, out, err = _main(capsys, "auth", "status", "--store", str(store_path))
    assert (status, out) == (1, "")
    assert err.count("\n") == 1
    assert err.startswith("streamfns: error: ")
    assert str(store_path) in err
    _no_token_in(err)


def test_auth_status_of_an_empty_store_lists_every_login_as_not_logged_in(
    capsys: pytest.CaptureFixture[str], store_path: Path
) -> None:
    status, out, _err = _main(capsys, "auth", "status", "--store", str(store_path))
    assert status == 0
    assert out.splitlines() == [
        "github-copilot (GitHub Copilot): not logged in — streamfns login github-copilot",
        "openai-codex (ChatGPT Plus/Pro (Codex)): not logged in — streamfns login openai-codex",
        f"credential store: {store_path}",
    ]
    assert not store_path.exists(), "looking does not create the store"


# -- help ----------------------------------------------------------------------------------------------


def test_the_help_and_the_module_docstring_show_the_login_commands(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("streamfns login NAME", "streamfns logout NAME", "streamfns auth status"):
        assert command in str(cli.__doc__)
    for argv in (["login", "--help"], ["logout", "--help"], ["auth", "status", "--help"]):
        status, out, _err = _main(capsys, *argv)
        assert status == 0
        assert "examples:" in out
        assert "--store PATH" in out
    status, out, _err = _main(capsys, "--help")
    assert "streamfns login github-copilot" in out


def test_the_python_example_of_the_subscriptions_page_logs_in(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, store_path: Path
) -> None:
    """docs/subscriptions.md's custom LoginInteraction, run as printed against a fake plan."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "subscriptions.md").read_text(encoding="utf-8")
    (example,) = re.findall(r"```python\n(.*?)```", page, flags=re.DOTALL)
    monkeypatch.setenv("STREAMFNS_AUTH_FILE", str(store_path))
    register_oauth_provider(FakePlan("github-copilot"))
    exec(compile(example, "docs/subscriptions.md", "exec"), {"__name__": "__main__"})  # our own page, as printed
    out = capsys.readouterr().out
    assert out.splitlines() == [
        f"Open {PAGE} and enter {USER_CODE} (within 15 minutes)",
        "waiting for approval in the browser …",
        "logged in as pelican@example.test",
    ]
    assert CredentialStore(store_path).load("github-copilot") is not None
