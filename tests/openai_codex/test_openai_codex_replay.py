"""Codex bodies replay to done (the package's synthetic cassettes); plan limits end ``rate_limit`` with
when to retry; an expired login ends ``auth`` naming ``streamfns login openai-codex``."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from conformance.loopback import LoopbackServer, ReceivedRequest, Scripted
from normalize import Context, StreamOptions, UserMessage
from streamfns.catalog import get_model
from streamfns.openai_codex import stream_openai_codex
from streamfns.openai_codex.errors import ERRORS, extract_codex_error, reset_delay
from tests.adapters import calls, texts, thinking
from tests.openai_codex._codex import CODEX, STREAMS, USAGE_LIMIT, FakeLogin, cassette, codex_login

pytestmark = pytest.mark.parallel

CONTEXT = Context(messages=[UserMessage(content="Hi", timestamp=0)])
EXPIRED = "codex-test-access-token-expired-0001"
RENEWED = "codex-test-access-token-renewed-0002"


async def test_the_text_cassette_replays_to_done() -> None:
    _, message = await CODEX.replay(cassette(STREAMS["text"]))
    assert message.stop_reason == "stop", message.error_message
    assert texts(message) == "Hello! How can I help?"
    assert message.usage.input == 2310 - 2048
    assert message.usage.cache_read == 2048
    assert message.response_id == "resp_codex_synthetic_0001"


async def test_the_tool_call_cassette_replays_to_tool_use() -> None:
    _, message = await CODEX.replay(cassette(STREAMS["tool"]))
    assert message.stop_reason == "toolUse", message.error_message
    [call] = calls(message)
    assert call.name == "shell"
    assert call.arguments == {"command": ["ls", "-la"]}
    assert call.id == "call_codex_synthetic_0001|fc_codex_synthetic_0001"


async def test_the_parallel_cassette_replays_two_calls() -> None:
    _, message = await CODEX.replay(cassette(STREAMS["parallel"]))
    assert message.stop_reason == "toolUse", message.error_message
    assert [call.arguments for call in calls(message)] == [{"city": "Paris"}, {"city": "Berlin"}]


async def test_the_reasoning_cassette_replays_a_summary_with_its_encrypted_item() -> None:
    _, message = await CODEX.replay(cassette(STREAMS["thinking"]))
    assert message.stop_reason == "stop", message.error_message
    assert thinking(message).startswith("**Answering a capital question**")
    assert texts(message) == "The capital of France is Paris."
    signature = json.loads(message.content[0].thinking_signature or "{}")  # type: ignore[union-attr]
    assert signature["encrypted_content"] == "synthetic-encrypted-reasoning-placeholder"
    assert message.usage.reasoning == 64


async def test_a_plan_usage_is_priced_as_a_subscription_at_list_prices() -> None:
    model = get_model("openai-codex", "gpt-5.4")
    _, message = await CODEX.replay(cassette(STREAMS["text"]), model)
    assert message.usage.cost.basis == "subscription"
    assert message.usage.cost.total is not None
    assert message.usage.cost.total > 0, "the list price is kept, so a usage says what it would have cost"


async def test_the_usage_limit_429_is_rate_limit_with_the_reset_delay() -> None:
    _, message = await CODEX.replay(cassette(USAGE_LIMIT))
    assert message.stop_reason == "error"
    info = message.error_info
    assert info is not None
    assert info.kind == "rate_limit"
    assert info.status == 429
    assert info.code == "usage_limit_reached"
    assert info.retry_after_s == 7200
    assert "(plus plan)" in (message.error_message or "")


def test_a_reset_time_given_as_an_epoch_is_measured_from_now() -> None:
    now = time.time()
    body = json.dumps({"error": {"type": "usage_limit_reached", "message": "", "resets_at": now + 900}}).encode()
    failure = ERRORS.from_body(429, {}, body)
    assert failure.info.kind == "rate_limit"
    assert failure.info.retry_after_s is not None
    assert 880 <= failure.info.retry_after_s <= 900
    assert reset_delay({"resets_at": 100.0}, now=160.0) == 0.0, "a reset in the past waits for nothing"
    assert reset_delay({"resets_in_seconds": "30"}) == 30.0
    assert reset_delay({"resets_in_seconds": True, "resets_at": "soon"}) is None


def test_a_retry_after_header_wins_over_the_body() -> None:
    body = json.dumps({"error": {"type": "usage_limit_reached", "resets_in_seconds": 7200}}).encode()
    assert ERRORS.from_body(429, {"retry-after": "12"}, body).info.retry_after_s == 12


def test_a_plan_without_codex_is_auth_and_final() -> None:
    body = json.dumps({"error": {"type": "usage_not_included", "message": "Upgrade to use Codex"}}).encode()
    info = ERRORS.from_body(429, {}, body).info
    assert info.kind == "auth"
    assert not info.retryable


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_login_is_auth_whatever_the_body_says(status: int) -> None:
    body = json.dumps({"error": {"type": "invalid_request_error", "message": "nope", "code": None}}).encode()
    assert ERRORS.from_body(status, {}, body).info.kind == "auth"
    assert ERRORS.from_body(status, {}, b"<html><title>Just a moment...</title></html>").info.kind == "auth"


def test_a_detail_body_is_quoted() -> None:
    failure = ERRORS.from_body(400, {}, b'{"detail": "Unsupported parameter: max_output_tokens"}')
    assert failure.info.kind == "invalid_request"
    assert "Unsupported parameter: max_output_tokens" in failure.message
    assert extract_codex_error({"nothing": 1}) is None


def sse(*events: dict[str, Any]) -> list[bytes]:
    return [f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode() for event in events]


CREATED: dict[str, Any] = {
    "type": "response.created",
    "response": {"id": "resp_x", "status": "in_progress", "output": []},
}


async def test_a_usage_limit_said_mid_stream_is_rate_limit_with_its_reset() -> None:
    error: dict[str, Any] = {
        "type": "error",
        "code": "usage_limit_reached",
        "message": "limit",
        "resets_in_seconds": 60,
    }
    _, message = await CODEX.run_reads(sse(CREATED, error))
    info = message.error_info
    assert info is not None
    assert info.kind == "rate_limit"
    assert info.retry_after_s == 60


async def test_a_failed_response_with_a_plan_limit_is_rate_limit() -> None:
    failed: dict[str, Any] = {
        "type": "response.failed",
        "response": {
            "id": "resp_x",
            "status": "failed",
            "output": [],
            "error": {"code": "usage_limit_reached", "message": "limit", "resets_in_seconds": 30},
        },
    }
    _, message = await CODEX.run_reads(sse(CREATED, failed))
    info = message.error_info
    assert info is not None
    assert info.kind == "rate_limit"
    assert info.retry_after_s == 30


async def test_response_done_ends_the_stream() -> None:
    message_item: dict[str, Any] = {"type": "message", "id": "msg_x", "role": "assistant", "content": []}
    done: dict[str, Any] = {
        "type": "response.done",
        "response": {
            "id": "resp_x",
            "status": "completed",
            "output": [],
            "usage": {"input_tokens": 3, "output_tokens": 1},
        },
    }
    reads = sse(
        CREATED,
        {"type": "response.output_item.added", "output_index": 0, "item": message_item},
        {"type": "response.output_text.delta", "output_index": 0, "item_id": "msg_x", "delta": "Hi"},
        done,
    )
    _, message = await CODEX.run_reads(reads)
    assert message.stop_reason == "stop", message.error_message
    assert texts(message) == "Hi"
    assert message.usage.output == 1


def expired_reply(request: ReceivedRequest) -> Scripted:
    seen = request.headers.get("authorization", "")
    body = json.dumps(
        {"error": {"message": f"Provided authentication token is expired ({seen})", "code": "token_expired"}}
    )
    return Scripted(status=401, headers=[("content-type", "application/json")], chunks=[(0.0, body.encode())])


async def test_an_expired_token_that_cannot_be_renewed_ends_auth_naming_the_login_command() -> None:
    login = FakeLogin(EXPIRED, renews=False)
    with codex_login(login):
        async with LoopbackServer(expired_reply) as server:
            message = await stream_openai_codex(CODEX.model(base_url=server.base_url), CONTEXT).result()
            assert len(server.requests) == 1
    assert login.renewals == 1
    assert message.error_info is not None
    assert message.error_info.kind == "auth"
    assert "streamfns login openai-codex" in (message.error_message or "")
    assert EXPIRED not in (message.error_message or "")


async def test_an_expired_token_is_renewed_once_and_the_stream_goes_on() -> None:
    login = FakeLogin(EXPIRED, RENEWED)
    body = [chunk.data for chunk in cassette(STREAMS["text"]).interactions[0].response.chunks]

    def responder(request: ReceivedRequest) -> Scripted:
        if EXPIRED in request.headers.get("authorization", ""):
            return expired_reply(request)
        return Scripted(chunks=[(0.0, chunk) for chunk in body])

    with codex_login(login):
        async with LoopbackServer(responder) as server:
            model = CODEX.model(base_url=server.base_url)
            message = await stream_openai_codex(model, CONTEXT, StreamOptions(max_retries=0)).result()
            sent = [request.headers["authorization"] for request in server.requests]
    assert message.stop_reason == "stop", message.error_message
    assert sent == [f"Bearer {EXPIRED}", f"Bearer {RENEWED}"]


async def test_a_token_given_as_the_api_key_that_expired_ends_auth_naming_the_login_command() -> None:
    # The real login signer (streamfns.auth), with the token passed by hand: no store is read, a 401
    # cannot be renewed, and the message says how to log in.
    async with LoopbackServer(expired_reply) as server:
        model = CODEX.model(base_url=server.base_url)
        message = await stream_openai_codex(model, CONTEXT, StreamOptions(api_key=EXPIRED)).result()
        assert server.requests[0].headers["authorization"] == f"Bearer {EXPIRED}"
    assert message.error_info is not None
    assert message.error_info.kind == "auth"
    assert (message.error_message or "").endswith("; log in again: run `streamfns login openai-codex`")
    assert EXPIRED not in (message.error_message or "")


async def test_no_login_at_all_ends_auth_naming_the_login_command_and_sends_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STREAMFNS_AUTH_FILE", str(tmp_path / "auth.json"))
    async with LoopbackServer(expired_reply) as server:
        message = await stream_openai_codex(CODEX.model(base_url=server.base_url), CONTEXT).result()
        assert server.requests == []
    assert message.error_info is not None
    assert message.error_info.kind == "auth"
    assert "streamfns login openai-codex" in (message.error_message or "")


async def test_a_model_of_another_provider_on_this_api_uses_the_codex_login() -> None:
    login = FakeLogin(RENEWED)
    body = [chunk.data for chunk in cassette(STREAMS["text"]).interactions[0].response.chunks]
    with codex_login(login):
        async with LoopbackServer(Scripted(chunks=[(0.0, chunk) for chunk in body])) as server:
            model = CODEX.model(base_url=server.base_url, provider="my-codex")
            message = await stream_openai_codex(model, CONTEXT).result()
            assert server.requests[0].headers["authorization"] == f"Bearer {RENEWED}"
    assert message.stop_reason == "stop", message.error_message


async def test_without_any_codex_login_registered_the_api_signer_ends_auth() -> None:
    with codex_login(None):
        async with LoopbackServer(expired_reply) as server:
            model = CODEX.model(base_url=server.base_url, provider="my-codex")
            message = await stream_openai_codex(model, CONTEXT).result()
            assert server.requests == []
    assert message.error_info is not None
    assert message.error_info.kind == "auth"
    assert "streamfns login openai-codex" in (message.error_message or "")
