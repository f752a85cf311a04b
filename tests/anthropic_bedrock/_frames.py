"""Claude-on-Bedrock bytes for tests: chunk messages carrying Anthropic events, exception messages, and the
inner events of a body (unwrapped as the adapter does, for the SDK oracle)."""

from __future__ import annotations

import base64
import json
from typing import Any

from normalize.wire import AWS_EVENTSTREAM, Base64Field, encode_message

__all__ = ["EVENT_STREAM", "chunk", "chunk_payload", "exception", "inner_events"]

EVENT_STREAM = "application/vnd.amazon.eventstream"
_CHUNK_HEADERS = {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"}


def chunk_payload(payload: bytes) -> bytes:
    """A ``chunk`` message with exactly ``payload`` (for payloads that are not what Bedrock sends)."""
    return encode_message(_CHUNK_HEADERS, payload)


def chunk(event: dict[str, Any] | bytes) -> bytes:
    """A ``chunk`` message carrying one Anthropic event (a dict, or its raw bytes) in base64."""
    raw = event if isinstance(event, bytes) else json.dumps(event).encode()
    return chunk_payload(json.dumps({"bytes": base64.b64encode(raw).decode()}).encode())


def exception(kind: str, message: str) -> bytes:
    """An ``exception`` message as Bedrock sends one mid-stream."""
    headers = {":exception-type": kind, ":content-type": "application/json", ":message-type": "exception"}
    return encode_message(headers, json.dumps({"message": message}).encode())


def inner_events(body: bytes) -> list[dict[str, Any]]:
    """The Anthropic events a recorded body's chunks carry, in order."""
    found: list[dict[str, Any]] = []
    for span in AWS_EVENTSTREAM.spans(body):
        inner = Base64Field().open(span.payload) if span.payload is not None else None
        assert inner is not None, span
        found.append(json.loads(inner))
    return found
