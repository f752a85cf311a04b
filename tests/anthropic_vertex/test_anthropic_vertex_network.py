"""Claude on Vertex AI over real loopback HTTP: the request on the wire, an explicit token, and credentials
from google-auth (real ``google.oauth2.credentials.Credentials`` whose refresh handler is the test's):
refreshed when expired, one refresh for concurrent calls, and a refresh that fails sends nothing."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance import LoopbackServer
from conformance.loopback import ReceivedRequest, Scripted
from normalize import AbortController, AssistantMessage, StreamOptions, validate_events
from streamfns.anthropic_vertex import WIRE
from streamfns.kit import GoogleAuth
from tests.adapters import ANTHROPIC_VERTEX, CONTEXT
from tests.anthropic_vertex._adc import (
    TokenEndpoint,
    assert_cloud_platform_grant,
    fresh_adc,
    make_key,
    write_service_account,
)

NAME = "fantasy__simple_streaming_claude-3-7-sonnet-20250219"
PLAN = ANTHROPIC_VERTEX.scripted(NAME)
PATH = (
    "/v1/projects/test-project/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929"
    ":streamRawPredict"
)

# Every behaviour here holds on each of the kit's transports (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("each_transport")


@pytest.fixture
def clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    yield from fresh_adc(monkeypatch, tmp_path)


def model_at(server: LoopbackServer) -> Any:
    return ANTHROPIC_VERTEX.model(base_url=f"{server.base_url}/v1")


async def run(stream_fn: Any, server: LoopbackServer, options: StreamOptions | None = None) -> AssistantMessage:
    stream = stream_fn(model_at(server), CONTEXT, options or StreamOptions())
    events = [event async for event in stream]
    assert validate_events(events) == []
    return await stream.result()


class Handler:
    """A refresh handler for ``google.oauth2.credentials.Credentials``: issues ``tokens`` in turn (each
    valid for ``lifetime``), or raises google-auth's ``RefreshError`` when ``fail``; counts its calls."""

    def __init__(self, tokens: list[str], *, lifetime: dt.timedelta = dt.timedelta(hours=1), fail: bool = False):
        self.tokens, self.lifetime, self.fail = tokens, lifetime, fail
        self.calls = 0
        self.lock = threading.Lock()

    def __call__(self, request: object, scopes: object) -> tuple[str, dt.datetime]:
        from google.auth.exceptions import RefreshError

        with self.lock:
            self.calls += 1
            if self.fail:
                raise RefreshError("the refresh token was revoked")
            token = self.tokens[min(self.calls, len(self.tokens)) - 1]
        return token, dt.datetime.now(dt.UTC).replace(tzinfo=None) + self.lifetime


def signer_with(handler: Handler, *, token: str | None = None, expiry: dt.datetime | None = None) -> Any:
    from google.oauth2.credentials import Credentials

    credentials = Credentials(token=token, expiry=expiry, refresh_handler=handler)
    return dataclasses.replace(WIRE, signer=GoogleAuth(credentials).sign).stream_fn


async def test_an_explicit_token_goes_on_the_wire_with_the_vertex_body(clean: None) -> None:
    async with LoopbackServer(PLAN) as server:
        result = await run(WIRE.stream_fn, server, StreamOptions(api_key="ya29.explicit-token-value"))
        assert result.stop_reason == "stop"
        request = server.requests[0]
        assert (request.method, request.path) == ("POST", PATH)
        assert request.headers["authorization"] == "Bearer ya29.explicit-token-value"
        body = json.loads(request.body)
        assert body["anthropic_version"] == "vertex-2023-10-16"
        assert "model" not in body
        assert body["stream"] is True
        assert "anthropic-version" not in request.headers


async def test_an_expired_token_is_refreshed_before_sending(clean: None) -> None:
    handler = Handler(["ya29.refreshed-token-0001"])
    stale = dt.datetime.now(dt.UTC).replace(tzinfo=None) - dt.timedelta(minutes=5)
    stream_fn = signer_with(handler, token="ya29.expired-token-0000", expiry=stale)
    async with LoopbackServer(PLAN) as server:
        first = await run(stream_fn, server)
        second = await run(stream_fn, server)
        assert (first.stop_reason, second.stop_reason) == ("stop", "stop")
        assert handler.calls == 1
        sent = [request.headers["authorization"] for request in server.requests]
        assert sent == ["Bearer ya29.refreshed-token-0001"] * 2


async def test_a_valid_token_is_used_without_a_refresh(clean: None) -> None:
    handler = Handler(["ya29.never-issued-00000"])
    later = dt.datetime.now(dt.UTC).replace(tzinfo=None) + dt.timedelta(hours=1)
    stream_fn = signer_with(handler, token="ya29.still-valid-token-1", expiry=later)
    async with LoopbackServer(PLAN) as server:
        assert (await run(stream_fn, server)).stop_reason == "stop"
        assert handler.calls == 0
        assert server.requests[0].headers["authorization"] == "Bearer ya29.still-valid-token-1"


async def test_concurrent_calls_share_one_refresh(clean: None) -> None:
    handler = Handler(["ya29.shared-token-000001", "ya29.second-token-00002"])
    stream_fn = signer_with(handler)
    async with LoopbackServer(PLAN) as server:
        results = await asyncio.gather(*(run(stream_fn, server) for _ in range(6)))
        assert [result.stop_reason for result in results] == ["stop"] * 6
        assert handler.calls == 1
        assert {request.headers["authorization"] for request in server.requests} == {"Bearer ya29.shared-token-000001"}


async def test_an_expired_token_that_cannot_refresh_is_one_auth_error_and_nothing_is_sent(clean: None) -> None:
    stale = dt.datetime.now(dt.UTC).replace(tzinfo=None) - dt.timedelta(minutes=5)
    stream_fn = signer_with(Handler([], fail=True), token="ya29.expired-token-0000", expiry=stale)
    async with LoopbackServer(PLAN) as server:
        result = await run(stream_fn, server)
        assert result.stop_reason == "error"
        assert result.error_info is not None
        assert (result.error_info.kind, result.error_info.retryable) == ("auth", False)
        assert result.error_message == ("cannot refresh the Google Cloud access token: the refresh token was revoked")
        assert server.requests == []


async def test_the_process_adc_serves_claude_too(clean: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    key = make_key()
    endpoint = TokenEndpoint(key, PLAN)
    async with LoopbackServer(endpoint) as server:
        path = write_service_account(tmp_path, f"{server.base_url}/token", key)
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))
        result = await run(WIRE.stream_fn, server)
        assert result.stop_reason == "stop"
        assert len(endpoint.grants) == 1
        assert_cloud_platform_grant(endpoint.grants[0])
        call = next(request for request in server.requests if request.path == PATH)
        assert call.headers["authorization"] == "Bearer ya29.adc-token-first-0001"


async def test_a_vertex_error_body_is_typed_by_its_status(clean: None) -> None:
    body = {
        "error": {
            "code": 429,
            "message": "Quota exceeded for aiplatform.googleapis.com",
            "status": "RESOURCE_EXHAUSTED",
        }
    }
    plan = dataclasses.replace(
        PLAN, status=429, headers=[("content-type", "application/json")], chunks=[(0.0, json.dumps(body).encode())]
    )
    async with LoopbackServer(plan) as server:
        result = await run(WIRE.stream_fn, server, StreamOptions(api_key="ya29.explicit-token-value", max_retries=0))
        assert result.error_info is not None
        assert (result.error_info.kind, result.error_info.status) == ("rate_limit", 429)
        assert "RESOURCE_EXHAUSTED" in (result.error_message or "")
        assert "Quota exceeded" in (result.error_message or "")


async def test_an_error_body_echoing_the_token_is_redacted(clean: None) -> None:
    handler = Handler(["ya29.token-the-server-echoes"])
    echo = {
        "error": {"code": 401, "message": "Bad token Bearer ya29.token-the-server-echoes", "status": "UNAUTHENTICATED"}
    }
    plan = dataclasses.replace(
        PLAN, status=401, headers=[("content-type", "application/json")], chunks=[(0.0, json.dumps(echo).encode())]
    )
    async with LoopbackServer(plan) as server:
        result = await run(signer_with(handler), server, StreamOptions(max_retries=0))
        assert result.error_info is not None
        assert result.error_info.kind == "auth"
        assert "ya29.token-the-server-echoes" not in (result.error_message or "")
        assert result.error_message == "Anthropic on Vertex AI API error 401 UNAUTHENTICATED: Bad token [redacted]"


async def test_an_abort_while_the_token_endpoint_is_silent_ends_aborted_and_sends_nothing(
    clean: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    key = make_key()
    silent = TokenEndpoint(key, PLAN)
    asked = asyncio.Event()

    def responder(request: ReceivedRequest) -> Scripted:
        if request.path.startswith("/token"):
            asked.set()
            # Never answers within the test: the server's close at the end ends the refresh thread.
            return dataclasses.replace(PLAN, head_delay_s=60.0)
        return silent(request)

    async with LoopbackServer(responder) as server:
        monkeypatch.setenv(
            "GOOGLE_APPLICATION_CREDENTIALS", str(write_service_account(tmp_path, f"{server.base_url}/token", key))
        )
        own = dataclasses.replace(WIRE, signer=GoogleAuth().sign).stream_fn  # not the process's: its lock stays free
        controller = AbortController()
        stream = own(model_at(server), CONTEXT, StreamOptions(signal=controller.signal))
        events: list[Any] = []

        async def consume() -> None:
            events.extend([event async for event in stream])

        task = asyncio.create_task(consume())
        await asyncio.wait_for(asked.wait(), timeout=60)  # a generous bound: only a hang fails it
        controller.abort()
        await asyncio.wait_for(task, timeout=60)
        result = await stream.result()
        assert validate_events(events) == []
        assert result.stop_reason == "aborted"
        assert [request.path for request in server.requests] == ["/token"]
