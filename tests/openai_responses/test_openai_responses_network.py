"""The Responses adapter over a real loopback socket: what is OpenAI's (and Azure's) own on the wire.

The kit's behaviours (timeouts, abort, closing) are tested once in ``tests/kit`` and checked per
adapter by the conformance harness; here: headers and keys, the URL, retries decided by vendor
error events, and the messages a user reads.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import streamfns
from conformance.loopback import LoopbackServer, Scripted
from normalize import StreamOptions, validate_events
from streamfns.catalog import get_model
from streamfns.openai_responses import stream_openai_responses
from tests.adapters import CONTEXT
from tests.adapters import OPENAI_RESPONSES as RESPONSES
from tests.openai_responses._responses import sse

# Every behaviour here holds on each of the kit's transports (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("each_transport")

TEXT = "pai__text_gpt4o"


def options(**kwargs: Any) -> StreamOptions:
    return StreamOptions(api_key="test-key", **kwargs)


async def test_the_request_on_the_wire() -> None:
    async with LoopbackServer(RESPONSES.scripted(TEXT)) as server:
        stream = stream_openai_responses(RESPONSES.model(base_url=f"{server.base_url}/v1"), CONTEXT, options())
        events = [event async for event in stream]
        assert validate_events(events) == []
        assert (await stream.result()).stop_reason == "stop"
        request = server.requests[0]
        assert request.path == "/v1/responses"
        assert request.headers["authorization"] == "Bearer test-key"
        assert "api-key" not in request.headers
        assert request.headers["accept"] == "text/event-stream"
        body = json.loads(request.body)
        assert (body["stream"], body["store"], body["model"]) == (True, False, "gpt-5")


async def test_azure_sends_its_key_in_api_key_from_its_own_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-test-key")
    monkeypatch.setenv("OPENAI_API_KEY", "openai-test-key")
    async with LoopbackServer(RESPONSES.scripted(TEXT)) as server:
        azure = get_model("azure-openai-responses", "gpt-5.4")
        azure.base_url = f"{server.base_url}/openai/v1"
        result = await stream_openai_responses(azure, CONTEXT, StreamOptions()).result()
        assert result.stop_reason == "stop"
        request = server.requests[0]
        assert request.path == "/openai/v1/responses"
        assert request.headers["api-key"] == "azure-test-key"
        assert "authorization" not in request.headers


async def test_openai_reads_its_key_from_openai_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "openai-test-key")
    async with LoopbackServer(RESPONSES.scripted(TEXT)) as server:
        await stream_openai_responses(RESPONSES.model(base_url=server.base_url), CONTEXT, StreamOptions()).result()
        assert server.requests[0].headers["authorization"] == "Bearer openai-test-key"


async def test_a_missing_key_is_an_auth_error_that_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZURE_OPENAI_API_KEY", raising=False)
    azure = get_model("azure-openai-responses", "gpt-5")
    azure.base_url = "http://127.0.0.1:9/openai/v1"
    result = await stream_openai_responses(azure, CONTEXT, StreamOptions()).result()
    assert result.error_info is not None
    assert result.error_info.kind == "auth"
    assert "AZURE_OPENAI_API_KEY" in (result.error_message or "")


async def test_the_registry_sends_responses_models_here() -> None:
    async with LoopbackServer(RESPONSES.scripted(TEXT)) as server:
        catalog_model = get_model("openai", "gpt-5")
        catalog_model.base_url = server.base_url
        result = await streamfns.stream(catalog_model, CONTEXT, options()).result()
        assert result.api == "openai-responses"
        assert server.requests[0].path == "/responses"


async def test_eof_before_the_terminal_event_says_so() -> None:
    async with LoopbackServer(RESPONSES.scripted(TEXT, keep=-1)) as server:  # all but the last chunk
        result = await stream_openai_responses(
            RESPONSES.model(base_url=server.base_url), CONTEXT, options(max_retries=0)
        ).result()
        assert result.error_info is not None
        assert result.error_info.kind == "truncated"
        assert result.error_message == "OpenAI Responses stream ended before a terminal response event"


CREATED = sse("response.created", {"response": {"id": "resp_failed", "status": "in_progress"}})
RATE_LIMITED = sse("error", {"code": "rate_limit_exceeded", "message": "Rate limit reached. Try again in 20ms."})
FAILED = sse(
    "response.failed",
    {"response": {"id": "resp_failed", "status": "failed", "error": {"code": "server_error", "message": "Oops"}}},
)


@pytest.mark.parametrize("failure", [RATE_LIMITED, FAILED], ids=["error-event", "response-failed"])
async def test_a_retryable_failure_before_any_output_is_retried(failure: bytes) -> None:
    plans = [Scripted(chunks=[(0.0, CREATED), (0.0, failure)]), RESPONSES.scripted(TEXT)]
    async with LoopbackServer(lambda request: plans.pop(0)) as server:
        result = await stream_openai_responses(RESPONSES.model(base_url=server.base_url), CONTEXT, options()).result()
        assert result.stop_reason == "stop", result.error_message
        assert len(server.requests) == 2
        assert result.response_id != "resp_failed"


async def test_a_failure_after_output_is_not_retried_and_keeps_the_partial_text() -> None:
    head = RESPONSES.recorded_chunks(TEXT)[:7]
    async with LoopbackServer(Scripted(chunks=[*((0.0, c) for c in head), (0.0, RATE_LIMITED)])) as server:
        result = await stream_openai_responses(RESPONSES.model(base_url=server.base_url), CONTEXT, options()).result()
        assert len(server.requests) == 1
        assert result.error_info is not None
        assert (result.error_info.kind, result.error_info.retryable) == ("rate_limit", True)
        assert result.error_info.output_started
        assert result.error_info.retry_after_s == pytest.approx(0.02)
        assert result.content
        assert result.error_message == (
            "OpenAI stream error (rate_limit_exceeded): Rate limit reached. Try again in 20ms."
        )


async def test_an_http_error_body_keeps_the_vendors_code_and_message() -> None:
    body = json.dumps(
        {
            "error": {
                "message": "This model's maximum context length is 400000 tokens.",
                "type": "invalid_request_error",
                "param": "input",
                "code": "context_length_exceeded",
            }
        }
    ).encode()
    plan = Scripted(status=400, headers=[("content-type", "application/json")], chunks=[(0.0, body)])
    async with LoopbackServer(plan) as server:
        result = await stream_openai_responses(RESPONSES.model(base_url=server.base_url), CONTEXT, options()).result()
        assert result.error_info is not None
        assert (result.error_info.kind, result.error_info.code, result.error_info.status) == (
            "context_overflow",
            "context_length_exceeded",
            400,
        )
        assert len(server.requests) == 1


@pytest.mark.parametrize("code", ["insufficient_quota", "billing_hard_limit_reached"])
async def test_a_429_for_an_exhausted_quota_is_not_retried(code: str) -> None:
    body = json.dumps({"error": {"message": "You exceeded your current quota.", "type": code, "code": code}})
    plan = Scripted(
        status=429,
        headers=[("content-type", "application/json"), ("retry-after", "0")],
        chunks=[(0.0, body.encode())],
    )
    async with LoopbackServer(plan) as server:
        result = await stream_openai_responses(RESPONSES.model(base_url=server.base_url), CONTEXT, options()).result()
        assert len(server.requests) == 1, "a quota error is final: no retry"
        assert result.error_info is not None
        assert (result.error_info.kind, result.error_info.retryable) == ("auth", False)


async def test_on_payload_can_add_fields_the_adapter_does_not_set() -> None:
    def add_tier(payload: dict[str, Any], _model: object) -> dict[str, Any]:
        return {**payload, "service_tier": "flex"}

    async with LoopbackServer(RESPONSES.scripted(TEXT)) as server:
        await stream_openai_responses(
            RESPONSES.model(base_url=server.base_url), CONTEXT, options(on_payload=add_tier)
        ).result()
        assert json.loads(server.requests[0].body)["service_tier"] == "flex"
