"""The same Bedrock ConverseStream bytes through four stacks, in one run:

(a) botocore's ``EventStreamBuffer`` + ``json.loads`` per message — merely framing and parsing;
(b) ``stream_bedrock_converse`` — our full normalization (framing with both CRCs, JSON, decoding,
    builder, events), authenticated with a Bedrock API key (no signing cost in the loop);
(m) the same stack with a minimal decoder (each message parsed and handed to the builder, no checks):
    what no decoder on the kit can undercut, shown without a budget (m/a, m/c);
(c) boto3's ``converse_stream`` event parsing: botocore's ``EventStream`` with the bedrock-runtime
    service model's ``ConverseStream`` output shape, the code a boto3 client runs per event.

Budgets: b/a ≥ 1.5 (issue 22); b/c ≥ 5 against boto3, restated in issue 34 from 10 (issue 22), which
asked for more than any decoder on the kit can reach, as the minimal decoder shows; and for (b) a body of
16k tool-input messages at most 1.5× the cost of 16k text messages (issue 22). Claude on Bedrock's
suite keeps its own budgets. Every message carries the random ``"p"`` padding Bedrock sends. Bodies
are served by an in-process transport in 16 KiB reads, the same bytes for every stack; times are CPU
times, medians of paired interleaved rounds judged by ``bench._util.RULE``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import httpx
import jiter

from bench._wire import compare, judge_cost, normalize_body, parse_eventstream_naively, transport
from normalize import MessageBuilder, Model
from normalize.wire import encode_message
from streamfns.bedrock import STOPS, WIRE, stream_bedrock_converse
from streamfns.kit import Decoder, EventStreamMessage

__all__ = ["CONVERSE_FLOOR_A", "CONVERSE_FLOOR_C", "TOOL_TEXT_COST", "main", "run", "text_body", "tool_body"]

# The budgets of ConverseStream (Claude on Bedrock's suite states its own).
#: Ours over the bare framing and parse (b/a), issue 22.
CONVERSE_FLOOR_A = 1.5
#: Ours over boto3's event parsing (b/c), issue 34 (10 before).
CONVERSE_FLOOR_C = 5.0
#: Ours: the cost of tool-input messages over that of text messages, at most (issue 22).
TOOL_TEXT_COST = 1.5

_MODEL = Model(
    id="us.amazon.nova-micro-v1:0",
    api="bedrock-converse-stream",
    provider="amazon-bedrock",
    base_url="http://bench.invalid",
)
_URL = "http://bench.invalid/model/us.amazon.nova-micro-v1%3A0/converse-stream"
_EVENTSTREAM = "application/vnd.amazon.eventstream"
_PAD = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0"


def _event(event: str, payload: dict[str, Any], n: int) -> bytes:
    headers = {":event-type": event, ":content-type": "application/json", ":message-type": "event"}
    body = {**payload, "p": _PAD[: n % len(_PAD)]}
    return encode_message(headers, json.dumps(body, separators=(",", ":")).encode())


def _end(n: int, stop: str) -> bytes:
    return (
        _event("contentBlockStop", {"contentBlockIndex": 0}, n)
        + _event("messageStop", {"stopReason": stop}, n)
        + _event("metadata", {"usage": {"inputTokens": 10, "outputTokens": n, "totalTokens": n + 10}}, n)
    )


def text_body(messages: int) -> bytes:
    """``messages`` text deltas of one block (words with escapes now and then), then the trailer."""
    words = ("Hello", " there", ", <friend>", " and", " caf\u00e9", "\n")
    body = [_event("messageStart", {"role": "assistant"}, 0)]
    body += [
        _event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": words[n % len(words)]}}, n)
        for n in range(messages)
    ]
    return b"".join(body) + _end(messages, "end_turn")


def tool_body(messages: int) -> bytes:
    """One tool call whose input arrives in ``messages`` fragments (a long string argument), then the trailer."""
    start = {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "tooluse_bench", "name": "write"}}}
    body = [_event("messageStart", {"role": "assistant"}, 0), _event("contentBlockStart", start, 0)]
    fragments = ['{"text": "'] + ["a\\tb c" for _ in range(messages - 2)] + ['"}']
    body += [
        _event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": piece}}}, n)
        for n, piece in enumerate(fragments)
    ]
    return b"".join(body) + _end(messages, "tool_use")


def _transport(body: bytes) -> httpx.MockTransport:
    return transport(body, _EVENTSTREAM)


async def _bare(body: bytes) -> int:
    return await parse_eventstream_naively(body, _URL)


async def _ours(body: bytes) -> int:
    return await normalize_body(stream_bedrock_converse, _MODEL, body, media_type=_EVENTSTREAM)


class _MinimalDecoder(Decoder[EventStreamMessage]):
    """Each message parsed and handed to the builder as it comes (a text or an input fragment as a
    delta, a tool start, the stop), with none of the real decoder's checks: message types, indexes,
    the order of events, usage. No decoder on the kit can undercut it."""

    __slots__ = ("_builder",)

    def __init__(self, builder: MessageBuilder, model: Model) -> None:
        self._builder = builder

    def on_event(self, frame: EventStreamMessage, /) -> None:
        event = frame.headers[":event-type"]
        data = jiter.from_json(frame.payload)
        if event == "contentBlockDelta":
            delta = data["delta"]
            if "text" in delta:
                self._builder.text_delta(0, delta["text"])
            else:
                self._builder.tool_call_delta(0, delta["toolUse"]["input"])
        elif event == "contentBlockStart":
            tool = data["start"]["toolUse"]
            self._builder.tool_call_start(0, tool["toolUseId"], tool["name"])
        elif event == "messageStop":
            STOPS.stop(self._builder, data["stopReason"])

    def on_eof(self) -> None:
        self._builder.finish()


_MINIMAL = dataclasses.replace(WIRE, decoder=_MinimalDecoder).stream_fn


async def _minimal(body: bytes) -> int:
    return await normalize_body(_MINIMAL, _MODEL, body, media_type=_EVENTSTREAM)


class _Raw:
    def __init__(self, reads: list[bytes]) -> None:
        self._reads = reads

    def stream(self) -> Iterator[bytes]:
        yield from self._reads


_SHAPE: list[Any] = []


def _shape() -> Any:
    if not _SHAPE:
        import botocore.session  # pyright: ignore[reportMissingTypeStubs]

        session: Any = botocore.session.get_session()  # pyright: ignore[reportUnknownMemberType]
        operation = session.get_service_model("bedrock-runtime").operation_model("ConverseStream")
        _SHAPE.append(operation.output_shape.members["stream"])
    return _SHAPE[0]


async def _client(body: bytes) -> int:
    import botocore.parsers  # pyright: ignore[reportMissingTypeStubs]
    from botocore.eventstream import EventStream  # pyright: ignore[reportMissingTypeStubs]

    reads: list[bytes] = []
    async with httpx.AsyncClient(transport=_transport(body)) as client, client.stream("POST", _URL) as response:
        reads = [chunk async for chunk in response.aiter_raw()]
    stream: Any = EventStream(_Raw(reads), _shape(), botocore.parsers.EventStreamJSONParser(), "ConverseStream")
    count = 0
    for _ in stream:
        count += 1
    return count


def run() -> list[str]:
    """Measure and return report lines."""
    lines: list[str] = []
    stacks = {"botocore EventStreamBuffer + json.loads": _bare, "stream_bedrock_converse": _ours}
    client = ("boto3 converse_stream event parsing (botocore EventStream)", _client)
    minimal = ("a minimal decoder on the kit", _minimal)
    for label, body, count in (
        ("text 40k messages", text_body(40_000), 40_004),
        ("tool input 16k messages", tool_body(16_000), 16_005),
    ):
        floor_a, floor_c = CONVERSE_FLOOR_A, CONVERSE_FLOOR_C
        lines += compare(label, body, count, stacks, client, floor_a=floor_a, floor_c=floor_c, minimal=minimal).lines()
    label = "stream_bedrock_converse tool/text cost at 16k messages"
    lines.append(judge_cost(label, _ours, tool_body(16_000), text_body(16_000), TOOL_TEXT_COST))
    return lines


def main() -> None:
    """Print the Bedrock report."""
    for line in run():
        print(line, flush=True)


if __name__ == "__main__":
    main()
