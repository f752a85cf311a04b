"""Provider signers (streamfns.kit.provider_auth) and the kit's login hooks, over real loopback HTTP.

A made-up provider, ``echo-login``, is given a fake login (a signer with ``unauthorized`` and
``login_hint``) on the Echo wire api of ``tests/kit/_fake.py``: a 401 renews it once and retries at
once, a second 401 (or a login that cannot be renewed) ends ``auth`` saying how to log in again; a
signature's ``origin`` moves the attempt to another server, a bad one sends nothing; an explicit
``api_key`` goes past the login; and no token the login made reaches the terminal message.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from conformance.loopback import LoopbackServer, ReceivedRequest, Scripted
from normalize import AssistantMessage, AssistantMessageEvent, ErrorInfo, MessageBuilder, Model, StreamOptions
from streamfns.kit import (
    ServerSentEvent,
    Signature,
    SigningRequest,
    StreamFailure,
    WireApi,
    provider_signer,
    provider_signers,
    register_provider_signer,
)
from tests.kit import _fake
from tests.kit._fake import CONTEXT, HELLO, KEY, WIRE, EchoDecoder, reply

PROVIDER = "echo-login"
FIRST = "echo-login-token-first-0123456789"
SECOND = "echo-login-token-second-9876543210"
HINT = "run `streamfns login echo-login`"


class Login:
    """A fake subscription login: hands out ``tokens`` in turn, one more each time it is renewed."""

    def __init__(self, *tokens: str, renews: bool = True, hint: str | None = HINT, origin: str | None = None) -> None:
        self.tokens = tokens
        self.index = 0
        self.renews = renews
        self.renewals = 0
        self.signed: list[SigningRequest] = []
        self.origin = origin
        if hint is not None:
            self.login_hint = hint
        self.threads: list[threading.Thread] = []

    async def __call__(self, request: SigningRequest) -> Signature:
        self.signed.append(request)
        self.threads.append(threading.current_thread())
        return Signature({"authorization": f"Bearer {self.tokens[self.index]}"}, origin=self.origin)

    async def unauthorized(self, request: SigningRequest) -> bool:
        self.renewals += 1
        if self.renews and self.index + 1 < len(self.tokens):
            self.index += 1
            return True
        return False


@pytest.fixture
def provider() -> Iterator[str]:
    """The test provider's name; whatever a test registers for it is removed afterwards."""
    yield PROVIDER
    register_provider_signer(PROVIDER, None)


def login_model(base_url: str) -> Model:
    return Model(id="echo-1", api="echo", provider=PROVIDER, base_url=base_url)


async def run(
    base_url: str, opts: StreamOptions | None = None, *, wire: WireApi[Any] = WIRE
) -> tuple[list[AssistantMessageEvent], AssistantMessage]:
    stream = wire.stream_fn(login_model(base_url), CONTEXT, opts if opts is not None else StreamOptions())
    events = [event async for event in stream]
    return events, await stream.result()


def unauthorized_reply(request: ReceivedRequest) -> Scripted:
    """A hostile 401: it echoes every credential the request carried, in the body and a header."""
    seen = request.headers.get("authorization", "")
    body = json.dumps({"error": {"type": "bad_key", "message": f"token expired: {seen}", "code": seen}}).encode()
    return Scripted(
        status=401,
        headers=[("content-type", "application/json"), ("x-echo", seen)],
        chunks=[(0.0, body)],
    )


def auth_header(request: ReceivedRequest) -> str:
    return request.headers.get("authorization", "")


def assert_no_token(message: AssistantMessage, *tokens: str) -> None:
    shown = [message.error_message or "", repr(message), json.dumps(message.to_json()), repr(message.error_info)]
    for token in tokens:
        assert all(token not in text for text in shown), f"a token reached the message: {shown}"


async def test_a_401_renews_the_login_once_and_retries_at_once_with_the_new_token(provider: str) -> None:
    login = Login(FIRST, SECOND)
    register_provider_signer(provider, login)

    def responder(request: ReceivedRequest) -> Scripted:
        return unauthorized_reply(request) if FIRST in auth_header(request) else reply(*HELLO)

    async with LoopbackServer(responder) as server:
        # max_retries=0: the renewed attempt is not one of them.
        _, message = await run(server.base_url, StreamOptions(max_retries=0))
        assert message.stop_reason == "stop", message.error_message
        assert message.content[0].text == "Hello"  # type: ignore[union-attr]
        assert [auth_header(request) for request in server.requests] == [f"Bearer {FIRST}", f"Bearer {SECOND}"]
        assert "x-echo-key" not in server.requests[0].headers, "the key rule was skipped"
    assert login.renewals == 1
    assert len(login.signed) == 2, "each attempt is signed afresh"


async def test_a_second_401_ends_auth_with_the_login_hint(provider: str) -> None:
    login = Login(FIRST, SECOND)
    register_provider_signer(provider, login)
    async with LoopbackServer(unauthorized_reply) as server:
        _, message = await run(server.base_url, StreamOptions(max_retries=3))
        assert len(server.requests) == 2, "renewed once per stream, then no more retries"
    assert login.renewals == 1
    assert message.stop_reason == "error"
    assert message.error_info is not None
    assert message.error_info.kind == "auth"
    assert not message.error_info.retryable
    assert message.error_info.status == 401
    assert (message.error_message or "").endswith(f"; log in again: {HINT}")
    assert_no_token(message, FIRST, SECOND)


async def test_a_login_that_cannot_be_renewed_ends_auth_with_the_hint_after_one_request(provider: str) -> None:
    login = Login(FIRST, renews=False)
    register_provider_signer(provider, login)
    async with LoopbackServer(unauthorized_reply) as server:
        _, message = await run(server.base_url)
        assert len(server.requests) == 1
    assert login.renewals == 1
    assert message.error_info is not None
    assert message.error_info.kind == "auth"
    assert (message.error_message or "").endswith(f"; log in again: {HINT}")
    assert_no_token(message, FIRST)


async def test_a_renewal_that_fails_ends_the_stream_with_its_failure(provider: str) -> None:
    class Revoked(Login):
        async def unauthorized(self, request: SigningRequest) -> bool:
            raise StreamFailure.of("auth", f"the login was revoked ({FIRST}): run `streamfns login echo-login`")

    register_provider_signer(provider, Revoked(FIRST))
    async with LoopbackServer(unauthorized_reply) as server:
        _, message = await run(server.base_url)
        assert len(server.requests) == 1
    assert message.error_info is not None
    assert message.error_info.kind == "auth"
    assert "the login was revoked" in (message.error_message or "")
    assert "streamfns login echo-login" in (message.error_message or "")
    assert_no_token(message, FIRST)


async def test_a_renewal_that_raises_unexpectedly_ends_auth_saying_how_to_log_in_again(provider: str) -> None:
    class Broken(Login):
        async def unauthorized(self, request: SigningRequest) -> bool:
            raise RuntimeError(f"the token cache is corrupt near {FIRST}")

    register_provider_signer(provider, Broken(FIRST))
    async with LoopbackServer(unauthorized_reply) as server:
        _, message = await run(server.base_url)
        assert len(server.requests) == 1
    assert message.error_info is not None
    assert message.error_info.kind == "auth"
    assert "cannot renew" in (message.error_message or "")
    assert (message.error_message or "").endswith(f"; log in again: {HINT}")
    assert_no_token(message, FIRST)


class StatusDecoder(EchoDecoder):
    """Echo, plus an error event that carries an HTTP status (a 401 said mid-stream)."""

    def on_event(self, event: ServerSentEvent) -> None:
        data = json.loads(event.data) if event.data.startswith(b"{") else None
        if isinstance(data, dict) and data.get("type") == "unauthorized":  # pyright: ignore[reportUnknownMemberType]
            raise StreamFailure(ErrorInfo.of("auth", status=401), "Echo stream error: unauthorized")
        super().on_event(event)


def status_decoder(builder: MessageBuilder, model: Model) -> StatusDecoder:
    return StatusDecoder(builder, model)


async def test_a_401_after_output_started_is_not_retried(provider: str) -> None:
    login = Login(FIRST, SECOND)
    register_provider_signer(provider, login)
    wire = replace(WIRE, decoder=status_decoder)
    body = [_fake.sse({"type": "text", "text": "Hel"}), _fake.sse({"type": "unauthorized"})]
    async with LoopbackServer(reply(*body)) as server:
        _, message = await run(server.base_url, StreamOptions(max_retries=3), wire=wire)
        assert len(server.requests) == 1
    assert login.renewals == 0, "the login is renewed only before output"
    assert message.stop_reason == "error"
    assert message.content[0].text == "Hel"  # type: ignore[union-attr]
    assert message.error_info is not None
    assert message.error_info.output_started


async def test_the_signature_origin_moves_the_attempt_to_another_server(provider: str) -> None:
    async with LoopbackServer(reply(*HELLO)) as elsewhere, LoopbackServer(reply(*HELLO)) as configured:
        login = Login(FIRST, origin=elsewhere.base_url)
        register_provider_signer(provider, login)
        _, message = await run(configured.base_url)
        assert message.stop_reason == "stop", message.error_message
        assert configured.requests == []
        assert [request.path for request in elsewhere.requests] == ["/v1/echo"], "the path is kept"
        assert login.signed[0].url == f"{configured.base_url}/v1/echo", "the signer sees the URL as built"


@pytest.mark.parametrize(
    "origin",
    [
        "ftp://127.0.0.1:1",
        "http://user:pw@127.0.0.1:1",
        "http://127.0.0.1:1/v2",
        "http://127.0.0.1:1?x=1",
        "http://127.0.0.1:99999",
        "http://attacker.invalid#",
        "",
    ],
)
async def test_a_bad_origin_is_config_and_nothing_is_sent(provider: str, origin: str) -> None:
    register_provider_signer(provider, Login(FIRST, origin=origin))
    async with LoopbackServer(reply(*HELLO)) as server:
        _, message = await run(server.base_url)
        assert server.requests == []
    assert message.error_info is not None
    assert message.error_info.kind == "config", message.error_message
    assert "pw" not in (message.error_message or "")


async def test_an_origin_that_is_not_a_string_is_config(provider: str) -> None:
    class Odd(Login):
        async def __call__(self, request: SigningRequest) -> Signature:
            return Signature({"authorization": "Bearer x"}, origin=42)  # type: ignore[arg-type]

    register_provider_signer(provider, Odd(FIRST))
    async with LoopbackServer(reply(*HELLO)) as server:
        _, message = await run(server.base_url)
        assert server.requests == []
    assert message.error_info is not None
    assert message.error_info.kind == "config"


async def test_an_explicit_api_key_goes_past_the_provider_signer(provider: str) -> None:
    login = Login(FIRST)
    register_provider_signer(provider, login)
    async with LoopbackServer(reply(*HELLO)) as server:
        _, message = await run(server.base_url, StreamOptions(api_key=KEY))
        assert message.stop_reason == "stop", message.error_message
        assert server.requests[0].headers["x-echo-key"] == KEY
        assert "authorization" not in server.requests[0].headers
    assert login.signed == []


async def test_a_provider_signer_that_fails_ends_auth_and_sends_nothing(provider: str) -> None:
    async def no_login(request: SigningRequest) -> Signature:
        raise StreamFailure.of("auth", "not logged in to echo-login: run `streamfns login echo-login`")

    register_provider_signer(provider, no_login)
    async with LoopbackServer(reply(*HELLO)) as server:
        _, message = await run(server.base_url)
        assert server.requests == []
    assert message.error_info is not None
    assert message.error_info.kind == "auth"
    assert "streamfns login echo-login" in (message.error_message or "")


async def test_a_key_rule_401_is_read_as_before_without_a_login(provider: str) -> None:
    # No provider signer: the api's key is sent, and its 401 is the error table's, with no hint.
    async with LoopbackServer(unauthorized_reply) as server:
        _, message = await run(server.base_url, StreamOptions(api_key=KEY))
        assert len(server.requests) == 1
    assert message.error_info is not None
    assert message.error_info.kind == "auth"
    assert "log in again" not in (message.error_message or "")


async def test_a_signer_object_with_an_async_call_runs_on_the_event_loop(provider: str) -> None:
    login = Login(FIRST)
    register_provider_signer(provider, login)
    async with LoopbackServer(reply(*HELLO)) as server:
        _, message = await run(server.base_url)
    assert message.stop_reason == "stop", message.error_message
    assert login.threads == [threading.main_thread()], "not sent to a worker thread"


def make_login(name: str) -> Login:
    """A ``module:attr`` factory, as ``streamfns.auth:signer_for`` is one."""
    return Login(f"{name}-token-from-factory-000")


async def test_a_factory_is_loaded_on_first_use_and_kept(provider: str) -> None:
    register_provider_signer(provider, f"{__name__}:make_login")
    assert provider_signers()[provider] == f"{__name__}:make_login", "not loaded at registration"
    async with LoopbackServer(reply(*HELLO)) as server:
        _, message = await run(server.base_url)
        assert auth_header(server.requests[0]) == f"Bearer {provider}-token-from-factory-000"
    assert message.stop_reason == "stop", message.error_message
    loaded = provider_signer(provider.upper())
    assert isinstance(loaded, Login)
    assert provider_signer(provider) is loaded, "made once, by any case of the name"


async def test_a_factory_that_cannot_be_loaded_is_config_and_sends_nothing(provider: str) -> None:
    register_provider_signer(provider, "tests.kit.no_such_module_here:signer_for")
    async with LoopbackServer(reply(*HELLO)) as server:
        _, message = await run(server.base_url)
        assert server.requests == []
    assert message.error_info is not None
    assert message.error_info.kind == "config"
    assert "echo-login" in (message.error_message or "")


def test_registration_is_checked() -> None:
    with pytest.raises(ValueError, match="module:attr"):
        register_provider_signer(PROVIDER, "no-colon")
    with pytest.raises(TypeError):
        register_provider_signer(PROVIDER, 42)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        register_provider_signer("  ", Login(FIRST))
    assert provider_signer(PROVIDER) is None


def test_the_built_in_logins_are_registered_without_importing_streamfns_auth() -> None:
    code = (
        "import sys, streamfns, streamfns.kit as kit\n"
        "found = kit.provider_signers()\n"
        "assert found['openai-codex'] == 'streamfns.auth:signer_for', found\n"
        "assert found['github-copilot'] == 'streamfns.auth:signer_for', found\n"
        "assert 'streamfns.auth' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_a_signature_shows_its_origin_and_masks_its_secrets() -> None:
    shown = repr(Signature({"authorization": f"Bearer {FIRST}"}, (FIRST,), origin="https://api.example.com"))
    assert FIRST not in shown
    assert "https://api.example.com" in shown
