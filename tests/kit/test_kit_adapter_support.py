"""General pieces the Gemini adapter needed, tested on their own: a fresh decoder per attempt, the
``on_batch_end`` hook, CRLF-only SSE framing, live argument previews in the builder, the message's
``response_model``, and the G6 rule for a ``length`` stop that keeps the calls it completed."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import pytest

from conformance.loopback import LoopbackServer
from normalize import (
    AssistantMessage,
    DoneEvent,
    ErrorInfo,
    MessageBuilder,
    Model,
    StartEvent,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    validate_events,
)
from streamfns.kit import Decoder, ServerSentEvent, SSEDecoder, StreamFailure, load_event, text
from tests.kit._fake import WIRE, options, reply, run, sse

# Every behaviour here holds on each of the kit's transports (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("each_transport")

# ---------------------------------------------------------------------------- decoders per attempt


class _Recording(Decoder[ServerSentEvent]):
    """A decoder that counts instances, reads, and the events each batch held when it ended."""

    made: ClassVar[list[_Recording]] = []

    def __init__(self, builder: MessageBuilder, model: Model) -> None:
        self.builder = builder
        self.pending = 0
        self.batches: list[int] = []
        self.usage: int | None = None
        _Recording.made.append(self)

    def on_event(self, event: ServerSentEvent) -> None:
        if event.data == b"[END]":
            self._apply()
            self.builder.finish()
            return
        data = load_event(event.data, "Echo")
        self.pending += 1
        if data.get("type") == "text":
            self.builder.text_delta("t", text(data.get("text")))
        elif data.get("type") == "usage":
            self.usage = data.get("output")  # applied once per read, in on_batch_end
        elif data.get("type") == "stop":
            self.builder.stop("end", "stop")
        elif data.get("type") == "fail":
            raise StreamFailure(ErrorInfo.of("server"), "vendor failed")

    def _apply(self) -> None:
        if self.usage is not None:
            self.builder.usage(output=self.usage)

    def on_batch_end(self) -> None:
        self.batches.append(self.pending)
        self.pending = 0
        self._apply()

    def on_eof(self) -> None:
        return


RECORDING = dataclasses.replace(WIRE, decoder=_Recording)


async def test_each_attempt_gets_a_fresh_decoder() -> None:
    _Recording.made.clear()
    plans = iter(
        [
            reply(sse({"type": "usage", "output": 9})),
            reply(sse({"type": "text", "text": "ok"}, {"type": "stop"}), b"data: [END]\n\n"),
        ]
    )
    async with LoopbackServer(lambda request: next(plans)) as server:
        stream = RECORDING.stream_fn(_model(server.base_url), _context(), options())
        result = await stream.result()
    assert result.stop_reason == "stop"
    assert len(_Recording.made) == 2, "the retry after the truncated first attempt used a new decoder"
    assert _Recording.made[1].usage is None


async def test_on_batch_end_runs_once_per_read_after_its_events_and_also_when_one_failed() -> None:
    _Recording.made.clear()
    reads = [
        sse({"type": "text", "text": "a"}, {"type": "text", "text": "b"}, {"type": "usage", "output": 3}),
        sse({"type": "usage", "output": 5}, {"type": "fail"}),
    ]
    async with LoopbackServer(reply(*reads)) as server:
        stream = RECORDING.stream_fn(_model(server.base_url), _context(), options(max_retries=0))
        events = [event async for event in stream]
        result = await stream.result()
    assert validate_events(events) == []
    decoder = _Recording.made[0]
    assert decoder.batches == [3, 2]
    assert result.error_info is not None
    assert result.error_info.kind == "server"
    assert result.usage.output == 5, "the usage of the read that failed was applied before the error"


async def test_on_batch_end_is_not_called_once_the_builder_finished() -> None:
    _Recording.made.clear()
    async with LoopbackServer(
        reply(sse({"type": "text", "text": "a"}, {"type": "stop"}) + b"data: [END]\n\n")
    ) as server:
        await RECORDING.stream_fn(_model(server.base_url), _context(), options()).result()
    assert _Recording.made[0].batches == []


async def test_adapters_without_the_hook_are_unaffected() -> None:
    reads = [sse({"type": "text", "text": "hi"}, {"type": "stop", "reason": "end"}), b"data: [END]\n\n"]
    async with LoopbackServer(reply(*reads)) as server:
        _, result = await run(server.base_url)
    assert result.stop_reason == "stop"


def _model(base_url: str) -> Model:
    return Model(id="echo-1", api="echo", provider="echo", base_url=base_url)


def _context() -> Any:
    from tests.kit._fake import CONTEXT

    return CONTEXT


# -------------------------------------------------------------------------------------- SSE framing


def _decode(pieces: list[bytes]) -> list[bytes]:
    decoder = SSEDecoder()
    out = [event.data for piece in pieces for event in decoder.feed(piece)]
    return out + [event.data for event in decoder.flush()]


def test_crlf_only_chunks_decode_like_lf_ones_and_a_lone_cr_still_ends_a_line() -> None:
    body = b'data: {"a": 1}\r\n\r\ndata: {"b": "x\\ty"}\r\n\r\ndata: two\r\ndata: lines\r\n\r\n'
    expected = [b'{"a": 1}', b'{"b": "x\\ty"}', b"two\nlines"]
    assert _decode([body]) == expected
    assert _decode([body.replace(b"\r\n", b"\n")]) == expected
    assert _decode([body[:15], body[15:16], body[16:]]) == expected  # the CRLF split apart
    assert _decode([b"data: a\rdata: b\r\n\r\ndata: c\r\r"]) == [b"a\nb", b"c"]
    assert _decode([b"data: a\r\n\r", b"\ndata: b\r\n\r\n"]) == [b"a", b"b"]


# -------------------------------------------------------------------------------- builder previews


def test_a_live_preview_is_shown_as_is_and_the_strict_parse_decides_the_end() -> None:
    builder = MessageBuilder()
    live: dict[str, Any] = {}
    builder.tool_call_start("k", "c1", "f", preview=live)
    call = builder.message.content[0]
    assert isinstance(call, ToolCall)
    builder.tool_call_delta("k", '{"a": ')
    live["a"] = "par"
    assert call.arguments is live
    assert call.arguments == {"a": "par"}
    builder.tool_call_delta("k", '"partial"}')
    builder.block_end("k")
    assert call.arguments == {"a": "partial"}
    assert call.arguments is not live
    builder.stop("STOP", "stop")
    builder.finish()
    assert builder.message.stop_reason == "toolUse"


def test_a_live_preview_never_makes_incomplete_arguments_complete() -> None:
    builder = MessageBuilder()
    builder.tool_call_start("k", "c1", "f", preview={"a": "looks complete"})
    builder.tool_call_delta("k", '{"a": "looks')
    builder.stop("STOP", "stop")
    builder.finish()
    assert builder.message.stop_reason == "error"
    assert builder.message.error_info is not None
    assert builder.message.error_info.kind == "truncated"


# -------------------------------------------------------------------------------- response model


def test_response_model_round_trips_as_response_model_and_a_retry_forgets_it() -> None:
    message = AssistantMessage(model="gemini-flash-latest", response_model="gemini-2.5-flash-002")
    assert message.to_json()["responseModel"] == "gemini-2.5-flash-002"
    assert AssistantMessage.from_json(message.to_json()).response_model == "gemini-2.5-flash-002"
    assert "responseModel" not in AssistantMessage().to_json()
    builder = MessageBuilder(message=message)
    builder.start()
    assert builder.reset_for_retry()
    assert message.response_model is None


# ------------------------------------------------------------------------------------ G6 and length


def _one_call(stop: str) -> list[Any]:
    call = ToolCall(id="c1", name="f", arguments={"a": 1})
    message = AssistantMessage(content=[call], stop_reason=stop)  # pyright: ignore[reportArgumentType]
    return [
        StartEvent(message),
        ToolCallStartEvent(0, message),
        ToolCallDeltaEvent(0, '{"a": 1}', message),
        ToolCallEndEvent(0, call, message),
        DoneEvent(stop, message),  # pyright: ignore[reportArgumentType]
    ]


def test_a_length_stop_may_keep_the_calls_it_completed_but_a_clean_stop_may_not() -> None:
    assert validate_events(_one_call("length")) == []
    assert validate_events(_one_call("toolUse")) == []
    assert {v.rule for v in validate_events(_one_call("stop"))} == {"G6"}


def test_an_adapter_declared_from_a_wire_api_carries_its_profile() -> None:
    from streamfns.kit import Adapter
    from tests.kit._fake import WIRE as ECHO

    assert Adapter(api="echo", stream_fn=ECHO.stream_fn, package="x").profile is ECHO.profile
    assert Adapter(api="echo", stream_fn=lambda *args: None, package="x").profile is None  # pyright: ignore[reportArgumentType, reportUnknownLambdaType]
    assert Adapter(api="other", stream_fn=ECHO.stream_fn, package="x").profile is None, "served under another api"
    with pytest.raises(ValueError, match="declares the profile of api 'echo'"):
        Adapter(api="other", stream_fn=ECHO.stream_fn, package="x", profile=ECHO.profile)
