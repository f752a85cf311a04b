"""A 2xx whose body is a markup page (an HTML error or login page) ends ``protocol`` quoting the page,
whatever the framing, the line breaks and the chunking — never ``truncated``, never retried.

Over a real loopback socket, on each of the kit's transports, for server-sent events (the kit's Echo
fake), JSON lines (the NDJSON example and the built-in Ollama adapter: issue 35's case, a one-line page
with no newline under ``application/x-ndjson``) and the AWS event stream (the ConverseStream fake).
"""

from __future__ import annotations

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

#: Built at run time: a credential of no known shape, which a page may echo back.
KEY = "page-test-" + "k3y" * 6
TITLE = b"<title>502 Bad Gateway</title>"
PAGE = b"<!DOCTYPE html><html><head>" + TITLE + b"</head><body><h1>nginx</h1><p>upstream failed</p></body></html>"

WIRES: dict[str, tuple[Any, str]] = {
    "sse": (SSE_WIRE, "text/event-stream"),
    "ndjson": (NDJSON_WIRE, "application/x-ndjson"),
    "ollama": (OLLAMA_WIRE, "application/x-ndjson"),
    "eventstream": (converse_wire(), "application/vnd.amazon.eventstream"),
}

BODIES: dict[str, bytes] = {
    "one-line-no-newline": PAGE,
    "one-line-newline": PAGE + b"\n",
    "crlf-lines": PAGE.replace(b"><", b">\r\n<") + b"\r\n",
    "lf-lines-no-final-newline": PAGE.replace(b"><", b">\n<"),
    "bom-and-blank-lines-first": b"\xef\xbb\xbf \r\n\n\t" + PAGE.replace(b"><", b">\n<"),
    "lowercase-doctype": PAGE.lower(),
    "html-without-doctype": PAGE.removeprefix(b"<!DOCTYPE html>"),
}


def _chunks(body: bytes, size: int | None) -> list[tuple[float, bytes]]:
    if size is None:
        return [(0.0, body)]
    return [(0.0, body[at : at + size]) for at in range(0, len(body), size)]


async def _run(wire: Any, plan: Scripted, options: StreamOptions) -> tuple[AssistantMessage, int]:
    async with LoopbackServer(plan) as server:
        model = Model(id="m-1", api=wire.api, provider="test", base_url=server.base_url)
        message = await wire.stream_fn(model, CONTEXT, options).result()
        return message, len(server.requests)


@pytest.mark.parametrize("size", [None, 1, 7], ids=["one-chunk", "byte-by-byte", "7-byte-chunks"])
@pytest.mark.parametrize("body", list(BODIES), ids=list(BODIES))
@pytest.mark.parametrize("framing", list(WIRES), ids=list(WIRES))
async def test_a_page_sent_as_a_stream_is_a_protocol_error_quoting_it_and_not_retried(
    framing: str, body: str, size: int | None
) -> None:
    wire, content_type = WIRES[framing]
    plan = Scripted(headers=[("content-type", content_type)], chunks=_chunks(BODIES[body], size))
    message, requests = await _run(wire, plan, StreamOptions(api_key=KEY, max_retries=2, max_retry_delay_s=0))
    info = message.error_info
    assert info is not None
    assert (info.kind, info.retryable, info.status) == ("protocol", False, 200), message.error_message
    assert requests == 1, "a page is not a stream cut short: it is not retried"
    said = message.error_message or ""
    assert f"answered 200 with {content_type}, not " in said
    # The quote reaches the page's title even when the framing stopped at its first line or prelude.
    assert TITLE.decode().lower() in said.lower()


async def test_the_quote_is_bounded_redacted_and_folds_whitespace() -> None:
    page = b"<!DOCTYPE html>\n<html>\n<body>\n<p>key " + KEY.encode() + b" refused</p>\n" + b"<p>x</p>\n" * 5000
    plan = Scripted(headers=[("content-type", "application/x-ndjson")], chunks=_chunks(page, 4096))
    message, _ = await _run(NDJSON_WIRE, plan, StreamOptions(api_key=KEY, max_retries=0))
    said = message.error_message or ""
    assert KEY not in said
    assert "<p>key [redacted] refused</p>" in said
    assert "\n" not in said
    assert len(said) < 500, "at most the page's first 300 bytes are quoted"


async def test_the_quote_does_not_wait_for_the_rest_of_a_page_once_it_has_enough() -> None:
    # The server sends more than the quote needs, then holds the connection open: waiting for more
    # would end in the idle timeout instead of the protocol error.
    page = PAGE.replace(b"><", b">\n<") + b"\n" + b"<p>padding</p>\n" * 40
    plan = Scripted(headers=[("content-type", "application/x-ndjson")], chunks=_chunks(page, 7), end="stall")
    message, _ = await _run(NDJSON_WIRE, plan, StreamOptions(api_key=KEY, max_retries=0, timeout=30))
    assert message.error_info is not None
    assert message.error_info.kind == "protocol", message.error_message


async def test_a_page_whose_rest_never_comes_is_quoted_as_far_as_it_came() -> None:
    plan = Scripted(
        headers=[("content-type", "application/x-ndjson")], chunks=[(0.0, b"<!DOCTYPE html>\n")], end="stall"
    )
    message, _ = await _run(NDJSON_WIRE, plan, StreamOptions(api_key=KEY, max_retries=0, timeout=0.3))
    assert message.error_info is not None
    assert message.error_info.kind == "protocol", message.error_message
    assert (message.error_message or "").endswith("not a ndjson stream: <!DOCTYPE html>")


async def test_a_stream_cut_after_content_is_still_truncated_whatever_its_first_bytes() -> None:
    # The rule is for pages that gave no content: a stream that gave some and was cut stays truncated.
    body = b'{"message":{"role":"assistant","content":"Hel"},"done":false}\n{"message":{"role":"assi'
    plan = Scripted(headers=[("content-type", "application/x-ndjson")], chunks=[(0.0, body)])
    message, _ = await _run(NDJSON_WIRE, plan, StreamOptions(api_key=KEY, max_retries=0))
    assert message.error_info is not None
    assert message.error_info.kind == "truncated"
