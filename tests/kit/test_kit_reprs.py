"""Issue 35, item 3: an object that holds a credential shows it masked in its ``repr`` (and ``str``).

People log these objects. Each one — ``StreamOptions``, ``Model``, ``Signature``, ``SigningRequest``,
``WireRequest``, ``HttpRequest``, ``StreamCall`` — is built with distinctive, obviously fake
credentials (a key, header values, the URL's user info and ``?key=``, a signer's secrets), and its
``repr`` and ``str`` are grepped for each of them in any spelling; the credential shows as
``'**********'``, as pydantic's ``SecretStr`` shows one, public values stay readable, and the data
itself is untouched (the fields, ``to_json``).
"""

from __future__ import annotations

import datetime as dt
import json

import pytest

from normalize import Model, StreamOptions
from normalize.wire import SSE
from normalize.wire.tags import API_EXTENSION, SECRETS_EXTENSION
from streamfns.kit import HttpRequest, Signature, SigningRequest, WireRequest, redact
from streamfns.kit.aws import aws_signer
from streamfns.kit.http import StreamCall
from tests.kit._fake import WIRE

pytestmark = pytest.mark.parallel  # clock-blind: no socket, sleep or timeout

# Obviously fake, assembled at run time, each distinctive.
KEY = "sk-" + "PLANTED-api-key-" + "0123456789abcdef"
BEARER = "PLANTED-bearer-token-" + "0123456789abcdef"
GATEWAY = "PLANTED-gateway-pass-" + "0123456789abcdef"
SHORT = "pl4nt"  # a credential header too short to redact from text is still masked in a repr
QUERY_KEY = "AIza" + "PLANTED-query-key-" + "0123456789"
PASSWORD = "PLANTED-url-password-" + "0123456789"
SIGNING_SECRET = "PLANTED-signing-secret-" + "0123456789abcdef"
ALL = (KEY, BEARER, GATEWAY, QUERY_KEY, PASSWORD, SIGNING_SECRET)

HEADERS = {
    "Authorization": f"Bearer {BEARER}",
    "x-gw-pass": GATEWAY,
    "x-tiny-token": SHORT,
    "content-type": "application/json",
    "anthropic-version": "2023-06-01",
}
URL = f"https://user:{PASSWORD}@gateway.example/v1/chat?key={QUERY_KEY}&alt=sse"


def assert_masked(shown: object) -> None:
    """Neither ``repr`` nor ``str`` of ``shown`` holds a planted credential, in any spelling."""
    for text in (repr(shown), str(shown)):
        for secret in ALL:
            assert secret not in text
            assert redact(text, [secret]) == text  # no escaped or encoded spelling either
        assert f"'{SHORT}'" not in text


def model() -> Model:
    return Model(id="m-1", api="echo", provider="echo", base_url=URL, headers=dict(HEADERS))


def options() -> StreamOptions:
    return StreamOptions(api_key=KEY, headers={**HEADERS, "x-removed": None}, session_id="session-visible")


def test_stream_options_show_the_key_and_credential_headers_masked() -> None:
    shown = options()
    assert_masked(shown)
    text = repr(shown)
    assert "api_key='**********'" in text
    assert "'Authorization': '**********'" in text
    assert "'x-tiny-token': '**********'" in text
    # Public headers, a removal marker and everything else stay readable.
    assert "'content-type': 'application/json'" in text
    assert "'anthropic-version': '2023-06-01'" in text
    assert "'x-removed': None" in text
    assert "session_id='session-visible'" in text
    # The data is untouched.
    assert shown.api_key == KEY
    assert shown.headers is not None
    assert shown.headers["Authorization"] == f"Bearer {BEARER}"
    assert "api_key=None" in repr(StreamOptions())


def test_a_model_shows_its_credential_headers_and_url_credentials_masked() -> None:
    shown = model()
    assert_masked(shown)
    text = repr(shown)
    assert "base_url='https://**********@gateway.example/v1/chat?key=**********&alt=sse'" in text
    assert "'x-gw-pass': '**********'" in text
    assert "id='m-1'" in text
    # The data, and its JSON form, are untouched.
    assert shown.base_url == URL
    assert json.dumps(shown.to_json()).count(GATEWAY) == 1


def test_a_signature_shows_its_secrets_and_headers_masked() -> None:
    shown = Signature({"authorization": f"Bearer {BEARER}", "x-amz-date": "20260101T000000Z"}, (SIGNING_SECRET, KEY))
    assert_masked(shown)
    text = repr(shown)
    assert "secrets=('**********', '**********')" in text  # how many there are stays visible
    assert "'x-amz-date': '20260101T000000Z'" in text
    assert shown.secrets == (SIGNING_SECRET, KEY)


async def test_a_real_sigv4_signature_shows_nothing_of_its_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """The signer's own output: the secret key, the session token, the signature."""
    pytest.importorskip("botocore")
    from botocore.session import Session  # pyright: ignore[reportMissingTypeStubs]

    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)
    session = Session()
    session.set_credentials("AKIA" + "PLANTED0" * 2, SIGNING_SECRET, BEARER)  # pyright: ignore[reportUnknownMemberType]
    when = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    sign = aws_signer("bedrock", session=session, clock=lambda: when)
    request = SigningRequest(
        method="POST",
        url="https://bedrock-runtime.eu-west-1.amazonaws.com/model/m/converse-stream",
        headers={"content-type": "application/json"},
        body=b"{}",
        model=model(),
        options=StreamOptions(),
    )
    made = sign(request)
    signature = made if isinstance(made, Signature) else await made
    assert BEARER in signature.secrets  # the session token is one of them
    signed = signature.headers["authorization"].rpartition("Signature=")[2]
    for text in (repr(signature), str(signature)):
        for secret in (SIGNING_SECRET, BEARER, signed):
            assert redact(text, [secret]) == text


def test_a_signing_request_shows_its_headers_url_model_and_options_masked() -> None:
    shown = SigningRequest(
        method="POST", url=URL, headers=dict(HEADERS), body=b'{"model": "m-1"}', model=model(), options=options()
    )
    assert_masked(shown)
    assert 'body=b\'{"model": "m-1"}\'' in repr(shown)


def test_a_wire_request_shows_its_headers_and_url_masked() -> None:
    shown = WireRequest(url=URL, payload={"prompt": "hello"}, headers=dict(HEADERS))
    assert_masked(shown)
    assert "payload={'prompt': 'hello'}" in repr(shown)


def test_an_http_request_shows_its_headers_url_and_secret_tags_masked() -> None:
    shown = HttpRequest(
        url=URL,
        headers={k.lower(): v for k, v in HEADERS.items()},
        body=b"{}",
        connect_timeout=1.0,
        idle_timeout=2.0,
        extensions={API_EXTENSION: "echo", SECRETS_EXTENSION: (KEY, BEARER, GATEWAY)},
    )
    assert_masked(shown)
    text = repr(shown)
    assert f"'{SECRETS_EXTENSION}': ('**********', '**********', '**********')" in text
    assert f"'{API_EXTENSION}': 'echo'" in text
    assert shown.extensions[SECRETS_EXTENSION] == (KEY, BEARER, GATEWAY)


def test_a_stream_call_shows_its_headers_url_and_secrets_masked() -> None:
    shown = StreamCall(
        api="echo",
        url=URL,
        headers={k.lower(): v for k, v in HEADERS.items()},
        body=b"{}",
        framing=SSE,
        decoder=WIRE.decoder,
        errors=WIRE.errors,
        end_marker="[END]",
        vendor="Echo",
        secrets=[KEY, BEARER, GATEWAY],
    )
    assert_masked(shown)
    assert "secrets=['**********', '**********', '**********']" in repr(shown)
    assert shown.secrets == [KEY, BEARER, GATEWAY]
