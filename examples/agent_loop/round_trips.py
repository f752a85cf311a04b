"""Multi-turn recordings of the demo agent, one per wire api: a tool round trip.

The demo agent (``DEMO_SYSTEM_PROMPT``, ``DEMO_TOOLS``) is asked :data:`PROMPT`; the first reply
calls the calculator, the agent runs it and sends the result, the second reply answers. Each
recording is made by running the real agent loop, through the real adapter and a real socket,
against a loopback server that plays the vendor's scripted event bodies (:data:`ROUND_TRIPS`); the
requests the adapter actually sent are stored with those bodies as a cassette. Replaying it with
``match="request"`` therefore checks that the loop sends exactly the recorded follow-up request.

    python -m examples.agent_loop.round_trips            # rewrite every bundled recording

Adding a wire api: one :class:`RoundTrip` entry with its vendor's two bodies, then run the line above.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from cassettes import Cassette, Chunk, End, Interaction, RecordedResponse, capture_request, save
from conformance.loopback import LoopbackServer, ReceivedRequest, Scripted
from examples.agent_loop.demo_tools import DEMO_SYSTEM_PROMPT, DEMO_TOOLS
from examples.agent_loop.loop import Agent
from normalize import StreamOptions
from streamfns import get_model

__all__ = ["PROMPT", "RECORDINGS", "ROUND_TRIPS", "RoundTrip", "cassette_path", "record", "record_all"]

PROMPT = "What is 1234 * 5678?"
RECORDINGS = Path(__file__).resolve().parent / "cassettes"
_STEP_MS = 5  # synthetic time between events, as in the bundled library


@dataclass(frozen=True, slots=True)
class RoundTrip:
    """A catalog model of the api and the two scripted reply bodies (one chunk per event)."""

    provider: str
    model_id: str
    replies: tuple[tuple[bytes, ...], tuple[bytes, ...]]


def _anthropic(event: str, payload: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps({'type': event, **payload}, separators=(',', ':'))}\n\n".encode()


def _anthropic_reply(
    message_id: str, input_tokens: int, blocks: list[list[bytes]], stop: str, output: int
) -> Iterator[bytes]:
    usage = {"input_tokens": input_tokens, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    message: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5-20251001",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**usage, "output_tokens": 1},
    }
    yield _anthropic("message_start", {"message": message})
    yield _anthropic("ping", {})
    for block in blocks:
        yield from block
    delta = {"stop_reason": stop, "stop_sequence": None}
    yield _anthropic("message_delta", {"delta": delta, "usage": {**usage, "output_tokens": output}})
    yield _anthropic("message_stop", {})


def _anthropic_text(index: int, *pieces: str) -> list[bytes]:
    start = _anthropic("content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}})
    deltas = [
        _anthropic("content_block_delta", {"index": index, "delta": {"type": "text_delta", "text": piece}})
        for piece in pieces
    ]
    return [start, *deltas, _anthropic("content_block_stop", {"index": index})]


def _anthropic_tool(index: int, call_id: str, name: str, *fragments: str) -> list[bytes]:
    block: dict[str, Any] = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
    start = _anthropic("content_block_start", {"index": index, "content_block": block})
    deltas = [
        _anthropic("content_block_delta", {"index": index, "delta": {"type": "input_json_delta", "partial_json": part}})
        for part in fragments
    ]
    return [start, *deltas, _anthropic("content_block_stop", {"index": index})]


def _json(payload: dict[str, Any]) -> str:
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)


# -- OpenAI Chat Completions: data-only chunks, a finish_reason, a usage chunk, [DONE] -------------


def _chat(delta: dict[str, Any] | None, finish: str | None = None, *, usage: dict[str, Any] | None = None) -> bytes:
    chunk: dict[str, Any] = {
        "id": "chatcmpl-RoundTrip",
        "object": "chat.completion.chunk",
        "created": 1764500000,
        "model": "gpt-4o-mini-2024-07-18",
        "system_fingerprint": "fp_roundtrip",
        "choices": [] if delta is None else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    if usage is not None:
        chunk["usage"] = usage
    return f"data: {_json(chunk)}\n\n".encode()


def _chat_usage(prompt: int, completion: int) -> bytes:
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }
    return _chat(None, usage=usage)


def _chat_reply(call: bool) -> tuple[bytes, ...]:
    first = _chat({"role": "assistant", "content": "", "refusal": None})
    if not call:
        pieces = [_chat({"content": "1234 × 5678 = "}), _chat({"content": "7,006,652."})]
        return (first, *pieces, _chat({}, "stop"), _chat_usage(689, 17), b"data: [DONE]\n\n")
    start: dict[str, Any] = {"index": 0, "id": "call_RoundTripCalc0001", "type": "function"}
    start["function"] = {"name": "calculator", "arguments": ""}
    return (
        first,
        _chat({"content": "I'll work that out"}),
        _chat({"content": " with the calculator."}),
        _chat({"tool_calls": [start]}),
        _chat({"tool_calls": [{"index": 0, "function": {"arguments": '{"expression": '}}]}),
        _chat({"tool_calls": [{"index": 0, "function": {"arguments": '"1234 * 5678"}'}}]}),
        _chat({}, "tool_calls"),
        _chat_usage(612, 58),
        b"data: [DONE]\n\n",
    )


# -- OpenAI Responses: typed events by output_index, the final response with usage --------------------


def _responses(event: str, payload: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {_json({'type': event, **payload})}\n\n".encode()


def _responses_text_item(index: int, item_id: str, *pieces: str) -> tuple[list[bytes], dict[str, Any]]:
    text = "".join(pieces)
    done: dict[str, Any] = {"id": item_id, "type": "message", "status": "completed", "role": "assistant"}
    done["content"] = [{"type": "output_text", "annotations": [], "text": text}]
    part = {"item_id": item_id, "output_index": index, "content_index": 0}
    added: dict[str, Any] = {"id": item_id, "type": "message", "status": "in_progress", "content": []}
    added["role"] = "assistant"
    events = [
        _responses("response.output_item.added", {"output_index": index, "item": added}),
        _responses(
            "response.content_part.added", {**part, "part": {"type": "output_text", "annotations": [], "text": ""}}
        ),
        *(_responses("response.output_text.delta", {**part, "delta": piece}) for piece in pieces),
        _responses("response.output_text.done", {**part, "text": text}),
        _responses("response.content_part.done", {**part, "part": done["content"][0]}),
        _responses("response.output_item.done", {"output_index": index, "item": done}),
    ]
    return events, done


def _responses_reply(response_id: str, usage: tuple[int, int], call: bool) -> tuple[bytes, ...]:
    base = {"id": response_id, "object": "response", "created_at": 1764500000, "model": "gpt-5-mini-2025-08-07"}
    events = [_responses("response.created", {"response": {**base, "status": "in_progress", "output": []}})]
    if call:
        text_events, text_item = _responses_text_item(
            0, "msg_RoundTripText0001", "I'll work that out", " with the calculator."
        )
        arguments = '{"expression": "1234 * 5678"}'
        item = {"id": "fc_RoundTripCalc0001", "type": "function_call", "call_id": "call_RoundTripCalc0001"}
        item["name"] = "calculator"
        events += text_events
        events.append(
            _responses(
                "response.output_item.added",
                {"output_index": 1, "item": {**item, "status": "in_progress", "arguments": ""}},
            )
        )
        for piece in ('{"expression": ', '"1234 * 5678"}'):
            events.append(
                _responses(
                    "response.function_call_arguments.delta", {"item_id": item["id"], "output_index": 1, "delta": piece}
                )
            )
        events.append(
            _responses(
                "response.function_call_arguments.done",
                {"item_id": item["id"], "output_index": 1, "arguments": arguments},
            )
        )
        final_call = {**item, "status": "completed", "arguments": arguments}
        events.append(_responses("response.output_item.done", {"output_index": 1, "item": final_call}))
        output = [text_item, final_call]
    else:
        text_events, text_item = _responses_text_item(0, "msg_RoundTripText0002", "1234 × 5678 = ", "7,006,652.")
        events += text_events
        output = [text_item]
    tokens = {
        "input_tokens": usage[0],
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": usage[1],
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": sum(usage),
    }
    final = {**base, "status": "completed", "output": output, "usage": tokens}
    events.append(_responses("response.completed", {"response": final}))
    return tuple(events)


# -- Google Gemini: data-only chunks framed with CRLF; the finishReason is the end marker --------------


def _gemini(parts: list[dict[str, Any]], *, finish: str | None = None, usage: tuple[int, int] | None = None) -> bytes:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    chunk: dict[str, Any] = {"candidates": [candidate]}
    prompt, output = usage or (0, 0)
    chunk["usageMetadata"] = {"promptTokenCount": prompt, "totalTokenCount": prompt + output}
    if output:
        chunk["usageMetadata"]["candidatesTokenCount"] = output
    chunk |= {"modelVersion": "gemini-2.5-flash", "responseId": "RoundTripGemini"}
    return f"data: {_json(chunk)}\r\n\r\n".encode()


def _gemini_reply(call: bool) -> tuple[bytes, ...]:
    if call:
        return (
            _gemini([{"text": "I'll work that out"}], usage=(612, 0)),
            _gemini([{"text": " with the calculator."}], usage=(612, 0)),
            _gemini(
                [{"functionCall": {"name": "calculator", "args": {"expression": "1234 * 5678"}}}],
                finish="STOP",
                usage=(612, 58),
            ),
        )
    return (
        _gemini([{"text": "1234 × 5678 = "}], usage=(689, 0)),
        _gemini([{"text": "7,006,652."}], finish="STOP", usage=(689, 17)),
    )


ROUND_TRIPS: dict[str, RoundTrip] = {
    "anthropic-messages": RoundTrip(
        provider="anthropic",
        model_id="claude-haiku-4-5",
        replies=(
            tuple(
                _anthropic_reply(
                    "msg_01RoundTripCalculator01",
                    612,
                    [
                        _anthropic_text(0, "I'll work that out", " with the calculator."),
                        _anthropic_tool(
                            1, "toolu_01CalcRoundTrip00001", "calculator", "", '{"expression": ', '"1234 * 5678"}'
                        ),
                    ],
                    "tool_use",
                    58,
                )
            ),
            tuple(
                _anthropic_reply(
                    "msg_01RoundTripAnswer00002",
                    689,
                    [_anthropic_text(0, "1234 × 5678 = ", "7,006,652.")],
                    "end_turn",
                    17,
                )
            ),
        ),
    ),
    "openai-completions": RoundTrip(
        provider="openai", model_id="gpt-4o-mini", replies=(_chat_reply(call=True), _chat_reply(call=False))
    ),
    "openai-responses": RoundTrip(
        provider="openai",
        model_id="gpt-5-mini",
        replies=(
            _responses_reply("resp_RoundTrip0001", (612, 58), call=True),
            _responses_reply("resp_RoundTrip0002", (689, 17), call=False),
        ),
    ),
    "google-generative-ai": RoundTrip(
        provider="google", model_id="gemini-2.5-flash", replies=(_gemini_reply(call=True), _gemini_reply(call=False))
    ),
}


def cassette_path(api: str) -> Path:
    """Where the bundled recording of ``api`` lives."""
    return RECORDINGS / f"{api}.jsonl"


def _stored_request(received: ReceivedRequest, public_base_url: str) -> Any:
    # The request as it would have gone to the vendor: the public origin, the path the adapter used.
    url = httpx.URL(public_base_url).copy_with(raw_path=received.path.encode("ascii"))
    request = httpx.Request(received.method, url, headers=received.headers, content=received.body)
    return capture_request(request)


def _response(chunks: tuple[bytes, ...]) -> RecordedResponse:
    return RecordedResponse(
        status=200,
        headers=(("content-type", "text/event-stream"),),
        chunks=tuple(Chunk(data, t_ms=_STEP_MS * (i + 1)) for i, data in enumerate(chunks)),
        end=End("eof", _STEP_MS * (len(chunks) + 1)),
    )


async def record(api: str) -> Cassette:
    """Run the demo agent on :data:`PROMPT` against the scripted bodies of ``api``; the cassette."""
    trip = ROUND_TRIPS[api]
    replies = iter(trip.replies)

    def respond(_request: ReceivedRequest) -> Scripted:
        return Scripted(chunks=[(0.0, chunk) for chunk in next(replies, ())])

    async with LoopbackServer(respond) as server:
        model = get_model(trip.provider, trip.model_id)
        # The loopback server stands in for the vendor's origin; the base URL's own path (OpenAI's
        # and Gemini's "/v1…") stays, so the recorded requests carry the vendor's real paths.
        public_base_url = model.base_url
        model.base_url = server.base_url + httpx.URL(public_base_url).raw_path.decode("ascii").rstrip("/")
        options = StreamOptions(api_key="test-key", max_retries=0)
        agent = Agent(model, tools=DEMO_TOOLS, system_prompt=DEMO_SYSTEM_PROMPT, options=options)
        await agent.run(PROMPT)
        requests = list(server.requests)
    last = agent.messages[-1]
    if len(requests) != len(trip.replies) or getattr(last, "stop_reason", None) != "stop":
        raise RuntimeError(f"{api}: the round trip did not complete: {last}")
    interactions = tuple(
        Interaction(_stored_request(request, public_base_url), _response(reply))
        for request, reply in zip(requests, trip.replies, strict=True)
    )
    return Cassette(
        interactions=interactions,
        api=api,
        model=model.id,
        source={"provenance": "scripted vendor bodies, requests recorded from the agent loop"},
        extra={"name": f"agent_round_trip_{api}", "prompt": PROMPT, "timing": "synthetic"},
    )


async def record_all() -> list[Path]:
    """Rewrite every bundled recording; the files written."""
    written: list[Path] = []
    for api in ROUND_TRIPS:
        save(await record(api), cassette_path(api))
        written.append(cassette_path(api))
    return written


if __name__ == "__main__":
    for path in asyncio.run(record_all()):
        print(f"wrote {path}")
