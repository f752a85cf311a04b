"""Issue 35, item 1: a credential echoed in a vendor's error *type* never reaches the caller.

A vendor's error type or code becomes ``ErrorInfo.code``; a server, a proxy or a gateway that echoes
the request's credentials in that field (Bedrock's ``x-amzn-ErrorType`` header or ``__type`` field,
ConverseStream's ``:exception-type`` or ``:error-code`` header, Anthropic's and Vertex's
``error.type``, Google's ``status`` and ``ErrorInfo`` reason), in an HTTP error or inside a 200
stream, must find it blanked in the code as in the message. Each case plants a distinctive, obviously
fake credential — a Bedrock API key (``AWS_BEARER_TOKEN_BEDROCK``), an ``AWS_SESSION_TOKEN`` under
SigV4, a Google ``ya29.`` token (given, and from a signer), an Anthropic and a Gemini key — runs the
adapter against a real loopback server that echoes it, and greps every output for it in any spelling:
``message.to_json()``, the events, ``error_message``, the ``ErrorInfo`` and its ``repr``, the
message's ``repr``. The code must still say that it was there (``[redacted]``): the channel was used.

Not ``parallel``: these tests open loopback sockets (no timeout decides an outcome).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.loopback import LoopbackServer, Scripted
from normalize import (
    AssistantMessage,
    AssistantMessageEvent,
    AssistantMessageEventStream,
    Model,
    StreamOptions,
    event_to_json,
    validate_events,
)
from normalize.wire import encode_message
from streamfns.anthropic_vertex import WIRE as VERTEX_WIRE
from streamfns.kit import GoogleAuth, redact
from streamfns.kit.aws import clear_aws_sessions
from tests.adapters import ANTHROPIC, ANTHROPIC_VERTEX, BEDROCK, CONTEXT, GOOGLE, AdapterUnderTest
from tests.anthropic_vertex._adc import fresh_adc
from tests.aws_env import isolate_aws

# Obviously fake, assembled at run time (no scanner mistakes them for real ones), each distinctive.
BEDROCK_KEY = "ABSK" + "PLANTEDbedrockApiKey" + "0123456789abcdef"
ACCESS_KEY = "AKIA" + "PLANTED0" * 2
SECRET_KEY = "PLANTEDsecretAccessKey" + "0123456789abcdef"
SESSION_TOKEN = "IQoJ" + "PLANTEDsessionToken" + "0123456789abcdef" * 2
GOOGLE_TOKEN = "ya29." + "PLANTED-google-access-token-" + "0123456789abcdef"
ANTHROPIC_KEY = "sk-ant-" + "PLANTED-anthropic-key-" + "0123456789abcdef"
GEMINI_KEY = "AIza" + "PLANTEDgeminiKey" + "0123456789abcdef"
EVENTSTREAM = "application/vnd.amazon.eventstream"


@pytest.fixture(autouse=True)
def _no_real_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No real AWS or Google configuration reaches a test, and nothing is cached across tests."""
    isolate_aws(monkeypatch, tmp_path, region="eu-west-1")
    for name in ("ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    yield from fresh_adc(monkeypatch, tmp_path)
    clear_aws_sessions()


def assert_nowhere(secret: str, message: AssistantMessage, events: list[AssistantMessageEvent]) -> None:
    """``secret``, in no spelling :func:`redact` knows, in anything the caller can see or log."""
    assert message.stop_reason == "error", message.error_message
    info = message.error_info
    assert info is not None
    outputs = {
        "message.to_json()": json.dumps(message.to_json()),
        "events": json.dumps([event_to_json(event) for event in events]),
        "error_message": message.error_message or "",
        "ErrorInfo": json.dumps(info.to_json()),
        "repr(ErrorInfo)": repr(info),
        "repr(message)": repr(message),
    }
    for where, text in outputs.items():
        assert secret not in text, where
        assert redact(text, [secret]) == text, where  # no other spelling either (escaped, base64, …)
    # The echo went through the code, which says so: the channel under test was used.
    assert info.code is not None
    assert "[redacted]" in info.code


async def run(
    under: AdapterUnderTest,
    plan: Scripted,
    options: StreamOptions,
    *,
    path: str = "",
    stream_fn: Callable[..., Any] | None = None,
) -> tuple[list[AssistantMessageEvent], AssistantMessage]:
    """Run ``under`` (or ``stream_fn``) against a loopback server playing ``plan``, without retries."""
    async with LoopbackServer(plan) as server:
        model: Model = under.model(base_url=server.base_url + path)
        made = (stream_fn or under.adapter.stream_fn)(model, CONTEXT, dataclasses.replace(options, max_retries=0))
        stream = made if isinstance(made, AssistantMessageEventStream) else await made
        events = [event async for event in stream]
        assert validate_events(events) == []  # one terminal, a well-formed grammar
        return events, await stream.result()


# -- Amazon Bedrock: a Bedrock API key, or SigV4 with a session token -----------------------------------


def _json(status: int, body: object, *headers: tuple[str, str]) -> Scripted:
    payload = json.dumps(body).encode()
    return Scripted(status=status, headers=[("content-type", "application/json"), *headers], chunks=[(0.0, payload)])


def _eventstream(*messages: bytes) -> Scripted:
    return Scripted(headers=[("content-type", EVENTSTREAM)], chunks=[(0.0, message) for message in messages])


def _bedrock_channels(secret: str) -> dict[str, Scripted]:
    """Each place a Bedrock error carries its type, echoing ``secret`` there."""
    exception = {":exception-type": secret, ":content-type": "application/json", ":message-type": "exception"}
    error = {":message-type": "error", ":error-code": secret, ":error-message": "the stream failed"}
    return {
        "x-amzn-ErrorType header": _json(
            403, {"message": "denied"}, ("x-amzn-errortype", f"{secret}:http://internal.amazon.com/coral/")
        ),
        "__type field": _json(400, {"__type": f"com.amazon.coral.service#{secret}", "message": "bad request"}),
        ":exception-type header": _eventstream(
            encode_message(exception, json.dumps({"message": "throttled"}).encode())
        ),
        ":error-code header": _eventstream(encode_message(error, b"")),
    }


CHANNELS = list(_bedrock_channels("x"))


@pytest.mark.parametrize("channel", CHANNELS)
async def test_a_bedrock_api_key_echoed_as_the_error_type_is_redacted(
    channel: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", BEDROCK_KEY)
    events, message = await run(BEDROCK, _bedrock_channels(BEDROCK_KEY)[channel], StreamOptions())
    assert_nowhere(BEDROCK_KEY, message, events)


@pytest.mark.parametrize("channel", CHANNELS)
async def test_a_sigv4_session_token_echoed_as_the_error_type_is_redacted(
    channel: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_SESSION_TOKEN", SESSION_TOKEN)
    events, message = await run(BEDROCK, _bedrock_channels(SESSION_TOKEN)[channel], StreamOptions())
    assert_nowhere(SESSION_TOKEN, message, events)
    assert_nowhere(SECRET_KEY, message, events)


# -- Claude on Vertex AI: a ya29. token, given or from a signer ----------------------------------------


def _anthropic_channels(secret: str) -> dict[str, Scripted]:
    """Anthropic's error shape with ``secret`` as ``error.type``: an HTTP error, an ``event: error``."""
    error = {"type": "error", "error": {"type": secret, "message": "Overloaded"}}
    event = f"event: error\ndata: {json.dumps(error)}\n\n".encode()
    return {"HTTP error.type": _json(401, error), "event: error type": Scripted(chunks=[(0.0, event)])}


def _google_status(secret: str) -> dict[str, Scripted]:
    """A ``google.rpc.Status`` with ``secret`` as the status (a proxy's, without the numeric code that
    would otherwise be the code), and as an ``ErrorInfo`` detail's reason."""
    status = {"error": {"message": "Request had invalid credentials.", "status": secret}}
    detail = {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": secret}
    reason = {"error": {"code": 403, "message": "denied", "status": "PERMISSION_DENIED", "details": [detail]}}
    return {"HTTP error.status": _json(401, status), "HTTP ErrorInfo reason": _json(403, reason)}


VERTEX_CHANNELS = [*_anthropic_channels("x"), *_google_status("x")]


def _vertex_plans(secret: str) -> dict[str, Scripted]:
    return {**_anthropic_channels(secret), **_google_status(secret)}


@pytest.mark.parametrize("channel", VERTEX_CHANNELS)
async def test_a_given_google_token_echoed_as_the_error_type_is_redacted(channel: str) -> None:
    plan = _vertex_plans(GOOGLE_TOKEN)[channel]
    events, message = await run(ANTHROPIC_VERTEX, plan, StreamOptions(api_key=GOOGLE_TOKEN), path="/v1")
    assert_nowhere(GOOGLE_TOKEN, message, events)


@pytest.mark.parametrize("channel", VERTEX_CHANNELS)
async def test_a_signed_google_token_echoed_as_the_error_type_is_redacted(channel: str) -> None:
    from google.oauth2.credentials import Credentials

    later = dt.datetime.now(dt.UTC).replace(tzinfo=None) + dt.timedelta(hours=1)
    signer = GoogleAuth(Credentials(token=GOOGLE_TOKEN, expiry=later)).sign
    stream_fn = dataclasses.replace(VERTEX_WIRE, signer=signer).stream_fn
    plan = _vertex_plans(GOOGLE_TOKEN)[channel]
    events, message = await run(ANTHROPIC_VERTEX, plan, StreamOptions(), path="/v1", stream_fn=stream_fn)
    assert_nowhere(GOOGLE_TOKEN, message, events)


# -- Anthropic and Gemini with their own keys -----------------------------------------------------------


@pytest.mark.parametrize("channel", list(_anthropic_channels("x")))
async def test_an_anthropic_key_echoed_as_the_error_type_is_redacted(channel: str) -> None:
    plan = _anthropic_channels(ANTHROPIC_KEY)[channel]
    events, message = await run(ANTHROPIC, plan, StreamOptions(api_key=ANTHROPIC_KEY))
    assert_nowhere(ANTHROPIC_KEY, message, events)


@pytest.mark.parametrize("channel", list(_google_status("x")))
async def test_a_gemini_key_echoed_as_the_error_status_or_reason_is_redacted(channel: str) -> None:
    plan = _google_status(GEMINI_KEY)[channel]
    events, message = await run(GOOGLE, plan, StreamOptions(api_key=GEMINI_KEY), path="/v1beta")
    assert_nowhere(GEMINI_KEY, message, events)


async def test_an_escaped_echo_in_the_code_is_redacted_too() -> None:
    """The code goes through the same redaction as the message: a key URL-escaped in part is caught."""
    escaped = ANTHROPIC_KEY.replace("-", "%2D")
    error = {"type": "error", "error": {"type": escaped, "message": "Overloaded"}}
    events, message = await run(ANTHROPIC, _json(401, error), StreamOptions(api_key=ANTHROPIC_KEY))
    assert_nowhere(ANTHROPIC_KEY, message, events)
