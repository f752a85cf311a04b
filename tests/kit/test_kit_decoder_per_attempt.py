"""Each attempt of a retried call reads its response with a fresh decoder.

A decoder keeps per-response state (a response id, open items, half-read arguments). Reused across
a retry, what it kept from the failed attempt would be read into the next response.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

import pytest

from conformance.loopback import LoopbackServer
from normalize import MessageBuilder, Model
from streamfns.kit import Decoder, ServerSentEvent
from tests.kit._fake import CONTEXT, HELLO, WIRE, EchoDecoder, model, options, reply, sse

# Every behaviour here holds on each of the kit's transports (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("each_transport")


class _Recording(EchoDecoder):
    """Echo's decoder, remembering every instance and the events each one saw."""

    made: list[_Recording] = []  # noqa: RUF012 - a per-test registry, reset by the test

    def __init__(self, builder: MessageBuilder, the_model: Model) -> None:
        super().__init__(builder, the_model)
        self.seen: list[bytes] = []
        _Recording.made.append(self)

    def on_event(self, event: ServerSentEvent) -> None:
        self.seen.append(event.data)
        super().on_event(event)


async def test_a_retried_call_reads_each_response_with_its_own_decoder() -> None:
    _Recording.made = []
    wire = replace(WIRE, decoder=_Recording)
    overloaded = sse({"type": "error", "error": {"type": "overloaded", "message": "Overloaded"}})
    plans = [reply(sse({"type": "usage", "input": 3}), overloaded), reply(*HELLO)]
    async with LoopbackServer(lambda _request: plans.pop(0)) as server:
        result = await wire.stream_fn(model(server.base_url), CONTEXT, options()).result()
    assert result.stop_reason == "stop"
    first, second = _Recording.made
    assert first is not second
    assert len(first.seen) == 2
    assert second.seen[0] == b'{"type": "text", "text": "Hel"}'


class _NotADecoder:
    """A duck-typed decoder that does not subclass :class:`streamfns.kit.Decoder`."""

    def __init__(self, builder: MessageBuilder, the_model: Model) -> None:
        self.builder = builder

    def on_event(self, event: ServerSentEvent) -> None:
        self.builder.text_delta("t", event.text)

    def on_eof(self) -> None:
        return


class _OnlyOnEvent(Decoder[ServerSentEvent]):
    """Writes only on_event: the base class's hooks do nothing, so EOF without a finish is truncated."""

    def __init__(self, builder: MessageBuilder, the_model: Model) -> None:
        self.builder = builder

    def on_event(self, event: ServerSentEvent) -> None:
        self.builder.text_delta("t", event.text)


def _failing_factory(builder: MessageBuilder, the_model: Model) -> Decoder[ServerSentEvent]:
    raise RuntimeError("no decoder today")


async def test_a_factory_that_makes_no_decoder_ends_the_stream_as_config_before_reading() -> None:
    for factory, said in (
        (_NotADecoder, "decoder factory returned a _NotADecoder, not a streamfns.kit.Decoder"),
        (_failing_factory, "decoder could not be made: RuntimeError: no decoder today"),
    ):
        wire = replace(WIRE, decoder=cast("Any", factory))
        async with LoopbackServer(lambda _request: reply(*HELLO)) as server:
            result = await wire.stream_fn(model(server.base_url), CONTEXT, options()).result()
        assert result.stop_reason == "error"
        assert result.error_info is not None
        assert (result.error_info.kind, result.error_info.retryable) == ("config", False)
        assert said in (result.error_message or "")
        assert result.content == []


async def test_the_base_hooks_do_nothing_so_a_body_without_its_marker_is_truncated() -> None:
    wire = replace(WIRE, decoder=_OnlyOnEvent)
    async with LoopbackServer(lambda _request: reply(sse("one"), sse("two"))) as server:
        result = await wire.stream_fn(model(server.base_url), CONTEXT, options()).result()
    assert result.stop_reason == "error"
    assert result.error_info is not None
    assert result.error_info.kind == "truncated"
    assert [block.type for block in result.content] == ["text"]
