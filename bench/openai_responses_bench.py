"""The same OpenAI Responses bytes through three stacks, in one run:

(a) httpx-sse framing + ``json.loads`` — merely parsing, the naive way;
(b) ``stream_openai_responses`` — our full normalization (framing, JSON, decoding, builder, events);
(c) the openai SDK's ``responses.stream()`` accumulation (its ``AsyncResponseStream``).

Budgets (issue 24): b/a ≥ 2 on text and ≥ 1.8 on tool arguments, b/c ≥ 20, and for (b) 16k argument
fragments at most 1.5× the cost of 16k text deltas; a reasoning-summary stream is measured too (no
budget). The synthetic events carry the fields OpenAI sends
(``sequence_number``, ``item_id``, ``output_index``, ``content_index``, ``logprobs``), and the items
end with their authoritative ``output_item.done`` payloads, as real streams do. Bodies are served by
an in-process transport in 16 KiB reads, the same bytes for every stack; times are the process's CPU
time, medians of paired interleaved rounds judged by ``bench._util.RULE``.
"""

from __future__ import annotations

import json
from typing import Any

from bench._util import argument_fragments
from bench._wire import compare, judge_cost, normalize_body, parse_naively, sdk_http_client
from normalize import Model
from streamfns.openai_responses import stream_openai_responses

__all__ = ["main", "run", "text_body", "thinking_body", "tool_body"]

_MODEL = Model(id="gpt-bench", api="openai-responses", provider="openai", base_url="http://bench.invalid/v1")
_RESPONSE_ID = "resp_0bench00000000000000000000000000000000000000000000"
_MESSAGE_ID = "msg_0bench00000000000000000000000000000000000000000000"
_CALL_ID = "fc_0bench000000000000000000000000000000000000000000000"
_REASONING_ID = "rs_0bench000000000000000000000000000000000000000000000"


class _Frames:
    """Builds a Responses body, numbering events as OpenAI does."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def add(self, kind: str, **fields: Any) -> None:
        value = {"type": kind, "sequence_number": len(self.parts), **fields}
        self.parts.append(f"event: {kind}\ndata: {json.dumps(value, separators=(',', ':'))}\n\n")

    def response(self, kind: str, status: str, output: list[dict[str, Any]]) -> None:
        response: dict[str, Any] = {
            "id": _RESPONSE_ID,
            "object": "response",
            "created_at": 1760000000,
            "status": status,
            "model": "gpt-bench",
            "output": output,
            "parallel_tool_calls": True,
            "store": False,
            "service_tier": "default",
            "usage": None,
        }
        if status == "completed":
            response["usage"] = {
                "input_tokens": 25,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 900,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 925,
            }
        self.add(kind, response=response)

    def body(self) -> bytes:
        return "".join(self.parts).encode()


def text_body(deltas: int) -> bytes:
    """One message of ``deltas`` text deltas."""
    words = ("The ", "stream ", "of ", "tokens ", "arrives ", "quickly, ", "naïve ", "日本 ")
    text = "".join(words[i % len(words)] for i in range(deltas))
    item: dict[str, Any] = {
        "id": _MESSAGE_ID,
        "type": "message",
        "status": "in_progress",
        "content": [],
        "role": "assistant",
    }
    part: dict[str, Any] = {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
    final: dict[str, Any] = {**item, "status": "completed", "content": [part]}
    frames = _Frames()
    frames.response("response.created", "in_progress", [])
    frames.response("response.in_progress", "in_progress", [])
    frames.add("response.output_item.added", output_index=0, item=item)
    where: dict[str, Any] = {"item_id": _MESSAGE_ID, "output_index": 0, "content_index": 0}
    frames.add("response.content_part.added", **where, part={**part, "text": ""})
    for i in range(deltas):
        frames.add("response.output_text.delta", **where, delta=words[i % len(words)], logprobs=[])
    frames.add("response.output_text.done", **where, text=text, logprobs=[])
    frames.add("response.content_part.done", **where, part=part)
    frames.add("response.output_item.done", output_index=0, item=final)
    frames.response("response.completed", "completed", [final])
    return frames.body()


def thinking_body(deltas: int) -> bytes:
    """One reasoning item whose summary arrives in ``deltas`` ``reasoning_summary_text`` deltas."""
    words = ("Let ", "me ", "think ", "about ", "the ", "stream; ", "naïve ", "日本 ")
    text = "".join(words[i % len(words)] for i in range(deltas))
    item: dict[str, Any] = {"id": _REASONING_ID, "type": "reasoning", "summary": []}
    part: dict[str, Any] = {"type": "summary_text", "text": text}
    final: dict[str, Any] = {**item, "summary": [part], "encrypted_content": "gAAAAABbench" + "x" * 300}
    frames = _Frames()
    frames.response("response.created", "in_progress", [])
    frames.response("response.in_progress", "in_progress", [])
    frames.add("response.output_item.added", output_index=0, item=item)
    where: dict[str, Any] = {"item_id": _REASONING_ID, "output_index": 0, "summary_index": 0}
    frames.add("response.reasoning_summary_part.added", **where, part={**part, "text": ""})
    for i in range(deltas):
        frames.add("response.reasoning_summary_text.delta", **where, delta=words[i % len(words)])
    frames.add("response.reasoning_summary_text.done", **where, text=text)
    frames.add("response.reasoning_summary_part.done", **where, part=part)
    frames.add("response.output_item.done", output_index=0, item=final)
    frames.response("response.completed", "completed", [final])
    return frames.body()


def tool_body(deltas: int) -> bytes:
    """One function call whose JSON arguments arrive in ``deltas`` fragments (escapes included)."""
    fragments = argument_fragments(deltas)
    raw = "".join(fragments)
    item = {
        "id": _CALL_ID,
        "type": "function_call",
        "status": "in_progress",
        "arguments": "",
        "call_id": "call_bench",
        "name": "apply_edits",
    }
    final = {**item, "status": "completed", "arguments": raw}
    frames = _Frames()
    frames.response("response.created", "in_progress", [])
    frames.response("response.in_progress", "in_progress", [])
    frames.add("response.output_item.added", output_index=0, item=item)
    for fragment in fragments:
        frames.add("response.function_call_arguments.delta", item_id=_CALL_ID, output_index=0, delta=fragment)
    frames.add("response.function_call_arguments.done", item_id=_CALL_ID, output_index=0, arguments=raw)
    frames.add("response.output_item.done", output_index=0, item=final)
    frames.response("response.completed", "completed", [final])
    return frames.body()


async def _ours(body: bytes) -> int:
    return await normalize_body(stream_openai_responses, _MODEL, body)


async def _ours_with_signal(body: bytes) -> int:
    # As a caller with an abort signal runs it: the abort machinery must cost nothing per read.
    return await normalize_body(stream_openai_responses, _MODEL, body, with_signal=True)


async def _naive(body: bytes) -> int:
    return await parse_naively(body, "http://bench.invalid/v1/responses")


async def _sdk(body: bytes) -> int:
    import openai

    async with sdk_http_client(body) as http:
        client = openai.AsyncOpenAI(
            api_key="bench", http_client=http, base_url="http://bench.invalid/v1", max_retries=0
        )
        async with client.responses.stream(model="gpt-bench", input="bench") as stream:
            async for _ in stream:
                pass
            await stream.get_final_response()
    return 0


def run() -> list[str]:
    """Measure and return report lines."""
    lines: list[str] = []
    stacks = {
        "httpx-sse + json.loads": _naive,
        "stream_openai_responses": _ours,
        "… with an abort signal": _ours_with_signal,
    }
    sdk = ("openai SDK responses.stream()", _sdk)
    for label, body, floor in (
        ("text 40k deltas", text_body(40_000), 2.0),
        ("tool args 16k deltas", tool_body(16_000), 1.8),
    ):
        lines += compare(label, body, body.count(b"\n\n"), stacks, sdk, floor_a=floor, floor_c=20.0).lines()
    body = thinking_body(16_000)
    lines += compare("thinking 16k deltas", body, body.count(b"\n\n"), stacks, None, floor_a=None, floor_c=None).lines()
    label = "stream_openai_responses tool/text cost at 16k deltas"
    lines.append(judge_cost(label, _ours, tool_body(16_000), text_body(16_000), 1.5))
    return lines


def main() -> None:
    """Print the OpenAI Responses report."""
    for line in run():
        print(line, flush=True)


if __name__ == "__main__":
    main()
