"""A markup page in UTF-16 sent as a 2xx stream is a page too: after a UTF-16 byte order mark
(``\\xff\\xfe``, ``\\xfe\\xff``) or as bare UTF-16 (``<\\x00``, ``\\x00<``) it ends ``protocol``, quoted
as text (no NULs), after one request — never ``truncated`` and retried, as it was when only the UTF-8
mark was skipped.

Over a real loopback socket, on each of the kit's transports, for server-sent events, JSON lines
(the NDJSON example and Ollama) and the AWS event stream.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any

import pytest

from conformance.loopback import LoopbackServer, Scripted
from examples.ndjson_chat.adapter import WIRE as NDJSON_WIRE
from normalize import AssistantMessage, Model, StreamOptions
from streamfns.ollama import WIRE as OLLAMA_WIRE
from tests.conformance._framed import converse_wire
from tests.kit._fake import CONTEXT
from tests.kit._fake import WIRE as SSE_WIRE

# Every behaviour here holds on each of the kit's transports (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("each_transport")

#: Built at run time: a credential of no known shape.
KEY = "utf16-test-" + "k3y" * 6
PAGE = "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body>upstream failed</body></html>"

WIRES: dict[str, tuple[Any, str]] = {
    "sse": (SSE_WIRE, "text/event-stream"),
    "ndjson": (NDJSON_WIRE, "application/x-ndjson"),
    "ollama": (OLLAMA_WIRE, "application/x-ndjson"),
    "eventstream": (converse_wire(), "application/vnd.amazon.eventstream"),
}

BODIES: dict[str, bytes] = {
    "utf16le-bom": b"\xff\xfe" + PAGE.encode("utf-16-le"),
    "utf16be-bom": b"\xfe\xff" + PAGE.encode("utf-16-be"),
    "utf16le-bom-spaces-first": b"\xff\xfe" + ("  \t" + PAGE).encode("utf-16-le"),
    "utf16le-no-bom": PAGE.encode("utf-16-le"),
    "utf16be-no-bom": PAGE.encode("utf-16-be"),
}


async def _run(wire: Any, plan: Scripted, options: StreamOptions) -> tuple[AssistantMessage, int]:
    async with LoopbackServer(plan) as server:
        model = Model(id="m-1", api=wire.api, provider="test", base_url=server.base_url)
        message = await wire.stream_fn(model, CONTEXT, options).result()
        return message, len(server.requests)


@pytest.mark.parametrize("body", list(BODIES), ids=list(BODIES))
@pytest.mark.parametrize("framing", list(WIRES), ids=list(WIRES))
async def test_a_utf16_page_is_a_protocol_error_quoted_as_text_and_not_retried(framing: str, body: str) -> None:
    wire, content_type = WIRES[framing]
    data = BODIES[body]
    chunks = [(0.0, data[at : at + 7]) for at in range(0, len(data), 7)]
    plan = Scripted(headers=[("content-type", content_type)], chunks=chunks)
    message, requests = await _run(wire, plan, StreamOptions(api_key=KEY, max_retries=2, max_retry_delay_s=0))
    info = message.error_info
    assert info is not None
    assert (info.kind, info.retryable, info.status) == ("protocol", False, 200), message.error_message
    assert requests == 1, "a page is not a stream cut short: it is not retried"
    said = message.error_message or ""
    assert f"answered 200 with {content_type}, not " in said
    assert "\x00" not in said
    assert "<!DOCTYPE html><html><head><title>502 Bad Gateway</title>" in said, said


async def test_an_event_stream_cut_inside_a_message_whose_length_ends_in_a_lt_stays_truncated() -> None:
    # A prelude of total length 60 is b"\x00\x00\x00<": NULs before a "<" are a length here, not UTF-16.
    prelude = struct.pack(">II", 60, 0)
    body = prelude + struct.pack(">I", zlib.crc32(prelude)) + b"x" * 8  # cut 40 bytes short
    assert body.startswith(b"\x00\x00\x00<")
    wire, content_type = WIRES["eventstream"]
    plan = Scripted(headers=[("content-type", content_type)], chunks=[(0.0, body)])
    message, _ = await _run(wire, plan, StreamOptions(api_key=KEY, max_retries=0))
    assert message.error_info is not None
    assert message.error_info.kind == "truncated", message.error_message
