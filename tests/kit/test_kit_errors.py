"""The shared error-body parser: one behaviour for every api's error bodies and error events."""

from __future__ import annotations

import json

import httpx
import pytest

from streamfns.kit import ErrorTable, VendorError, error_object, parse_retry_after, retry_hint

TABLE = ErrorTable(
    vendor="Vendor",
    kinds={"invalid_request_error": "invalid_request", "invalid_api_key": "auth", "overloaded": "overloaded"},
    overflow=("maximum context length",),
)


def _body(value: object) -> bytes:
    return json.dumps(value).encode()


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"error": {"type": "t", "message": " m ", "code": "c"}}, VendorError(type="t", message="m", code="c")),
        (
            {"error": {"code": 429, "message": "m", "status": "RESOURCE_EXHAUSTED"}},
            VendorError("RESOURCE_EXHAUSTED", "m", "429"),
        ),
        ({"error": "plain words"}, VendorError(message="plain words")),
        ({"error": {"code": True, "message": "m"}}, VendorError(message="m")),
        ({"detail": "not the common shape"}, None),
        ([], None),
        ("text", None),
    ],
)
def test_error_object_reads_the_common_shapes(body: object, expected: VendorError | None) -> None:
    assert error_object(body) == expected


def test_a_body_that_is_a_json_array_is_read_as_its_first_element() -> None:
    wrapped = _body([{"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}}])
    failure = ErrorTable(vendor="Vendor", kinds={"RESOURCE_EXHAUSTED": "rate_limit"}).from_body(
        429, httpx.Headers(), wrapped
    )
    assert (failure.info.kind, failure.info.code) == ("rate_limit", "429")
    assert failure.message == "Vendor API error 429 RESOURCE_EXHAUSTED: quota"
    assert TABLE.from_body(500, httpx.Headers(), b"[]").message == "Vendor API error 500: []"


def test_the_code_is_looked_up_before_the_type() -> None:
    body = _body({"error": {"type": "invalid_request_error", "code": "invalid_api_key", "message": "bad key"}})
    failure = TABLE.from_body(401, httpx.Headers(), body)
    assert (failure.info.kind, failure.info.code, failure.info.status, failure.info.retryable) == (
        "auth",
        "invalid_api_key",
        401,
        False,
    )
    assert failure.message == "Vendor API error 401 invalid_request_error: bad key"


def test_overflow_wording_upgrades_an_invalid_request_but_not_a_rate_limit() -> None:
    overflow = _body(
        {"error": {"type": "invalid_request_error", "message": "This model's maximum context length is 8192"}}
    )
    assert TABLE.from_body(400, httpx.Headers(), overflow).info.kind == "context_overflow"
    throttled = _body({"error": {"message": "maximum context length of tokens per minute reached"}})
    assert TABLE.from_body(429, httpx.Headers(), throttled).info.kind == "rate_limit"


@pytest.mark.parametrize(
    ("status", "body", "kind", "excerpt"),
    [
        (
            502,
            b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>",
            "server",
            "502 Bad Gateway",
        ),
        (503, b"upstream connect error or disconnect/reset before headers", "server", "upstream connect error"),
        (404, b"", "not_found", "(empty body)"),
        (400, b'{"error": {"type": "invalid_request_error", "message": ""}}', "invalid_request", '{"error"'),
        (500, b"<p>oops</p>", "server", "oops"),
    ],
)
def test_bodies_without_a_usable_message_are_quoted_briefly(status: int, body: bytes, kind: str, excerpt: str) -> None:
    failure = TABLE.from_body(status, httpx.Headers(), body)
    assert failure.info.kind == kind
    assert excerpt in failure.message
    assert len(failure.message) < 400


def test_retry_after_comes_from_headers_then_from_the_body() -> None:
    body = _body({"error": {"type": "overloaded", "message": "Please try again in 1.5s."}})
    assert TABLE.from_body(429, httpx.Headers({"retry-after-ms": "250"}), body).info.retry_after_s == 0.25
    assert TABLE.from_body(429, httpx.Headers({"retry-after": "3"}), body).info.retry_after_s == 3
    assert TABLE.from_body(429, httpx.Headers(), body).info.retry_after_s == 1.5
    event = TABLE.from_event({"error": {"type": "overloaded", "message": "retry in 350ms"}})
    assert (event.info.kind, event.info.retry_after_s) == ("overloaded", 0.35)


def test_retry_hints_and_retry_after_values() -> None:
    assert retry_hint("Rate limit reached. Please try again in 20s.") == 20
    assert retry_hint("Please retry in 34.4s") == 34.4
    assert retry_hint("nothing to see") is None
    assert parse_retry_after({"retry-after": "nan"}) is None
    assert parse_retry_after({"retry-after": "inf"}) is None
    assert parse_retry_after({"retry-after": "-3"}) == 0
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, now=1445412470.0) == 10
    assert parse_retry_after({"retry-after": "soon"}) is None


def test_x_should_retry_decides_over_the_status() -> None:
    assert not TABLE.from_body(503, httpx.Headers({"x-should-retry": "false"}), b"").info.retryable
    assert TABLE.from_body(400, httpx.Headers({"x-should-retry": "true"}), b"").info.retryable


def test_a_redirect_is_a_config_error_naming_the_location() -> None:
    failure = TABLE.from_body(301, httpx.Headers({"location": "https://api.example/v2"}), b"")
    assert (failure.info.kind, failure.info.retryable) == ("config", False)
    assert "https://api.example/v2" in failure.message


def test_an_event_error_of_unknown_shape_is_a_server_error() -> None:
    failure = TABLE.from_event({"weird": True})
    assert failure.info.kind == "server"
    assert failure.message == "Vendor stream error (unknown): no message"


def test_a_string_shaped_event_error_is_the_message() -> None:
    bare = TABLE.from_event("Overloaded: please try again in 2s")
    assert bare.message == "Vendor stream error: Overloaded: please try again in 2s"
    assert (bare.info.kind, bare.info.code, bare.info.retry_after_s) == ("server", None, 2.0)
    wrapped = TABLE.from_event({"error": "  model is loading  "})
    assert wrapped.message == "Vendor stream error: model is loading"
    typed = TABLE.from_event({"error": {"type": "overloaded", "message": "busy"}})
    assert typed.message == "Vendor stream error (overloaded): busy"


def test_final_codes_are_never_retryable_whatever_the_status() -> None:
    table = ErrorTable(
        vendor="Vendor", kinds={"insufficient_quota": "rate_limit"}, final=frozenset({"insufficient_quota"})
    )
    quota = _body({"error": {"type": "insufficient_quota", "code": "insufficient_quota", "message": "no quota"}})
    failure = table.from_body(429, httpx.Headers({"retry-after": "1"}), quota)
    assert (failure.info.kind, failure.info.retryable, failure.info.retry_after_s) == ("rate_limit", False, 1.0)
    throttled = _body({"error": {"type": "requests", "code": "rate_limit_exceeded", "message": "slow down"}})
    assert table.from_body(429, httpx.Headers(), throttled).info.retryable
    in_stream = table.from_event({"error": {"code": "insufficient_quota", "message": "no quota"}})
    assert (in_stream.info.kind, in_stream.info.retryable) == ("rate_limit", False)
