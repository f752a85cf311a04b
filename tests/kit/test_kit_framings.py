"""The kit over JSON lines and the AWS event stream, and its signing step, over a real loopback socket.

The adapters are the NDJSON example (``examples/ndjson_chat``) and the ConverseStream fake of the
harness self-tests (``tests/conformance/_framed``), replaying real recorded bodies.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cassettes import SecretFound, load, use_cassette
from conformance.loopback import LoopbackServer, ReceivedRequest, Scripted
from examples.ndjson_chat.adapter import WIRE as NDJSON_WIRE
from normalize import (
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    Model,
    StreamOptions,
    TextContent,
    ToolCall,
    UserMessage,
    validate_events,
)
from normalize.wire import (
    AWS_EVENTSTREAM,
    DEFAULT_MAX_FRAME_BYTES,
    NDJSON,
    NDJSONDecoder,
    NDJSONFraming,
    encode_message,
)
from streamfns.kit import CompatError, Signature, SigningRequest, StreamFailure
from tests.conformance._framed import converse_wire, sign

# Every behaviour here holds on each of the kit's transports (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("each_transport")

ROOT = Path(__file__).resolve().parents[2]
NDJSON_BODY = load(ROOT / "examples/ndjson_chat/cassettes/text.jsonl").interactions[0].response.body
CONVERSE_BODY = load(ROOT / "tests/conformance/recordings/converse_text.jsonl").interactions[0].response.body
CONVERSE_TOOL = load(ROOT / "tests/conformance/recordings/converse_tool.jsonl").interactions[0].response.body
CONTEXT = Context(messages=[UserMessage(content="Say hello.")])
SECRET = "test-signing-secret-0123456789"
EVENTSTREAM = [("content-type", "application/vnd.amazon.eventstream")]


def _model(api: str, base_url: str) -> Model:
    return Model(id="m-1", api=api, provider="test", base_url=base_url)


async def _run(
    wire: Any, base_url: str, options: StreamOptions
) -> tuple[list[AssistantMessageEvent], AssistantMessage]:
    stream = wire.stream_fn(_model(wire.api, base_url), CONTEXT, options)
    events = [event async for event in stream]
    return events, await stream.result()


def _frames(body: bytes, framing: Any) -> list[tuple[float, bytes]]:
    return [(0.0, span.raw) for span in framing.spans(body)]


def _text(message: AssistantMessage) -> str:
    return "".join(block.text for block in message.content if isinstance(block, TextContent))


def _verify(request: ReceivedRequest) -> bool:
    """The HMAC the fake signer sends, recomputed here over the bytes the server received."""
    import hashlib
    import hmac

    digest = hmac.new(SECRET.encode(), request.body, hashlib.sha256).hexdigest()
    return request.headers.get("authorization") == f"TEST-HMAC Credential=test, Signature={digest}"


# -- JSON lines ---------------------------------------------------------------------------------------


async def test_an_ndjson_stream_over_a_socket_and_the_connection_is_released() -> None:
    plan = Scripted(headers=[("content-type", "application/x-ndjson")], chunks=_frames(NDJSON_BODY, NDJSON))
    async with LoopbackServer(plan) as server:
        events, message = await _run(NDJSON_WIRE, server.base_url, StreamOptions())
        assert validate_events(events) == []
        assert message.stop_reason == "stop"
        lines = [json.loads(line) for line in NDJSON_BODY.splitlines()]
        assert _text(message) == "".join(line["message"]["content"] for line in lines)
        assert (message.usage.input, message.usage.output) == (lines[-1]["prompt_eval_count"], lines[-1]["eval_count"])
        assert server.requests[0].path == "/api/chat"
        assert "authorization" not in server.requests[0].headers, "a local server needs no key"
        assert server.requests[0].headers["content-type"] == "application/json", "the kit says the body is JSON"
        assert await server.all_connections_closed()


async def test_the_json_content_type_is_only_a_default() -> None:
    plan = Scripted(headers=[("content-type", "application/x-ndjson")], chunks=_frames(NDJSON_BODY, NDJSON))
    async with LoopbackServer(plan) as server:
        await _run(NDJSON_WIRE, server.base_url, StreamOptions(headers={"Content-Type": "application/json; v=2"}))
        await _run(NDJSON_WIRE, server.base_url, StreamOptions(headers={"content-type": None}))
        assert server.requests[0].headers["content-type"] == "application/json; v=2"
        assert "content-type" not in server.requests[1].headers, "a caller who removes it gets none"


async def test_a_json_document_answered_with_200_is_not_an_ndjson_stream() -> None:
    body = b'{"model":"m","message":{"role":"assistant","content":"Hello"},"done":true}'
    plan = Scripted(headers=[("content-type", "application/json")], chunks=[(0.0, body)])
    async with LoopbackServer(plan) as server:
        _, message = await _run(NDJSON_WIRE, server.base_url, StreamOptions(max_retries=0))
    assert message.error_info is not None
    assert message.error_info.kind == "protocol"
    assert "answered 200 with application/json, not a ndjson stream" in (message.error_message or "")


async def test_an_ndjson_body_cut_inside_its_last_line_is_truncated_keeping_the_text() -> None:
    lines = NDJSON_BODY.splitlines(keepends=True)
    plan = Scripted(
        headers=[("content-type", "application/x-ndjson")], chunks=[(0.0, b"".join(lines[:5]) + lines[5][:20])]
    )
    async with LoopbackServer(plan) as server:
        _, message = await _run(NDJSON_WIRE, server.base_url, StreamOptions(max_retries=0))
    assert message.error_info is not None
    assert (message.error_info.kind, message.error_info.retryable) == ("truncated", True)
    assert "ended inside a line, before" in (message.error_message or "")
    assert _text(message) == "".join(json.loads(line)["message"]["content"] for line in lines[:5])


# -- the AWS event stream ---------------------------------------------------------------------------


async def test_an_event_stream_over_a_socket_reads_the_trailer_after_the_marker() -> None:
    async with LoopbackServer(Scripted(headers=EVENTSTREAM, chunks=_frames(CONVERSE_BODY, AWS_EVENTSTREAM))) as server:
        events, message = await _run(converse_wire(), server.base_url, StreamOptions(api_key=SECRET))
        assert validate_events(events) == []
        assert message.stop_reason == "stop"
        assert (message.usage.input, message.usage.output) == (577, 18), "the usage comes in the trailer"
        assert _text(message).startswith("The current temperature in Paris")
        assert _verify(server.requests[0]), "the signature covers the exact body bytes sent"
        assert await server.all_connections_closed()


async def test_a_tool_call_streams_from_event_stream_messages_in_any_chunking() -> None:
    body = CONVERSE_TOOL
    for chunks in ([(0.0, body)], [(0.0, body[i : i + 7]) for i in range(0, len(body), 7)]):
        async with LoopbackServer(Scripted(headers=EVENTSTREAM, chunks=chunks)) as server:
            _, message = await _run(converse_wire(), server.base_url, StreamOptions(api_key=SECRET))
        calls = [block for block in message.content if isinstance(block, ToolCall)]
        assert message.stop_reason == "toolUse"
        assert [(call.name, call.arguments) for call in calls] == [("get_temperature", {"city": "Paris"})]


async def test_a_bad_crc_mid_stream_is_a_protocol_error_keeping_the_partial_text_and_is_not_retried() -> None:
    spans = AWS_EVENTSTREAM.spans(CONVERSE_BODY)
    bad = bytearray(spans[3].raw)
    bad[-6] ^= 0x01  # a payload byte: the message CRC no longer matches
    chunks = [(0.0, span.raw) for span in spans[:3]] + [(0.0, bytes(bad))]
    async with LoopbackServer(Scripted(headers=EVENTSTREAM, chunks=chunks)) as server:
        _, message = await _run(converse_wire(), server.base_url, StreamOptions(api_key=SECRET, max_retries=2))
        assert len(server.requests) == 1
    assert message.error_info is not None
    assert (message.error_info.kind, message.error_info.output_started) == ("protocol", True)
    assert "message CRC mismatch" in (message.error_message or "")
    assert _text(message) == "The current temperature in Paris, the"


async def test_a_body_cut_inside_a_message_before_output_is_truncated_and_retried() -> None:
    cut = Scripted(headers=EVENTSTREAM, chunks=[(0.0, CONVERSE_BODY[:20])])
    whole = Scripted(headers=EVENTSTREAM, chunks=_frames(CONVERSE_BODY, AWS_EVENTSTREAM))
    plans = [cut, whole]
    async with LoopbackServer(lambda _request: plans.pop(0)) as server:
        events, message = await _run(converse_wire(), server.base_url, StreamOptions(api_key=SECRET, max_retries=1))
        assert len(server.requests) == 2
    assert message.stop_reason == "stop"
    assert [event.type for event in events].count("start") == 1


async def test_an_exception_message_mid_stream_ends_with_its_kind_and_the_partial_text() -> None:
    spans = AWS_EVENTSTREAM.spans(CONVERSE_BODY)
    exception = encode_message(
        {":message-type": "exception", ":exception-type": "throttlingException"}, b'{"message":"Too many tokens"}'
    )
    chunks = [(0.0, span.raw) for span in spans[:3]] + [(0.0, exception)]
    async with LoopbackServer(Scripted(headers=EVENTSTREAM, chunks=chunks)) as server:
        _, message = await _run(converse_wire(), server.base_url, StreamOptions(api_key=SECRET))
    assert message.error_info is not None
    assert (message.error_info.kind, message.error_info.code) == ("rate_limit", "throttlingException")
    assert "Too many tokens" in (message.error_message or "")
    assert _text(message) == "The current temperature in Paris, the"


async def test_an_error_type_in_a_header_reaches_the_error_table() -> None:
    plan = Scripted(
        status=429,
        headers=[
            ("content-type", "application/json"),
            ("x-amzn-ErrorType", "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"),
            ("retry-after", "3"),
        ],
        chunks=[(0.0, b'{"message":"Too many requests, please wait before trying again."}')],
    )
    async with LoopbackServer(plan) as server:
        _, message = await _run(converse_wire(), server.base_url, StreamOptions(api_key=SECRET, max_retries=0))
    info = message.error_info
    assert info is not None
    assert (info.kind, info.code, info.status, info.retry_after_s) == ("rate_limit", "ThrottlingException", 429, 3.0)
    assert "429 ThrottlingException: Too many requests" in (message.error_message or "")


async def test_a_json_body_sent_as_an_event_stream_is_reported_as_a_document() -> None:
    plan = Scripted(headers=[], chunks=[(0.0, b'{"message":"The security token included in the request is invalid."}')])
    async with LoopbackServer(plan) as server:
        _, message = await _run(converse_wire(), server.base_url, StreamOptions(api_key=SECRET, max_retries=0))
    assert message.error_info is not None
    assert message.error_info.kind == "protocol"
    assert 'not an aws-eventstream stream: {"message":"The security token' in (message.error_message or "")


# -- signing --------------------------------------------------------------------------------------------


async def test_each_attempt_is_signed_again_over_the_final_body() -> None:
    seen: list[SigningRequest] = []

    async def counting(request: SigningRequest) -> Signature:
        seen.append(request)
        return await sign(request)

    def payload(body: dict[str, Any], _model: Model) -> dict[str, Any]:
        return {**body, "inferenceConfig": {"maxTokens": 5}}

    limited = Scripted(status=429, headers=[("content-type", "application/json"), ("retry-after", "0")], chunks=[])
    plans = [limited, Scripted(headers=EVENTSTREAM, chunks=_frames(CONVERSE_BODY, AWS_EVENTSTREAM))]
    wire = replace(converse_wire(), signer=counting)
    options = StreamOptions(api_key=SECRET, max_retries=1, on_payload=payload)
    async with LoopbackServer(lambda _request: plans.pop(0)) as server:
        _, message = await _run(wire, server.base_url, options)
        assert message.stop_reason == "stop"
        assert len(seen) == len(server.requests) == 2
        assert all(_verify(request) for request in server.requests)
    assert json.loads(seen[0].body)["inferenceConfig"] == {"maxTokens": 5}, "signed after on_payload"
    assert seen[0].method == "POST"
    assert seen[0].url.endswith("/model/m-1/converse-stream")


@pytest.mark.parametrize(
    ("failure", "kind", "said"),
    [
        (RuntimeError(f"the credential chain is empty ({SECRET})"), "auth", "cannot sign the Bedrock (test) request"),
        (
            StreamFailure(__import__("normalize").ErrorInfo.of("auth"), f"token expired: {SECRET}"),
            "auth",
            "token expired",
        ),
        (CompatError("unknown region 'mars-1'"), "config", "unknown region 'mars-1'"),
    ],
)
async def test_a_signer_that_fails_ends_the_stream_before_anything_is_sent(
    failure: Exception, kind: str, said: str
) -> None:
    def failing(_request: SigningRequest) -> Signature:
        raise failure

    async with LoopbackServer(Scripted(headers=EVENTSTREAM)) as server:
        events, message = await _run(
            replace(converse_wire(), signer=failing), server.base_url, StreamOptions(api_key=SECRET)
        )
        assert server.requests == []
    assert [event.type for event in events] == ["start", "error"]
    assert message.error_info is not None
    assert message.error_info.kind == kind
    assert said in (message.error_message or "")
    assert SECRET not in (message.error_message or "")


async def test_a_signer_that_returns_something_else_is_a_config_error() -> None:
    def wrong(_request: SigningRequest) -> Any:
        return {"authorization": "x"}

    async with LoopbackServer(Scripted(headers=EVENTSTREAM)) as server:
        _, message = await _run(replace(converse_wire(), signer=wrong), server.base_url, StreamOptions(api_key=SECRET))
        assert server.requests == []
    assert message.error_info is not None
    assert message.error_info.kind == "config"
    assert "returned a dict, not a streamfns.kit.Signature" in (message.error_message or "")


TOKEN = "IQoJb3JpZ2luX2VjEPr//////////session-token-0123456789"
ACCESS_KEY = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY-test"


def _with_token(request: SigningRequest) -> Signature:
    return Signature({"x-amz-security-token": TOKEN, "authorization": "TEST-HMAC x"}, (TOKEN,))


async def test_a_signers_secrets_are_redacted_from_every_message() -> None:
    echo = json.dumps({"message": f"The security token {TOKEN} is expired."}).encode()
    plan = Scripted(status=403, headers=[("content-type", "application/json")], chunks=[(0.0, echo)])
    async with LoopbackServer(plan) as server:
        _, message = await _run(replace(converse_wire(), signer=_with_token), server.base_url, StreamOptions())
        assert server.requests[0].headers["x-amz-security-token"] == TOKEN
    assert "The security token [redacted] is expired." in (message.error_message or "")
    assert TOKEN not in (message.error_message or "")


async def test_the_recorder_takes_the_api_from_the_adapter_and_refuses_a_signers_secret(tmp_path: Path) -> None:
    plan = Scripted(headers=EVENTSTREAM, chunks=_frames(CONVERSE_BODY, AWS_EVENTSTREAM))
    async with LoopbackServer(plan) as server:
        path = tmp_path / "converse.jsonl"
        async with use_cassette(path, mode="once") as http:
            await _run(converse_wire(), server.base_url, StreamOptions(api_key=SECRET, http_client=http))
        recorded = load(path)
        assert recorded.api == "converse-test", "the api comes from the adapter that made the request"
        assert recorded.interactions[0].response.body == CONVERSE_BODY
        assert "authorization" not in dict(recorded.interactions[0].request.headers)

    # A secret the signer signed with but never sent (a secret access key), echoed back in the body by a
    # server or a proxy: the recorder knows it only from the request's tag, and writes nothing.
    def signed_with_a_key_never_sent(_request: SigningRequest) -> Signature:
        return Signature({"authorization": "TEST-HMAC Credential=AKIDEXAMPLE"}, (ACCESS_KEY,))

    start = encode_message(
        {":event-type": "messageStart", ":message-type": "event"}, f'{{"p":"{ACCESS_KEY}"}}'.encode()
    )
    chunks = [(0.0, start), *_frames(CONVERSE_BODY, AWS_EVENTSTREAM)[1:]]
    async with LoopbackServer(Scripted(headers=EVENTSTREAM, chunks=chunks)) as server:
        leaky = tmp_path / "leaky.jsonl"
        wire = replace(converse_wire(), signer=signed_with_a_key_never_sent)
        with pytest.raises(SecretFound, match=r"request credential \(signing secret\)"):
            async with use_cassette(leaky, mode="once") as http:
                await _run(wire, server.base_url, StreamOptions(http_client=http))
        assert not leaky.exists(), "nothing is written"


# -- a third party's framing, and what a signer may return -----------------------------------------


class _Exploding(NDJSONFraming):
    """A framing whose framer fails with something else than a FramingError, quoting a secret."""

    def framer(self, *, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> NDJSONDecoder:
        class Framer(NDJSONDecoder):
            reads = 0

            def feed(self, chunk: bytes) -> list[bytes]:
                self.reads += 1
                if self.reads == 3:
                    raise IndexError(f"no room for {SECRET}")
                return super().feed(chunk)

        return Framer(max_frame_bytes=max_frame_bytes)


class _Small(NDJSONFraming):
    def framer(self, *, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> NDJSONDecoder:
        return NDJSONDecoder(max_frame_bytes=64)


async def test_a_framing_that_raises_is_a_protocol_error_redacted_and_keeping_the_content() -> None:
    lines = NDJSON_BODY.splitlines(keepends=True)
    plan = Scripted(
        headers=[("content-type", "application/x-ndjson")],
        chunks=[(0.0, b"".join(lines[:2]))] + [(0.0, line) for line in lines[2:5]],
    )
    async with LoopbackServer(plan) as server:
        wire = replace(NDJSON_WIRE, framing=_Exploding())
        _, message = await _run(wire, server.base_url, StreamOptions(api_key=SECRET, max_retries=0))
    assert message.error_info is not None
    assert (message.error_info.kind, message.error_info.output_started) == ("protocol", True)
    assert "NDJSON chat framing failed: IndexError: no room for [redacted]" in (message.error_message or "")
    assert _text(message), "what was built before stays"


async def test_a_first_line_over_the_limit_says_so_and_is_not_taken_for_a_document() -> None:
    plan = Scripted(headers=[("content-type", "application/x-ndjson")], chunks=[(0.0, b'{"message":' + b" " * 100)])
    async with LoopbackServer(plan) as server:
        wire = replace(NDJSON_WIRE, framing=_Small())
        _, message = await _run(wire, server.base_url, StreamOptions(max_retries=0))
    assert message.error_info is not None
    assert message.error_info.kind == "protocol"
    assert "JSON line exceeds max_frame_bytes=64" in (message.error_message or "")


async def test_a_document_behind_a_byte_order_mark_is_still_a_document() -> None:
    plan = Scripted(headers=[("content-type", "text/plain")], chunks=[(0.0, b'\xef\xbb\xbf{"error":"denied"}')])
    async with LoopbackServer(plan) as server:
        _, message = await _run(converse_wire(), server.base_url, StreamOptions(api_key=SECRET, max_retries=2))
        assert len(server.requests) == 1, "a document is not retried as if it were cut short"
    assert message.error_info is not None
    assert message.error_info.kind == "protocol"
    assert 'not an aws-eventstream stream: {"error":"denied"}' in (message.error_message or "")


@pytest.mark.parametrize(
    ("returned", "said"),
    [
        (Signature({"authorization": 5}, ()), "headers that are not a mapping of strings to strings"),  # pyright: ignore[reportArgumentType]
        (Signature([("authorization", "x")], ()), "headers that are not a mapping of strings to strings"),  # pyright: ignore[reportArgumentType]
        (Signature({"authorization": "x"}, SECRET), "secrets that are not a tuple of strings"),  # pyright: ignore[reportArgumentType]
    ],
)
async def test_a_signature_of_the_wrong_shape_is_a_config_error(returned: Signature, said: str) -> None:
    def signer(_request: SigningRequest) -> Signature:
        return returned

    async with LoopbackServer(Scripted(headers=EVENTSTREAM)) as server:
        wire = replace(converse_wire(), signer=signer)
        _, message = await _run(wire, server.base_url, StreamOptions(api_key=SECRET))
        assert server.requests == []
    assert message.error_info is not None
    assert message.error_info.kind == "config"
    assert said in (message.error_message or "")


async def test_an_abort_lands_while_a_synchronous_signer_blocks() -> None:
    import asyncio
    import threading
    import time

    from normalize import AbortController

    release = threading.Event()

    def slow(request: SigningRequest) -> Signature:
        release.wait(5)  # a credential chain waiting on the network
        return sign_sync(request)

    controller = AbortController()
    async with LoopbackServer(Scripted(headers=EVENTSTREAM)) as server:
        wire = replace(converse_wire(), signer=slow)
        stream = wire.stream_fn(
            _model(wire.api, server.base_url), CONTEXT, StreamOptions(api_key=SECRET, signal=controller.signal)
        )
        started = time.monotonic()
        asyncio.get_running_loop().call_later(0.05, controller.abort)
        message = await stream.result()
        took = time.monotonic() - started
        release.set()
        assert server.requests == []
    assert message.stop_reason == "aborted"
    assert took < 2, f"the abort waited {took:.2f} s for the signer"


def sign_sync(request: SigningRequest) -> Signature:
    import hashlib
    import hmac

    digest = hmac.new(SECRET.encode(), request.body, hashlib.sha256).hexdigest()
    return Signature({"authorization": f"TEST-HMAC Credential=test, Signature={digest}"}, (SECRET,))
