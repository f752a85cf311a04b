"""The Google adapter over a real loopback socket: what is Google's own on the wire — URLs, where the
key goes (never the query string), Vertex tokens and placement, retry delays from RetryInfo, error
bodies in every dress. The kit's shared behaviours are tested in ``tests/kit`` and by the harness."""

from __future__ import annotations

import json

import pytest

from conformance.loopback import LoopbackServer, Scripted
from normalize import StreamOptions, validate_events
from streamfns.google import stream_google
from tests.adapters import CONTEXT, GOOGLE, first_text
from tests.google._google import chunk, sse, usage

# Every behaviour here holds on each of the kit's transports (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("each_transport")

TEXT = [
    sse(chunk({"text": "Hel"}, responseId="r1", modelVersion="gemini-2.5-flash")),
    sse(chunk({"text": "lo"}, finish="STOP", usageMetadata=usage(4, 2))),
]
KEY = "gemini-test-key-not-real-000000000000000"


def scripted(reads: list[bytes], **kwargs: object) -> Scripted:
    return Scripted(chunks=[(0.0, piece) for piece in reads], **kwargs)  # pyright: ignore[reportArgumentType]


def error(status: int, body: object, content_type: str = "application/json; charset=UTF-8") -> Scripted:
    text = body if isinstance(body, bytes) else json.dumps(body, indent=2).encode()
    return Scripted(status=status, headers=[("content-type", content_type)], chunks=[(0.0, text)])


def clear_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_CLOUD_ACCESS_TOKEN",
        "GOOGLE_CLOUD_API_KEY",
        "GOOGLE_CLOUD_PROJECT",
        "GCLOUD_PROJECT",
        "GOOGLE_CLOUD_LOCATION",
    ):
        monkeypatch.delenv(name, raising=False)


async def test_the_gemini_api_request_on_the_wire_carries_the_key_in_a_header_only() -> None:
    async with LoopbackServer(scripted(TEXT)) as server:
        target = GOOGLE.model(base_url=f"{server.base_url}/v1beta")
        stream = stream_google(target, CONTEXT, StreamOptions(api_key=KEY))
        events = [event async for event in stream]
        result = await stream.result()
        assert validate_events(events) == []
        assert (result.stop_reason, first_text(result)) == ("stop", "Hello")
        request = server.requests[0]
        assert request.method == "POST"
        assert request.path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        assert KEY not in request.path
        assert request.headers["x-goog-api-key"] == KEY
        assert "authorization" not in request.headers
        assert request.headers["accept"] == "text/event-stream"
        assert json.loads(request.body)["contents"] == [{"role": "user", "parts": [{"text": "Say hello."}]}]
        await server.all_connections_closed()


@pytest.mark.parametrize("variable", ["GEMINI_API_KEY", "GOOGLE_API_KEY"])
async def test_the_key_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch, variable: str) -> None:
    clear_env(monkeypatch)
    monkeypatch.setenv(variable, KEY)
    async with LoopbackServer(scripted(TEXT)) as server:
        await stream_google(GOOGLE.model(base_url=server.base_url), CONTEXT).result()
        assert server.requests[0].headers["x-goog-api-key"] == KEY


async def test_a_missing_key_names_where_it_was_looked_for_and_sends_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    clear_env(monkeypatch)
    async with LoopbackServer(scripted(TEXT)) as server:
        result = await stream_google(GOOGLE.model(base_url=server.base_url), CONTEXT).result()
        assert result.error_info is not None
        assert result.error_info.kind == "auth"
        assert "GEMINI_API_KEY" in (result.error_message or "")
        assert "GOOGLE_API_KEY" in (result.error_message or "")
        assert server.requests == []


async def test_vertex_sends_a_bearer_token_to_the_project_and_location(monkeypatch: pytest.MonkeyPatch) -> None:
    clear_env(monkeypatch)
    monkeypatch.setenv("GOOGLE_CLOUD_ACCESS_TOKEN", "ya29.test-token-value")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "my-project")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-central1")
    async with LoopbackServer(scripted(TEXT)) as server:
        target = GOOGLE.model(id="gemini-2.5-pro", provider="google-vertex", base_url=f"{server.base_url}/v1")
        result = await stream_google(target, CONTEXT).result()
        assert result.stop_reason == "stop"
        request = server.requests[0]
        assert request.path == (
            "/v1/projects/my-project/locations/us-central1/publishers/google/models/gemini-2.5-pro"
            ":streamGenerateContent?alt=sse"
        )
        assert request.headers["authorization"] == "Bearer ya29.test-token-value"
        assert "x-goog-api-key" not in request.headers


async def test_vertex_without_a_project_is_a_config_error_before_sending(monkeypatch: pytest.MonkeyPatch) -> None:
    clear_env(monkeypatch)
    async with LoopbackServer(scripted(TEXT)) as server:
        target = GOOGLE.model(provider="google-vertex", base_url=server.base_url)
        result = await stream_google(target, CONTEXT, StreamOptions(api_key="ya29.token-for-test")).result()
        assert result.error_info is not None
        assert result.error_info.kind == "config"
        assert "GOOGLE_CLOUD_PROJECT" in (result.error_message or "")
        assert "GOOGLE_CLOUD_LOCATION" in (result.error_message or "")
        assert server.requests == []


async def test_vertex_express_mode_sends_an_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    clear_env(monkeypatch)
    monkeypatch.setenv("GOOGLE_CLOUD_API_KEY", KEY)
    async with LoopbackServer(scripted(TEXT)) as server:
        target = GOOGLE.model(provider="google-vertex", base_url=f"{server.base_url}/v1", compat={"express": True})
        await stream_google(target, CONTEXT).result()
        request = server.requests[0]
        assert request.path == "/v1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        assert request.headers["x-goog-api-key"] == KEY


RETRY_BODY = {
    "error": {
        "code": 429,
        "message": "You exceeded your current quota. Please retry in 34.4s.",
        "status": "RESOURCE_EXHAUSTED",
        "details": [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaMetric": "x"}]},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "34.4s"},
        ],
    }
}


async def test_a_429_carries_the_retry_info_delay_and_a_delay_over_the_cap_fails_at_once() -> None:
    async with LoopbackServer(error(429, RETRY_BODY)) as server:
        options = StreamOptions(api_key=KEY, max_retries=2, max_retry_delay_s=5)
        result = await stream_google(GOOGLE.model(base_url=server.base_url), CONTEXT, options).result()
        info = result.error_info
        assert info is not None
        assert (info.kind, info.status, info.retry_after_s, info.retryable) == ("rate_limit", 429, 34.4, True)
        assert "over the 5s cap" in (result.error_message or "")
        assert len(server.requests) == 1


async def test_a_429_with_a_short_retry_info_delay_is_retried_then_succeeds() -> None:
    short = json.loads(json.dumps(RETRY_BODY).replace("34.4s", "0.05s"))
    plans = iter([error(429, short), scripted(TEXT)])
    async with LoopbackServer(lambda request: next(plans)) as server:
        result = await stream_google(
            GOOGLE.model(base_url=server.base_url), CONTEXT, StreamOptions(api_key=KEY)
        ).result()
        assert result.stop_reason == "stop"
        assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("status", "body", "content_type", "kind"),
    [
        # A 404 that claims to be an event stream but carries Google's pretty JSON.
        (
            404,
            {"error": {"code": 404, "message": "models/x is not found for API version v1beta", "status": "NOT_FOUND"}},
            "text/event-stream",
            "not_found",
        ),
        # The Gemini API also wraps the status in a JSON array.
        (
            400,
            [{"error": {"code": 400, "message": "Invalid JSON payload received.", "status": "INVALID_ARGUMENT"}}],
            "application/json",
            "invalid_request",
        ),
        (
            400,
            {
                "error": {
                    "code": 400,
                    "message": "The input token count (1200000) exceeds the maximum number of tokens allowed "
                    "(1048576).",
                    "status": "INVALID_ARGUMENT",
                }
            },
            "application/json",
            "context_overflow",
        ),
        (
            403,
            {"error": {"code": 403, "message": "Permission denied", "status": "PERMISSION_DENIED"}},
            "application/json",
            "auth",
        ),
        (
            500,
            {"error": {"code": 500, "message": "Internal error encountered.", "status": "INTERNAL"}},
            "application/json",
            "server",
        ),
        (
            504,
            {"error": {"code": 504, "message": "Deadline expired", "status": "DEADLINE_EXCEEDED"}},
            "application/json",
            "timeout",
        ),
    ],
)
async def test_google_rpc_status_bodies_map_to_kinds_with_the_vendor_message(
    status: int, body: object, content_type: str, kind: str
) -> None:
    async with LoopbackServer(error(status, body, content_type)) as server:
        result = await stream_google(
            GOOGLE.model(base_url=server.base_url), CONTEXT, StreamOptions(api_key=KEY, max_retries=0)
        ).result()
        assert result.error_info is not None
        assert (result.error_info.kind, result.error_info.status) == (kind, status)
        message = (body[0] if isinstance(body, list) else body)["error"]["message"]  # pyright: ignore[reportIndexIssue, reportUnknownVariableType]
        assert message in (result.error_message or "")


async def test_a_key_the_server_echoes_back_is_redacted() -> None:
    body = {"error": {"code": 400, "message": f"API key not valid: {KEY}", "status": "INVALID_ARGUMENT"}}
    async with LoopbackServer(error(400, body)) as server:
        result = await stream_google(
            GOOGLE.model(base_url=server.base_url), CONTEXT, StreamOptions(api_key=KEY)
        ).result()
        assert KEY not in (result.error_message or "")
        assert "[redacted]" in (result.error_message or "")


async def test_eof_before_a_finish_reason_is_truncated_and_a_late_usage_chunk_still_counts() -> None:
    async with LoopbackServer(scripted(TEXT[:1])) as server:
        result = await stream_google(
            GOOGLE.model(base_url=server.base_url), CONTEXT, StreamOptions(api_key=KEY, max_retries=0)
        ).result()
        assert result.error_info is not None
        assert result.error_info.kind == "truncated"
        assert result.error_message == "Google stream ended before a finishReason"
    # A finish chunk without the usage: the message waits for the end of the body, so a later usage
    # chunk still counts.
    late = [TEXT[0], sse(chunk({"text": "lo"}, finish="STOP")), sse({"usageMetadata": usage(4, 9)})]
    async with LoopbackServer(scripted(late)) as server:
        result = await stream_google(
            GOOGLE.model(base_url=server.base_url), CONTEXT, StreamOptions(api_key=KEY)
        ).result()
        assert (result.stop_reason, result.usage.output) == ("stop", 9)


async def test_a_truncated_stream_before_output_is_retried() -> None:
    plans = iter([scripted([b'data: {"usageMetadata": {"promptTokenCount": 3}}\r\n\r\n']), scripted(TEXT)])
    async with LoopbackServer(lambda request: next(plans)) as server:
        result = await stream_google(
            GOOGLE.model(base_url=server.base_url), CONTEXT, StreamOptions(api_key=KEY)
        ).result()
        assert result.stop_reason == "stop"
        assert len(server.requests) == 2
        assert result.usage.input == 4


async def test_a_retry_starts_from_a_fresh_decoder_so_ids_and_usage_are_read_again() -> None:
    # The first attempt sends the same id and counts as the retry, then ends without a finish reason.
    first = sse({"responseId": "r1", "modelVersion": "gemini-2.5-flash", "usageMetadata": usage(4, 2)})
    plans = iter([scripted([first]), scripted(TEXT)])
    async with LoopbackServer(lambda request: next(plans)) as server:
        result = await stream_google(
            GOOGLE.model(base_url=server.base_url), CONTEXT, StreamOptions(api_key=KEY)
        ).result()
        assert len(server.requests) == 2
        assert (result.stop_reason, result.response_id, result.response_model) == ("stop", "r1", "gemini-2.5-flash")
        assert (result.usage.input, result.usage.output) == (4, 2)


CALL = {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}, "id": "fc1"}}


@pytest.mark.parametrize(
    ("last", "stop", "kind"),
    [
        (chunk({"text": "lo"}, finish="STOP", usageMetadata=usage(4, 2)), "stop", None),
        # The "done + usage" tail: the finish reason and the counts, no parts.
        ({"candidates": [{"finishReason": "STOP", "index": 0}], "usageMetadata": usage(4, 2)}, "stop", None),
        (chunk(CALL, finish="STOP", usageMetadata=usage(4, 2)), "toolUse", None),
        (chunk({"text": "lo"}, finish="MAX_TOKENS", usageMetadata=usage(4, 2)), "length", None),
        (chunk({"text": "lo"}, finish="SAFETY", usageMetadata=usage(4, 2)), "error", "content_filter"),
        (
            {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "usageMetadata": usage(4, 2)},
            "error",
            "content_filter",
        ),
    ],
    ids=["stop", "tail-frame", "tool-use", "max-tokens", "safety", "blocked-prompt"],
)
async def test_a_server_that_keeps_the_connection_open_after_the_last_chunk_still_ends_the_message(
    last: dict[str, object], stop: str, kind: str | None
) -> None:
    # Was: the decoder waited for EOF, and the idle timeout turned the complete answer into a
    # `timeout` error (r10). The last chunk carries the finish reason and the final counts.
    async with LoopbackServer(scripted([TEXT[0], sse(last)], end="stall")) as server:
        options = StreamOptions(api_key=KEY, timeout=1.5, max_retries=0)
        stream = stream_google(GOOGLE.model(base_url=server.base_url), CONTEXT, options)
        events = [event async for event in stream]
        result = await stream.result()
        assert validate_events(events) == []
        assert result.stop_reason == stop
        assert (result.error_info.kind if result.error_info else None) == kind
        assert (result.usage.input, result.usage.output) == (4, 2)
        assert len(server.requests) == 1
        await server.all_connections_closed()


async def test_a_streamed_call_still_open_at_the_finish_chunk_waits_for_the_body_to_end() -> None:
    # The call's closing part may still come: the message is not finished at the finish reason, so a
    # server holding the connection ends it by the idle timeout, never as a complete call.
    opened = chunk({"functionCall": {"name": "f", "id": "fc1", "willContinue": True}})
    stopped = chunk(
        {"functionCall": {"partialArgs": [{"jsonPath": "$.a", "stringValue": "x"}], "willContinue": True}},
        finish="STOP",
        usageMetadata=usage(4, 2),
    )
    async with LoopbackServer(scripted([sse(opened), sse(stopped)], end="stall")) as server:
        options = StreamOptions(api_key=KEY, timeout=0.5, max_retries=0)
        result = await stream_google(GOOGLE.model(base_url=server.base_url), CONTEXT, options).result()
        assert result.stop_reason == "error"
        assert result.error_info is not None
        assert result.error_info.kind == "timeout"
        assert (result.usage.input, result.usage.output) == (4, 2)
        await server.all_connections_closed()
