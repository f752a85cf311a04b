"""The one secret set covers what the caller handed over from the start: a message written before the
request exists (a request builder, a key rule or an ``on_payload`` hook that failed quoting a header
value) is redacted of it, and so are the default headers of the caller's own HTTP client, which never
pass through the kit's header merge."""

from __future__ import annotations

import json
from dataclasses import replace

import httpx
import pytest

from conformance.loopback import LoopbackServer, ReceivedRequest, Scripted
from normalize import Context, Model, StreamOptions
from streamfns.kit import WireRequest
from tests.kit._fake import CONTEXT, WIRE, model, options

# Every behaviour here holds on each of the kit's transports (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("each_transport")

#: Built at run time: a gateway password of no known key shape.
SECRET = "gw-" + "p4ss" * 6


def _quoting_builder(the_model: Model, context: Context, opts: StreamOptions) -> WireRequest:
    raise ValueError(f"cannot route with gateway header {the_model.headers!r}")


def _quoting_key_rule(the_model: Model) -> object:
    raise RuntimeError(f"no key for {dict(the_model.headers or {})}")


async def test_a_builder_failure_that_quotes_a_header_value_is_redacted() -> None:
    wire = replace(WIRE, build_request=_quoting_builder)
    result = await wire.stream_fn(model(headers={"x-gw-pass": SECRET}), CONTEXT, options()).result()
    assert result.error_info is not None
    assert result.error_info.kind == "invalid_request"
    assert SECRET not in (result.error_message or "")
    assert "[redacted]" in (result.error_message or "")


async def test_a_key_rule_failure_that_quotes_a_header_value_is_redacted() -> None:
    wire = replace(WIRE, key=_quoting_key_rule)  # pyright: ignore[reportArgumentType]
    result = await wire.stream_fn(model(headers={"x-upstream-pwd": SECRET}), CONTEXT, options()).result()
    assert result.error_info is not None
    assert result.error_info.kind == "config"
    assert SECRET not in (result.error_message or "")


async def test_an_on_payload_failure_that_quotes_an_option_header_is_redacted() -> None:
    def hook(payload: object, the_model: Model) -> object:
        raise RuntimeError(f"refusing to send with {SECRET}")

    opts = options(headers={"x-gw-pass": SECRET}, on_payload=hook)
    result = await WIRE.stream_fn(model(), CONTEXT, opts).result()
    assert result.error_info is not None
    assert result.error_info.kind == "config"
    assert result.error_message == "on_payload raised RuntimeError: refusing to send with [redacted]"


async def test_a_default_header_of_the_callers_client_is_redacted_when_echoed() -> None:
    def echo(_request: ReceivedRequest) -> Scripted:
        body = json.dumps({"error": {"type": "bad_key", "message": f"invalid credential {SECRET}"}}).encode()
        return Scripted(status=401, headers=[("content-type", "application/json")], chunks=[(0.0, body)])

    async with LoopbackServer(echo) as server, httpx.AsyncClient(headers={"x-gw-pass": SECRET}) as client:
        result = await WIRE.stream_fn(model(server.base_url), CONTEXT, options(http_client=client)).result()
        assert server.requests[0].headers["x-gw-pass"] == SECRET, "the client's header went out"
    assert result.error_message == "Echo API error 401 bad_key: invalid credential [redacted]"
