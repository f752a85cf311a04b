"""The Cohere v2 chat StreamFn (api ``cohere-chat``, provider ``cohere``), declared for the adapter kit.

``POST https://api.cohere.com/v2/chat`` with ``stream: true``; the answer is server-sent events, one
``event: <type>`` per frame, ending with ``message-end`` (then ``data: [DONE]``). The key comes from
``StreamOptions.api_key``, ``COHERE_API_KEY`` or ``CO_API_KEY`` (the name Cohere's SDK reads) and is
sent as a Bearer token. ``request.py`` renders the payload (tool plans and reasoning replayed the way
Cohere takes them back), ``decode.py`` maps the events to the builder (a tool plan becomes a thinking
block; citations are not kept), ``errors.py`` reads error bodies and Cohere's own statuses (499 is a
retryable ``network`` failure); :mod:`streamfns.kit` does the rest.
"""

from __future__ import annotations

from streamfns.cohere.compat import CohereCompat
from streamfns.cohere.decode import STOPS, TOOL_PLAN, CohereDecoder
from streamfns.cohere.errors import ERRORS, STATUSES, VENDOR, error_body, stream_error
from streamfns.cohere.request import DEFAULT_BASE_URL, build_request, cohere_tool_call_id
from streamfns.kit import DROP, Adapter, ApiKey, Drop, Ending, FrameView, WireApi

__all__ = [
    "ADAPTER",
    "DEFAULT_BASE_URL",
    "ERRORS",
    "STATUSES",
    "STOPS",
    "TOOL_PLAN",
    "WIRE",
    "CohereCompat",
    "CohereDecoder",
    "build_request",
    "cohere_tool_call_id",
    "stream_cohere_chat",
    "strip_end",
]

_END = frozenset({"message-end"})


def strip_end(frame: FrameView) -> Drop | None:
    """``message-end`` and the ``[DONE]`` after it dropped: a body that never says it is done (for the
    harness and the cassette tools)."""
    if frame.is_named(_END) or frame.payload.strip() == b"[DONE]":
        return DROP
    return None


WIRE = WireApi(
    api="cohere-chat",
    vendor=VENDOR,
    key=ApiKey(env=("COHERE_API_KEY", "CO_API_KEY")),
    build_request=build_request,
    decoder=CohereDecoder,
    errors=ERRORS,
    ending=Ending("message-end", strip_end),
    error_body=error_body,
    stream_error=stream_error,
    recordings={
        "text": "openllmetry__stream_command-r-08-2024",
        "tool": (
            "rubyllm__chat_function_calling_cohere_command_a_03_2025_can_use_tools_with_multi_turn_streaming_con"
            "_i0_command-a-03-2025"
        ),
        "parallel": "openllmetry__cohere_v2_chat_legacy_with_tool_calls_and_streaming_async_command-r",
        "thinking": (
            "rubyllm__chat_citations_with_cohere_command_a_plus_05_2026_streams_citations_command-a-plus-05-2026"
        ),
    },
)
stream_cohere_chat = WIRE.stream_fn
ADAPTER = Adapter.from_wire(
    WIRE,
    package=__name__,
    demo=(
        ("openllmetry__stream_command-r-08-2024", "text (Cohere, command-r-08-2024)", "Two lines about socks."),
        (
            "openllmetry__cohere_v2_chat_legacy_with_tool_calls_and_streaming_async_command-r",
            "a tool plan, then two tool calls (Cohere, command-r)",
            "What time and weather is it in Tokyo?",
        ),
    ),
)
