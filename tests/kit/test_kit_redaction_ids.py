"""The ids a vendor names its response by — ``response_id``, ``response_model``, ``service_tier`` — are
vendor text like an error message: the one choke point (:func:`streamfns.kit.redact_message`) blanks the
stream's secrets in them and cuts each to :data:`streamfns.kit.keys.MAX_ID_TEXT` bytes, whatever ended
the stream. A ``message_start`` naming ``msg_<key>`` (a gateway echoing the key) then an error left the
raw key in ``message.to_json()``; a 5 MB id stayed 5 MB.

Over a real loopback socket with the Anthropic adapter, on each of the kit's transports; and the choke
point itself, for ``service_tier``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conformance.loopback import LoopbackServer, Scripted
from normalize import AssistantMessage, Model, StreamOptions, event_to_json
from streamfns.anthropic import WIRE
from streamfns.kit import redact, redact_message
from streamfns.kit.keys import MAX_ERROR_TEXT, MAX_ID_TEXT
from streamfns.kit.telemetry import _MAX_ID  # pyright: ignore[reportPrivateUsage] - the one shared cap
from tests.kit._fake import CONTEXT

# Every behaviour here holds on each of the kit's transports (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("each_transport")

#: Obviously fake, assembled at run time.
KEY = "sk-ant-" + "PLANTED-id-echo-key-" + "0123456789abcdef"
#: "… [cut: N more bytes]" after a cut id: the cut is said.
_CUT_NOTE = 40


def _sse(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode()


def _start(message_id: str, served_by: str) -> bytes:
    message: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": served_by,
        "content": [],
    }
    return _sse("message_start", {"type": "message_start", "message": {**message, "usage": {"input_tokens": 3}}})


ERROR = _sse("error", {"type": "error", "error": {"type": "invalid_request_error", "message": "bad request"}})
HELLO = b"".join(
    [
        _sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}}),
        _sse(
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        ),
        _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _sse(
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}},
        ),
        _sse("message_stop", {"type": "message_stop"}),
    ]
)


async def _run(body: bytes) -> tuple[AssistantMessage, str]:
    plan = Scripted(headers=[("content-type", "text/event-stream")], chunks=[(0.0, body)])
    async with LoopbackServer(plan) as server:
        model = Model(id="claude-haiku-4-5", api=WIRE.api, provider="anthropic", base_url=server.base_url)
        stream = WIRE.stream_fn(model, CONTEXT, StreamOptions(api_key=KEY, max_retries=0))
        events = [event async for event in stream]
        message = await stream.result()
    return message, json.dumps([event_to_json(event) for event in events])


def _nowhere(secret: str, *texts: str) -> None:
    for text in texts:
        assert secret not in text
        assert redact(text, [secret]) == text, "no other spelling either (escaped, base64, …)"


async def test_a_key_echoed_in_the_response_id_and_model_is_redacted_when_the_stream_fails() -> None:
    message, events = await _run(_start(f"msg_{KEY}", f"m-{KEY}") + ERROR)
    assert message.stop_reason == "error", message.error_message
    assert message.response_id == "msg_[redacted]"
    assert message.response_model == "m-[redacted]"
    _nowhere(KEY, json.dumps(message.to_json()), events, repr(message))


async def test_a_key_echoed_in_the_response_id_is_redacted_when_the_stream_succeeds() -> None:
    message, events = await _run(_start(f"msg_{KEY}", "claude-haiku-4-5-20251001") + HELLO)
    assert message.stop_reason == "stop", message.error_message
    assert message.response_id == "msg_[redacted]"
    assert message.response_model == "claude-haiku-4-5-20251001", "an id without a secret is kept as sent"
    _nowhere(KEY, json.dumps(message.to_json()), events)


@pytest.mark.parametrize("ending", [ERROR, HELLO], ids=["error", "success"])
async def test_a_megabytes_long_id_is_cut(ending: bytes) -> None:
    huge = "x" * (5 * 1024 * 1024)
    message, _ = await _run(_start(f"msg_{huge}", f"m-{huge}") + ending)
    for value in (message.response_id, message.response_model):
        assert value is not None
        assert len(value.encode()) <= MAX_ID_TEXT + _CUT_NOTE, len(value)
        assert "[cut: " in value, "the cut is said"


def test_the_choke_point_covers_the_service_tier_and_keeps_one_cap_with_telemetry() -> None:
    message = AssistantMessage(response_id="resp_1", response_model="m-1", service_tier=f"tier-{KEY}")
    redact_message(message, [KEY])
    assert (message.response_id, message.response_model, message.service_tier) == ("resp_1", "m-1", "tier-[redacted]")
    message = AssistantMessage(service_tier="t" * 10_000)
    redact_message(message, [KEY])
    assert message.service_tier is not None
    assert len(message.service_tier.encode()) <= MAX_ID_TEXT + _CUT_NOTE
    assert _MAX_ID == MAX_ID_TEXT < MAX_ERROR_TEXT


def test_each_set_of_secrets_blanks_its_own_whatever_was_redacted_before() -> None:
    # The choke point reuses one redactor per set of secrets (every stream of a process ends through
    # it): one set's needles must never leak into, or go missing from, another's.
    other = "sk-ant-" + "PLANTED-other-key-" + "fedcba9876543210"
    for secrets, kept, blanked in (([KEY], other, KEY), ([other], KEY, other), ([KEY], other, KEY), ([], KEY, None)):
        message = AssistantMessage(response_id=f"id-{KEY}", response_model=f"m-{other}")
        redact_message(message, secrets)
        text = f"{message.response_id} {message.response_model}"
        assert kept in text
        if blanked is not None:
            assert blanked not in text
            assert "[redacted]" in text
