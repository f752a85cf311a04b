"""What only the Cohere tests need: the adapter as its tests drive it (:data:`COHERE`), Cohere's v2 stream
events as builders, and the bundled recordings by what they show."""

from __future__ import annotations

import json
from typing import Any

from cassettes import Cassette
from normalize import ModelCost
from streamfns.cohere import ADAPTER
from tests.adapters import AdapterUnderTest, Replayed

__all__ = [
    "COHERE",
    "PARALLEL",
    "REASONING",
    "THINKING_CITATIONS",
    "TOOL",
    "body",
    "content_delta",
    "content_end",
    "content_start",
    "event",
    "message_end",
    "message_start",
    "run_events",
    "tool_call_delta",
    "tool_call_end",
    "tool_call_start",
    "tool_plan",
]


def _recorded_model(cassette: Cassette) -> dict[str, Any]:
    """The model a recording answered (from its name's tail), a reasoning one so thinking is read."""
    return {"id": cassette.model or "command-a-03-2025", "reasoning": True}


#: The Cohere v2 chat adapter on a catalog-like model (Command A's rates, so costs are checkable).
COHERE = AdapterUnderTest(
    ADAPTER,
    {
        "id": "command-a-03-2025",
        "provider": "cohere",
        "base_url": "https://api.cohere.com",
        "max_tokens": 8000,
        "cost": ModelCost(input=2.5, output=10.0, cache_read=2.5, cache_write=0.0),
    },
    replay_fields=_recorded_model,
)

TOOL = (
    "rubyllm__chat_function_calling_cohere_command_a_03_2025_can_use_tools_with_multi_turn_streaming_con"
    "_i0_command-a-03-2025"
)
PARALLEL = "openllmetry__cohere_v2_chat_legacy_with_tool_calls_and_streaming_async_command-r"
THINKING_CITATIONS = (
    "rubyllm__chat_citations_with_cohere_command_a_plus_05_2026_streams_citations_command-a-plus-05-2026"
)
REASONING = (
    "rubyllm__chat_with_extended_thinking_cohere_command_a_reasoning_08_2025_streams_thinking_content_wh"
    "_command-a-reasoning-08-2025"
)


def event(data: dict[str, Any] | str, name: str | None = None) -> bytes:
    """One server-sent event as Cohere frames it: ``event: <type>`` then the JSON ``data:`` (a string
    verbatim, without an ``event:`` line unless named)."""
    if isinstance(data, str):
        head = f"event: {name}\n" if name else ""
        return f"{head}data: {data}\n\n".encode()
    kind = name or str(data.get("type", "message"))
    return f"event: {kind}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def message_start(response_id: str = "resp-1") -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": [], "citations": []}
    return {"id": response_id, "type": "message-start", "delta": {"message": message}}


def content_start(index: int, kind: str = "text") -> dict[str, Any]:
    return {"type": "content-start", "index": index, "delta": {"message": {"content": {"type": kind, kind: ""}}}}


def content_delta(index: int, piece: str, kind: str = "text") -> dict[str, Any]:
    return {"type": "content-delta", "index": index, "delta": {"message": {"content": {kind: piece}}}}


def content_end(index: int) -> dict[str, Any]:
    return {"type": "content-end", "index": index}


def tool_plan(piece: str) -> dict[str, Any]:
    return {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": piece}}}


def tool_call_start(index: int, call_id: str, name: str, arguments: str = "") -> dict[str, Any]:
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    return {"type": "tool-call-start", "index": index, "delta": {"message": {"tool_calls": call}}}


def tool_call_delta(index: int, fragment: str) -> dict[str, Any]:
    call = {"function": {"arguments": fragment}}
    return {"type": "tool-call-delta", "index": index, "delta": {"message": {"tool_calls": call}}}


def tool_call_end(index: int) -> dict[str, Any]:
    return {"type": "tool-call-end", "index": index}


def message_end(
    finish: str | None = "COMPLETE",
    *,
    tokens: dict[str, Any] | None = None,
    cached: Any = None,
    billed: dict[str, Any] | None = None,
    error: str | None = None,
) -> dict[str, Any]:
    usage: dict[str, Any] = {"billed_units": billed or {"input_tokens": 5, "output_tokens": 7}}
    usage["tokens"] = tokens if tokens is not None else {"input_tokens": 50, "output_tokens": 7}
    if cached is not None:
        usage["cached_tokens"] = cached
    delta: dict[str, Any] = {"usage": usage}
    if finish is not None:
        delta["finish_reason"] = finish
    if error is not None:
        delta["error"] = error
    return {"type": "message-end", "delta": delta}


def body(*events: dict[str, Any] | str, done: bool = True) -> bytes:
    """The events framed as Cohere sends them, then ``data: [DONE]`` (unless ``done`` is false)."""
    out = b"".join(event(item) for item in events)
    return out + (b"data: [DONE]\n\n" if done else b"")


async def run_events(*events: dict[str, Any] | str, done: bool = True, **kwargs: Any) -> Replayed:
    """Stream the events through the adapter, each in its own network read (no retries)."""
    reads = [event(item) for item in events] + ([b"data: [DONE]\n\n"] if done else [])
    return await COHERE.run_reads(reads, **kwargs)
