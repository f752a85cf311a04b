"""Differential: botocore — the event-stream parser and the bedrock-runtime service model boto3 runs —
and this adapter read every bundled ConverseStream body to the same final message, in three chunkings.

botocore's ``EventStream`` parses the bytes with the service model's ``ConverseStream`` output shape
(test-only: the adapter never imports it); :func:`fold` folds its events into (blocks, stop reason,
usage) the way the Converse API documents them: text blocks open on their first text, tool use on its
``contentBlockStart`` (server tools run at AWS and are no part of the answer), reasoning keeps its
signature, redacted reasoning its bytes. The adapter's message must say exactly the same.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import botocore.parsers  # pyright: ignore[reportMissingTypeStubs]
import botocore.session  # pyright: ignore[reportMissingTypeStubs]
import pytest
from botocore.eventstream import EventStream  # pyright: ignore[reportMissingTypeStubs]
from botocore.exceptions import EventStreamError  # pyright: ignore[reportMissingTypeStubs]

from normalize import AssistantMessage, TextContent, ThinkingContent, validate_events
from normalize.wire import AWS_EVENTSTREAM
from streamfns.bedrock import REDACTED_PLACEHOLDER
from tests.adapters import BEDROCK

pytestmark = pytest.mark.parallel  # clock-blind: in-process transport, no sockets or sleeps

EVENTSTREAM = "application/vnd.amazon.eventstream"
Folded = tuple[list[tuple[Any, ...]], str | None, dict[str, int], str | None]


class _Raw:
    """What botocore's EventStream reads: a response whose ``stream()`` yields the body's chunks."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    def stream(self) -> Iterator[bytes]:
        yield from self._chunks


def _output_shape() -> Any:
    session: Any = botocore.session.get_session()  # pyright: ignore[reportUnknownMemberType]
    operation = session.get_service_model("bedrock-runtime").operation_model("ConverseStream")
    return operation.output_shape.members["stream"]


SHAPE = _output_shape()


def fold(chunks: list[bytes]) -> Folded:
    """botocore's events for ``chunks``, folded: (blocks, raw stop reason, usage, exception code)."""
    stream: Any = EventStream(_Raw(chunks), SHAPE, botocore.parsers.EventStreamJSONParser(), "ConverseStream")
    blocks: dict[int, list[Any]] = {}
    skipped: set[int] = set()
    stop: str | None = None
    usage: dict[str, int] = {}
    try:
        for event in stream:
            ((name, body),) = event.items()
            index = body.get("contentBlockIndex")
            if name == "contentBlockStart":
                use = body["start"].get("toolUse")
                if use and use.get("type") != "server_tool_use":
                    blocks[index] = ["tool", use["toolUseId"], use["name"], ""]
                else:
                    skipped.add(index)
            elif name == "contentBlockDelta" and index not in skipped:
                delta = body["delta"]
                if delta.get("text"):
                    blocks.setdefault(index, ["text", ""])[1] += delta["text"]
                elif "toolUse" in delta:
                    blocks[index][3] += delta["toolUse"]["input"]
                elif "reasoningContent" in delta:
                    reasoning = delta["reasoningContent"]
                    if "redactedContent" in reasoning:
                        data = base64.b64encode(reasoning["redactedContent"]).decode()
                        blocks[index] = ["thinking", REDACTED_PLACEHOLDER, data, True]
                    elif reasoning.get("text") or reasoning.get("signature"):
                        block = blocks.setdefault(index, ["thinking", "", None, False])
                        block[1] += reasoning.get("text", "")
                        if "signature" in reasoning:
                            block[2] = (block[2] or "") + reasoning["signature"]
            elif name == "messageStop":
                stop = body["stopReason"]
            elif name == "metadata":
                usage = {k: v for k, v in body.get("usage", {}).items() if k != "totalTokens" and isinstance(v, int)}
    except EventStreamError as exc:
        failure: Any = exc
        return _normal(blocks), stop, usage, str(failure.response["Error"]["Code"])
    return _normal(blocks), stop, usage, None


def _normal(blocks: dict[int, list[Any]]) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for block in blocks.values():
        if block[0] == "tool":
            out.append(("tool", block[1], block[2], json.loads(block[3]) if block[3] else {}))
        else:
            out.append(tuple(block))
    return out


def ours(message: AssistantMessage) -> Folded:
    blocks: list[tuple[Any, ...]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            blocks.append(("text", block.text))
        elif isinstance(block, ThinkingContent):
            blocks.append(("thinking", block.thinking, block.thinking_signature, block.redacted))
        else:
            blocks.append(("tool", block.id, block.name, block.arguments))
    u = message.usage
    usage = {"inputTokens": u.input, "outputTokens": u.output}
    if u.cache_read:
        usage["cacheReadInputTokens"] = u.cache_read
    if u.cache_write:
        usage["cacheWriteInputTokens"] = u.cache_write
    code = message.error_info.code if message.error_info and message.raw_stop_reason is None else None
    return blocks, message.raw_stop_reason, usage if message.raw_stop_reason else {}, code


def chunkings(body: bytes) -> dict[str, list[bytes]]:
    return {
        "whole": [body],
        "13-byte reads": [body[i : i + 13] for i in range(0, len(body), 13)],
        "one message per read": [span.raw for span in AWS_EVENTSTREAM.spans(body)],
    }


@pytest.mark.parametrize("name", BEDROCK.stream_names())
async def test_botocore_and_the_adapter_agree(name: str) -> None:
    body = b"".join(BEDROCK.recorded_chunks(name))
    for label, chunks in chunkings(body).items():
        reference = fold(chunks)
        events, message = await BEDROCK.run_reads(chunks, content_type=EVENTSTREAM)
        assert validate_events(events) == [], label
        assert ours(message) == reference, f"{name} ({label})"
        assert reference[0] or reference[3], "the reference folded something"
