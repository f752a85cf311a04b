"""The same Cohere v2 chat bytes through three stacks, in one run:

(a) httpx-sse framing + ``json.loads`` — merely parsing, the naive way;
(b) ``stream_cohere_chat`` — our full normalization (framing, JSON, decoding, builder, events);
(c) the cohere SDK's ``AsyncClientV2.chat_stream()`` — its parse of every event into its typed models,
    and the text, arguments and usage folded from them as its users fold them.

Budgets (as for the other SSE adapters): b/a ≥ 2 on text and ≥ 1.8 on tool arguments, b/c ≥ 10, and
for (b) 16k tool-argument fragments at most 1.5× the cost of 16k text deltas; a reasoning (``thinking``
content) stream is measured too (no budget). Events carry the fields Cohere sends (see the bundled
recordings: ``event: <type>`` lines, the ``delta.message`` nesting). Bodies are served by an in-process
transport in 16 KiB reads, the same bytes for every stack; times are CPU times, medians of paired
interleaved rounds judged by ``bench._util.RULE``.
"""

from __future__ import annotations

import json
from typing import Any

from bench._util import argument_fragments
from bench._wire import compare, judge_cost, normalize_body, parse_naively, served
from normalize import Model
from streamfns.cohere import stream_cohere_chat

__all__ = ["main", "run", "text_body", "thinking_body", "tool_body"]

_MODEL = Model(id="command-bench", api="cohere-chat", provider="cohere", base_url="http://bench.invalid")
_WORDS = ("The ", "stream ", "of ", "tokens ", "arrives ", "quickly, ", "naïve ", "日本 ")


def _event(data: dict[str, Any]) -> str:
    return f"event: {data['type']}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def _frame(parts: list[str], finish: str) -> bytes:
    message: dict[str, Any] = {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": [], "citations": []}
    head = _event(
        {"id": "e9d52da4-f5d2-41bb-969e-ae04d249157f", "type": "message-start", "delta": {"message": message}}
    )
    usage = {
        "billed_units": {"input_tokens": 12, "output_tokens": len(parts)},
        "tokens": {"input_tokens": 212, "output_tokens": len(parts)},
        "cached_tokens": 208,
    }
    tail = _event({"type": "message-end", "delta": {"finish_reason": finish, "usage": usage}}) + "data: [DONE]\n\n"
    return (head + "".join(parts) + tail).encode()


def _content(index: int, kind: str, pieces: list[str]) -> list[str]:
    start = {"type": "content-start", "index": index, "delta": {"message": {"content": {"type": kind, kind: ""}}}}
    deltas = [
        {"type": "content-delta", "index": index, "delta": {"message": {"content": {kind: piece}}}} for piece in pieces
    ]
    return [_event(start), *map(_event, deltas), _event({"type": "content-end", "index": index})]


def text_body(deltas: int) -> bytes:
    """A text stream of ``deltas`` content deltas."""
    return _frame(_content(0, "text", [_WORDS[i % len(_WORDS)] for i in range(deltas)]), "COMPLETE")


def thinking_body(deltas: int) -> bytes:
    """``deltas`` thinking deltas (a reasoning model's ``thinking`` content), then a one-delta text block."""
    words = ("Let ", "me ", "think ", "about ", "the ", "stream; ", "naïve ", "日本 ")
    parts = _content(0, "thinking", [words[i % len(words)] for i in range(deltas)]) + _content(1, "text", ["Done."])
    return _frame(parts, "COMPLETE")


def tool_body(deltas: int) -> bytes:
    """A short tool plan, then one tool call whose JSON arguments arrive in ``deltas`` fragments (escapes
    included)."""
    plan = [_event({"type": "tool-plan-delta", "delta": {"message": {"tool_plan": word}}}) for word in _WORDS]
    call = {"id": "apply_edits_bench", "type": "function", "function": {"name": "apply_edits", "arguments": ""}}
    start = _event({"type": "tool-call-start", "index": 0, "delta": {"message": {"tool_calls": call}}})
    fragments = [
        _event(
            {
                "type": "tool-call-delta",
                "index": 0,
                "delta": {"message": {"tool_calls": {"function": {"arguments": f}}}},
            }
        )
        for f in argument_fragments(deltas)
    ]
    end = _event({"type": "tool-call-end", "index": 0})
    return _frame([*plan, start, *fragments, end], "TOOL_CALL")


async def _ours(body: bytes) -> int:
    return await normalize_body(stream_cohere_chat, _MODEL, body)


async def _naive(body: bytes) -> int:
    return await parse_naively(body, "http://bench.invalid/v2/chat")


async def _sdk(body: bytes) -> int:
    import cohere

    text: list[str] = []
    arguments: list[str] = []
    async with served(body) as http:
        client = cohere.AsyncClientV2(api_key="bench", base_url="http://bench.invalid", httpx_client=http)
        async for event in client.chat_stream(
            model="command-bench", messages=[cohere.UserChatMessageV2(content="bench")]
        ):
            if event.type == "content-delta":
                content: Any = event.delta.message.content  # pyright: ignore[reportOptionalMemberAccess]
                text.append(content.text or content.thinking or "")
            elif event.type == "tool-call-delta":
                call: Any = event.delta.message.tool_calls  # pyright: ignore[reportOptionalMemberAccess]
                arguments.append(call.function.arguments or "")
    if arguments:
        json.loads("".join(arguments))  # the SDK leaves the arguments a string: its users parse them once
    return 0


def run() -> list[str]:
    """Measure and return report lines."""
    lines: list[str] = []
    stacks = {"httpx-sse + json.loads": _naive, "stream_cohere_chat": _ours}
    sdk = ("cohere SDK chat_stream()", _sdk)
    for label, body, floor in (
        ("text 40k deltas", text_body(40_000), 2.0),
        ("tool args 16k fragments", tool_body(16_000), 1.8),
    ):
        lines += compare(label, body, body.count(b"\n\n"), stacks, sdk, floor_a=floor, floor_c=10.0).lines()
    body = thinking_body(16_000)
    lines += compare("thinking 16k deltas", body, body.count(b"\n\n"), stacks, None, floor_a=None, floor_c=None).lines()
    label = "stream_cohere_chat tool/text cost at 16k deltas"
    lines.append(judge_cost(label, _ours, tool_body(16_000), text_body(16_000), 1.5))
    return lines


def main() -> None:
    """Print the Cohere report."""
    for line in run():
        print(line, flush=True)


if __name__ == "__main__":
    main()
