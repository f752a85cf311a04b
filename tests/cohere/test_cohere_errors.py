"""Cohere's error bodies and statuses → kinds, retryability and messages (through the whole stream)."""

from __future__ import annotations

import json

import httpx
import pytest

import streamfns
from normalize import Context, ErrorKind, StreamOptions, UserMessage
from streamfns.cohere import ERRORS
from tests.cohere._cohere import (
    COHERE,
    body,
    content_delta,
    content_end,
    content_start,
    message_end,
    message_start,
)

pytestmark = pytest.mark.parallel  # clock-blind: in-process transports only


def _body(message: str, error_type: str | None = None) -> bytes:
    value: dict[str, str] = {"id": "2d4609a6-d1f9-4cf4-8d09-af865409bdc2", "message": message}
    if error_type is not None:
        value["error_type"] = error_type
    return json.dumps(value).encode()


@pytest.mark.parametrize(
    ("status", "body", "kind", "retryable"),
    [
        (400, _body("invalid request: message must not be empty"), "invalid_request", False),
        (
            400,
            _body("too many tokens: size limit exceeded by 25836 tokens. Try using shorter inputs.", "TOO_MANY_TOKENS"),
            "context_overflow",
            False,
        ),
        (
            400,
            _body("too many tokens: max tokens must be less than or equal to 4096 - received 8192.", "TOO_MANY_TOKENS"),
            "invalid_request",
            False,
        ),
        (
            400,
            _body("too many tokens: total number of tokens in the prompt cannot exceed 4081 - received 4292."),
            "context_overflow",
            False,
        ),
        (401, _body("invalid api token"), "auth", False),
        (402, _body("Please add or update your payment method"), "auth", False),
        (404, _body("model 'command-r' was removed on September 15, 2025."), "not_found", False),
        (422, _body("unprocessable"), "invalid_request", False),
        (429, _body("You are past the per minute request limit, please wait and try again later."), "rate_limit", True),
        (498, _body("invalid token"), "auth", False),
        (499, _body("request cancelled"), "network", True),
        (500, _body("internal server error"), "server", True),
        (503, _body("service unavailable"), "overloaded", True),
        (504, _body("gateway timeout"), "timeout", True),
    ],
)
def test_statuses_and_bodies(status: int, body: bytes, kind: ErrorKind, retryable: bool) -> None:
    failure = ERRORS.from_body(status, httpx.Headers(), body)
    assert (failure.info.kind, failure.info.status, failure.info.retryable) == (kind, status, retryable)
    assert failure.message.startswith(f"Cohere API error {status}")
    assert json.loads(body)["message"] in failure.message


def test_a_body_in_the_common_nested_shape_is_read_too() -> None:
    body = json.dumps({"error": {"message": "proxy says no", "type": "invalid_request_error"}}).encode()
    failure = ERRORS.from_body(400, httpx.Headers(), body)
    assert failure.message == "Cohere API error 400 invalid_request_error: proxy says no"


def test_an_html_page_from_a_gateway_keeps_its_title() -> None:
    page = b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
    failure = ERRORS.from_body(502, httpx.Headers({"content-type": "text/html"}), page)
    assert (failure.info.kind, failure.message) == ("server", "Cohere API error 502: 502 Bad Gateway")


async def test_a_499_through_the_stream_ends_it_as_a_retryable_network_error_not_an_abort() -> None:
    events, message = await COHERE.run_reads([_body("request cancelled")], status=499, content_type="application/json")
    assert message.stop_reason == "error"
    assert message.error_info is not None
    assert (message.error_info.kind, message.error_info.status, message.error_info.retryable) == ("network", 499, True)
    assert message.error_message == "Cohere API error 499: request cancelled"
    assert events[-1].type == "error"


async def test_a_retried_499_then_a_good_answer_succeeds() -> None:
    good = body(message_start(), content_start(0), content_delta(0, "ok"), content_end(0), message_end())
    answers = [
        httpx.Response(499, headers={"content-type": "application/json"}, content=_body("request cancelled")),
        httpx.Response(200, headers={"content-type": "text/event-stream"}, content=good),
    ]

    def handler(request: httpx.Request) -> httpx.Response:
        return answers.pop(0)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        # max_retry_delay_s=0: retried at once (no retry-after was asked), so no test waits on a clock.
        options = StreamOptions(api_key="test-key", http_client=client, max_retries=1, max_retry_delay_s=0)
        message = await streamfns.stream(
            COHERE.model(), Context(messages=[UserMessage(content="Hi")]), options
        ).result()
    assert message.stop_reason == "stop", message.error_message
    assert answers == []
