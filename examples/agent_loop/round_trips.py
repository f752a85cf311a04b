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
        public_base_url, model.base_url = model.base_url, server.base_url
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
