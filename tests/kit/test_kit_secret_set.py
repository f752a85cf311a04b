"""One fail-closed secret set: every header value the caller or a signer supplied is a secret unless the
header is public, and both the error-message redaction and the cassette recorder guard that set.

Each case sends a gateway credential the way real gateways and proxies take one — under an auth scheme
that is not a plain word (`Api-Key`), as an auth parameter (`Token token=…`), in a header no list
names (`x-gw-pass`, `x-upstream-pwd`, `x-portkey-api-key`, `helicone-auth`, `cf-aig-authorization`), in
the URL's query — to a real loopback server whose 401 body echoes it. The stream's `error_message`
must blank it, the request must be tagged with it for the recorder, and a recording of the exchange
must be refused with nothing written. Values of public headers (`anthropic-version`, …), short values
and dates are not secrets and stay readable. The credentials are synthetic, built at run time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

import httpx
import pytest

from cassettes import SecretFound, use_cassette
from conformance.loopback import LoopbackServer, ReceivedRequest, Scripted
from normalize import AssistantMessage, Context, Model, StreamOptions
from normalize.wire.tags import SECRETS_EXTENSION
from streamfns.kit import ServerSentEvent, Signature, SigningRequest, WireApi, WireRequest
from streamfns.kit.keys import credentials_in, credentials_in_url, redact
from tests.kit._fake import CONTEXT, KEY, WIRE, build_request, model, options

# Every behaviour here holds on each of the kit's transports (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("each_transport")

# Synthetic, assembled at run time: no known key shape, so only the secret set can catch it.
SECRET = "-".join(["synthetic", "gateway", "credential", "0123456789"])


@dataclass(frozen=True, slots=True)
class Sent:
    """Where a case puts the credential: `model.headers`, `options.headers` or the URL's query."""

    model_headers: dict[str, str] = field(default_factory=dict[str, str])
    options_headers: dict[str, str] = field(default_factory=dict[str, str])
    query: str = ""


SPELLINGS: dict[str, Sent] = {
    "authorization: Api-Key": Sent(model_headers={"authorization": f"Api-Key {SECRET}"}),
    "authorization: Token token=": Sent(model_headers={"authorization": f"Token token={SECRET}"}),
    'authorization: Token token="…"': Sent(options_headers={"Authorization": f'Token token="{SECRET}", realm="gw"'}),
    "x-gw-pass": Sent(options_headers={"x-gw-pass": SECRET}),
    "x-upstream-pwd": Sent(options_headers={"X-Upstream-Pwd": SECRET}),
    "x-portkey-api-key": Sent(model_headers={"x-portkey-api-key": SECRET}),
    "helicone-auth": Sent(model_headers={"helicone-auth": f"Bearer {SECRET}"}),
    "cf-aig-authorization": Sent(model_headers={"cf-aig-authorization": f"Bearer {SECRET}"}),
    "query key=": Sent(query=f"key={SECRET}"),
}


def _echo(_request: ReceivedRequest) -> Scripted:
    body = json.dumps({"error": {"type": "bad_key", "message": f"invalid credential {SECRET}"}}).encode()
    return Scripted(status=401, headers=[("content-type", "application/json")], chunks=[(0.0, body)])


def _case(sent: Sent, base_url: str, **extra: object) -> tuple[Model, StreamOptions]:
    """The Echo model and options carrying the credential as `sent` says."""
    wire_model = model(base_url, headers=sent.model_headers or None)
    return wire_model, options(headers=sent.options_headers or None, **extra)


def _wire_for(sent: Sent) -> WireApi[ServerSentEvent]:
    """Echo, with the query appended to its URL when the case sends one (a builder that puts a key
    in the URL, as Gemini's `?key=` does)."""
    if not sent.query:
        return WIRE

    def with_query(wire_model: Model, context: Context, opts: StreamOptions) -> WireRequest:
        built = build_request(wire_model, context, opts)
        return replace(built, url=f"{built.url}?{sent.query}")

    return replace(WIRE, build_request=with_query)


async def _stream(sent: Sent, base_url: str, **extra: object) -> AssistantMessage:
    wire_model, opts = _case(sent, base_url, **extra)
    stream = _wire_for(sent).stream_fn(wire_model, CONTEXT, opts)
    async for _ in stream:
        pass
    return await stream.result()


def _carried(request: ReceivedRequest, sent: Sent) -> bool:
    """True when the server really received the credential where the case put it."""
    headers = {name.lower(): value for name, value in request.headers.items()}
    wanted = {name.lower(): value for name, value in {**sent.model_headers, **sent.options_headers}.items()}
    return all(headers.get(name) == value for name, value in wanted.items()) and sent.query in request.path


# -- (a) the message ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("spelling", SPELLINGS)
async def test_a_credential_in_any_header_spelling_is_redacted_from_the_error_message(spelling: str) -> None:
    sent = SPELLINGS[spelling]
    async with LoopbackServer(_echo) as server:
        message = await _stream(sent, server.base_url)
        assert _carried(server.requests[0], sent), "the credential went out as the case says"
    assert message.stop_reason == "error"
    assert message.error_message == "Echo API error 401 bad_key: invalid credential [redacted]"


async def test_a_header_a_signer_adds_is_a_secret_even_when_the_signer_does_not_list_it() -> None:
    def gateway_signer(_request: SigningRequest) -> Signature:
        return Signature({"x-gw-pass": SECRET})  # no `secrets`: the header alone must be enough

    async with LoopbackServer(_echo) as server:
        signed = replace(WIRE, signer=gateway_signer)
        stream = signed.stream_fn(model(server.base_url), CONTEXT, options())
        async for _ in stream:
            pass
        message = await stream.result()
        assert server.requests[0].headers.get("x-gw-pass") == SECRET
    assert message.error_message == "Echo API error 401 bad_key: invalid credential [redacted]"


# -- (c) what is not a secret stays readable -----------------------------------------------------------------

PUBLIC = {
    "anthropic-version": "2023-06-01",
    "anthropic-beta": "fine-grained-tool-streaming-2025-05-14",
    "user-agent": "synthetic-agent/1.2.3 (test run)",
    "x-stainless-runtime-version": "3.12.4-synthetic",
}
PLAIN = {"x-client-date": "2026-01-01", "x-client-version": "v10.2.3", "x-team": "red"}


async def test_values_of_public_headers_short_values_and_dates_are_not_redacted() -> None:
    said = " ".join([*PUBLIC.values(), *PLAIN.values()])

    def echo_everything(_request: ReceivedRequest) -> Scripted:
        body = json.dumps({"error": {"type": "bad_key", "message": f"sent {said} with {SECRET}"}}).encode()
        return Scripted(status=401, headers=[("content-type", "application/json")], chunks=[(0.0, body)])

    sent = Sent(model_headers=PUBLIC, options_headers={**PLAIN, "x-gw-pass": SECRET})
    async with LoopbackServer(echo_everything) as server:
        message = await _stream(sent, server.base_url)
        assert _carried(server.requests[0], sent)
    assert message.error_message == f"Echo API error 401 bad_key: sent {said} with [redacted]"


def test_the_header_rule_in_one_table() -> None:
    headers = {
        **PUBLIC,
        **PLAIN,
        "accept": "text/event-stream",
        "content-type": "application/json",
        "authorization": f"Api-Key {SECRET}",
        "x-gw-pass": "gw-pass-42x",
        "x-stainless-api-key": "stainless-named-credential",  # a public prefix never covers a credential name
        "x-amz-date": "20260101T000000Z",
        "cookie": "sid=synthetic-session-id; theme=dark",
    }
    assert credentials_in(headers) == [
        f"Api-Key {SECRET}",
        SECRET,
        "gw-pass-42x",
        "stainless-named-credential",
        "sid=synthetic-session-id; theme=dark",
        "synthetic-session-id",
    ]


def test_url_credentials_by_name() -> None:
    url = f"https://user:{SECRET}@gw.example.test/v1/chat?alt=sse&api-version=2024-10-21&code=fn-code-0123456789"
    assert credentials_in_url(url) == [SECRET, "fn-code-0123456789"]
    assert credentials_in_url("https://gw.example.test/v1/chat?prompt_cache_key=session-0123456789") == []


def test_redact_never_blanks_a_public_value_it_was_not_given() -> None:
    text = "anthropic-version 2023-06-01 is not supported"
    assert redact(text, credentials_in({"anthropic-version": "2023-06-01", "x-date": "2023-06-01"})) == text


# -- the tag and (b) the recording -----------------------------------------------------------------------


class _TagSpy(httpx.AsyncBaseTransport):
    """A real transport to the loopback server that keeps the secret tag of each request."""

    def __init__(self) -> None:
        self.real = httpx.AsyncHTTPTransport()
        self.tags: list[object] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.tags.append(request.extensions.get(SECRETS_EXTENSION))
        return await self.real.handle_async_request(request)

    async def aclose(self) -> None:
        await self.real.aclose()


async def test_the_request_is_tagged_with_the_set_the_messages_are_redacted_of() -> None:
    spy = _TagSpy()
    sent = Sent(
        model_headers={"authorization": f"Token token={SECRET}", "anthropic-version": "2023-06-01"},
        options_headers={"x-upstream-pwd": "upstream-pwd-0123456789"},
        query="key=query-key-0123456789",
    )
    async with LoopbackServer(_echo) as server, httpx.AsyncClient(transport=spy) as client:
        await _stream(sent, server.base_url, http_client=client)
    assert spy.tags == [
        (
            KEY,
            f"Token token={SECRET}",
            f"token={SECRET}",
            SECRET,
            "upstream-pwd-0123456789",
            "query-key-0123456789",
        )
    ]


@pytest.mark.parametrize("spelling", SPELLINGS)
async def test_recording_the_echo_of_any_spelling_is_refused_and_nothing_is_written(
    spelling: str, tmp_path: Path
) -> None:
    sent = SPELLINGS[spelling]
    path = tmp_path / "echo.jsonl"
    async with LoopbackServer(_echo) as server:
        with pytest.raises(SecretFound) as caught:
            async with use_cassette(path, mode="once") as http:
                await _stream(sent, server.base_url, http_client=http)
        assert _carried(server.requests[0], sent)
    assert SECRET not in str(caught.value)
    assert not path.exists()
    assert not path.with_name(path.name + ".partial").exists()
