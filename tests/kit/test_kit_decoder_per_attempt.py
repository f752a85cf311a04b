"""Each attempt of a retried call reads its response with a fresh decoder.

A decoder keeps per-response state (a response id, open items, half-read arguments). Reused across
a retry, what it kept from the failed attempt would be read into the next response.
"""

from __future__ import annotations

from dataclasses import replace

from conformance.loopback import LoopbackServer
from normalize import MessageBuilder, Model
from streamfns.kit import ServerSentEvent
from tests.kit._fake import CONTEXT, HELLO, WIRE, EchoDecoder, model, options, reply, sse


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
        result = await wire.stream(model(server.base_url), CONTEXT, options()).result()
    assert result.stop_reason == "stop"
    first, second = _Recording.made
    assert first is not second
    assert len(first.seen) == 2
    assert second.seen[0] == b'{"type": "text", "text": "Hel"}'
