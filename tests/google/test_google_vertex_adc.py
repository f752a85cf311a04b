"""Gemini on Vertex AI with Application Default Credentials, through the real google-auth library.

The credentials are a service-account key made for the test (a throwaway RSA key) whose token endpoint
is a loopback server checking the signed grant; the Vertex endpoint is the same server replaying a real
Gemini body. An explicit token still wins; no credentials, a grant the endpoint refuses, a token that
cannot be sent or a missing ``google-auth`` each end the stream once, before Vertex is called.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance import LoopbackServer
from normalize import AssistantMessage, StreamOptions, validate_events
from streamfns.google import stream_google
from tests.adapters import CONTEXT, GOOGLE, first_text
from tests.anthropic_vertex._adc import (
    TokenEndpoint,
    assert_cloud_platform_grant,
    fresh_adc,
    make_key,
    write_service_account,
)

TEXT = GOOGLE.scripted("pai__text_gemini20flashexp")
VERTEX_PATH = (
    "/v1/projects/my-project/locations/us-central1/publishers/google/models/gemini-2.5-pro"
    ":streamGenerateContent?alt=sse"
)


async def run(server: LoopbackServer, options: StreamOptions | None = None) -> AssistantMessage:
    model = GOOGLE.model(id="gemini-2.5-pro", provider="google-vertex", base_url=f"{server.base_url}/v1")
    stream = stream_google(model, CONTEXT, options)
    events = [event async for event in stream]
    assert validate_events(events) == []  # one start, one terminal
    return await stream.result()


def vertex_calls(server: LoopbackServer) -> list[str]:
    return [request.path for request in server.requests if not request.path.startswith("/token")]


@pytest.fixture
def clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    yield from fresh_adc(monkeypatch, tmp_path)


@pytest.fixture
def placed(clean: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "my-project")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-central1")


async def test_without_a_token_adc_signs_with_a_refreshed_token(
    placed: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    key = make_key()
    endpoint = TokenEndpoint(key, TEXT)
    async with LoopbackServer(endpoint) as server:
        token_uri = f"{server.base_url}/token"
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(write_service_account(tmp_path, token_uri, key)))
        first = await run(server)
        second = await run(server)
        assert (first.stop_reason, first_text(first)) == ("stop", "The capital of France is Paris.\n")
        assert second.stop_reason == "stop"
        assert len(endpoint.grants) == 1  # the token in hand is reused while it is valid
        assert_cloud_platform_grant(endpoint.grants[0])
        calls = [request for request in server.requests if not request.path.startswith("/token")]
        assert [request.path for request in calls] == [VERTEX_PATH, VERTEX_PATH]
        assert {request.headers["authorization"] for request in calls} == {"Bearer ya29.adc-token-first-0001"}
        assert all("x-goog-api-key" not in request.headers for request in calls)


async def test_an_expired_token_is_refreshed_before_the_next_call(
    placed: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    key = make_key()
    # Tokens that live 60 s are inside google-auth's refresh margin: each call finds its token expired.
    endpoint = TokenEndpoint(key, TEXT, expires_in=60)
    async with LoopbackServer(endpoint) as server:
        monkeypatch.setenv(
            "GOOGLE_APPLICATION_CREDENTIALS", str(write_service_account(tmp_path, f"{server.base_url}/token", key))
        )
        assert (await run(server)).stop_reason == "stop"
        assert (await run(server)).stop_reason == "stop"
        assert len(endpoint.grants) == 2
        sent = [
            request.headers["authorization"] for request in server.requests if not request.path.startswith("/token")
        ]
        assert sent == ["Bearer ya29.adc-token-first-0001", "Bearer ya29.adc-token-second-002"]


async def test_concurrent_calls_share_one_refresh(
    placed: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    key = make_key()
    endpoint = TokenEndpoint(key, TEXT)
    async with LoopbackServer(endpoint) as server:
        monkeypatch.setenv(
            "GOOGLE_APPLICATION_CREDENTIALS", str(write_service_account(tmp_path, f"{server.base_url}/token", key))
        )
        results = await asyncio.gather(*(run(server) for _ in range(5)))
        assert [result.stop_reason for result in results] == ["stop"] * 5
        assert len(endpoint.grants) == 1
        assert len(vertex_calls(server)) == 5


async def test_an_explicit_token_wins_and_adc_is_never_asked(
    placed: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    key = make_key()
    endpoint = TokenEndpoint(key, TEXT)
    async with LoopbackServer(endpoint) as server:
        monkeypatch.setenv(
            "GOOGLE_APPLICATION_CREDENTIALS", str(write_service_account(tmp_path, f"{server.base_url}/token", key))
        )
        explicit = await run(server, StreamOptions(api_key="ya29.explicit-token-value"))
        monkeypatch.setenv("GOOGLE_CLOUD_ACCESS_TOKEN", "ya29.token-from-environment")
        from_env = await run(server)
        assert (explicit.stop_reason, from_env.stop_reason) == ("stop", "stop")
        assert endpoint.grants == []
        assert [request.headers["authorization"] for request in server.requests] == [
            "Bearer ya29.explicit-token-value",
            "Bearer ya29.token-from-environment",
        ]


async def test_a_refused_grant_is_one_auth_error_and_vertex_is_never_called(
    placed: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    key = make_key()
    endpoint = TokenEndpoint(key, TEXT, fail=True)
    async with LoopbackServer(endpoint) as server:
        monkeypatch.setenv(
            "GOOGLE_APPLICATION_CREDENTIALS", str(write_service_account(tmp_path, f"{server.base_url}/token", key))
        )
        result = await run(server)
        assert result.stop_reason == "error"
        assert result.error_info is not None
        assert (result.error_info.kind, result.error_info.retryable) == ("auth", False)
        assert "cannot refresh the Google Cloud access token" in (result.error_message or "")
        assert "invalid_grant" in (result.error_message or "")
        assert [request.path for request in server.requests] == ["/token"]


async def test_a_key_the_endpoint_does_not_know_cannot_refresh(
    placed: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The file's key is not the one the endpoint trusts: the grant's signature fails to verify.
    endpoint = TokenEndpoint(make_key(), TEXT)
    async with LoopbackServer(endpoint) as server:
        path = write_service_account(tmp_path, f"{server.base_url}/token", make_key())
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))
        result = await run(server)
        assert result.error_info is not None
        assert result.error_info.kind == "auth"
        assert vertex_calls(server) == []
        assert endpoint.grants == []


async def test_a_token_with_a_line_break_is_refused_unquoted(
    placed: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    key = make_key()
    endpoint = TokenEndpoint(key, TEXT, tokens=["ya29.injected\r\nx-evil: 1"])
    async with LoopbackServer(endpoint) as server:
        monkeypatch.setenv(
            "GOOGLE_APPLICATION_CREDENTIALS", str(write_service_account(tmp_path, f"{server.base_url}/token", key))
        )
        result = await run(server)
        assert result.error_info is not None
        assert result.error_info.kind == "auth"
        assert "cannot be sent" in (result.error_message or "")
        assert "ya29.injected" not in (result.error_message or "")
        assert vertex_calls(server) == []


async def test_no_credentials_anywhere_is_one_auth_error_before_sending(
    placed: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import google.auth.compute_engine._metadata as metadata  # google-auth's own GCE probe

    monkeypatch.setattr(metadata, "_NO_GCE_CHECK", True)  # not on a Google Cloud machine: no probe
    async with LoopbackServer(TEXT) as server:
        result = await run(server)
        assert result.stop_reason == "error"
        assert result.error_info is not None
        assert result.error_info.kind == "auth"
        message = result.error_message or ""
        assert "no Google Cloud credentials for Vertex AI" in message
        assert "gcloud auth application-default login" in message
        assert "GOOGLE_CLOUD_ACCESS_TOKEN" in message
        assert server.requests == []


async def test_without_google_auth_the_error_says_how_to_install_it(
    placed: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    for module in ("google.auth", "google.auth.exceptions", "google.auth.transport.requests"):
        monkeypatch.setitem(sys.modules, module, None)  # an import of it now fails, as when not installed
    async with LoopbackServer(TEXT) as server:
        result = await run(server)
        assert result.error_info is not None
        assert result.error_info.kind == "config"
        assert "pip install 'streamfns[vertex]'" in (result.error_message or "")
        assert server.requests == []


async def test_the_gemini_api_and_express_mode_never_ask_adc(clean: None) -> None:
    async with LoopbackServer(TEXT) as server:
        gemini = GOOGLE.model(base_url=f"{server.base_url}/v1beta")
        express = GOOGLE.model(provider="google-vertex", base_url=f"{server.base_url}/v1", compat={"express": True})
        for model in (gemini, express):
            result = await stream_google(model, CONTEXT, StreamOptions(api_key="AIza-test-key-value")).result()
            assert result.stop_reason == "stop"
        assert [request.headers.get("authorization") for request in server.requests] == [None, None]
        assert [request.headers["x-goog-api-key"] for request in server.requests] == ["AIza-test-key-value"] * 2


def test_importing_streamfns_does_not_import_google_auth() -> None:
    script = textwrap.dedent(
        """
        import sys
        import streamfns, streamfns.kit, streamfns.google, streamfns.anthropic_vertex, streamfns.catalog
        streamfns.catalog.list_models("google-vertex")
        assert "google.auth" not in sys.modules, sorted(m for m in sys.modules if m.startswith("google"))
        print("clean")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, "clean"), done.stderr


def test_a_vertex_stream_with_a_token_never_imports_google_auth_and_one_without_does() -> None:
    script = textwrap.dedent(
        """
        import asyncio, sys
        import httpx
        from normalize import Context, StreamOptions, UserMessage
        from streamfns.anthropic_vertex import stream_anthropic_vertex
        from streamfns.catalog import get_model

        body = (
            b'event: message_start\\ndata: {"type":"message_start","message":{"id":"m"}}\\n\\n'
            b'event: message_delta\\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"}}\\n\\n'
            b'event: message_stop\\ndata: {"type":"message_stop"}\\n\\n'
        )

        async def run(api_key):
            transport = httpx.MockTransport(
                lambda request: httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)
            )
            async with httpx.AsyncClient(transport=transport) as client:
                model = get_model("google-vertex", "claude-haiku-4-5@20251001")
                model.compat = {**(model.compat or {}), "project": "p-1", "location": "global"}
                options = StreamOptions(api_key=api_key, http_client=client, max_retries=0)
                context = Context(messages=[UserMessage(content="hi")])
                return await stream_anthropic_vertex(model, context, options).result()

        done = asyncio.run(run("ya29.explicit-token-value"))
        assert done.stop_reason == "stop", done.error_message
        assert "google.auth" not in sys.modules
        failed = asyncio.run(run(None))  # no token: ADC is asked (and finds nothing here)
        assert failed.error_info.kind == "auth", failed.error_message
        assert "google.auth" in sys.modules
        print("lazy")
        """
    )
    env = {**os.environ, "NO_GCE_CHECK": "true", "CLOUDSDK_CONFIG": "/nonexistent-gcloud-config"}
    for name in ("GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_ACCESS_TOKEN"):
        env.pop(name, None)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False, env=env
    )
    assert (done.returncode, done.stdout.strip()) == (0, "lazy"), done.stderr
