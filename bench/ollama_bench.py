"""The same Ollama ``/api/chat`` bytes through four stacks, in one run:

(a) httpx ``aiter_lines`` + ``json.loads`` — merely parsing, the naive way;
(b) ``stream_ollama_chat`` — our full normalization (framing, JSON, decoding, builder, events);
(m) the same stack with a minimal decoder (each line parsed and handed to the builder, no checks):
    what no decoder on the kit can undercut, shown without a budget (m/a, m/c) and, on text, the
    floor ours is judged against (b/m);
(c) the ``ollama`` client's streaming ``chat`` (its pydantic ``ChatResponse`` per line).

Budgets (restated in issue 34, since those of issue 24 — b/a ≥ 2 on text and ≥ 1.8 on tool calls,
b/c ≥ 3 on tool calls — asked for more than any decoder on the kit can reach, as the minimal decoder
shows): on text b/a ≥ 1.25, b/c ≥ 3 (the client is light) and ours at least 0.9× the minimal
decoder's speed (b/m = time(m)/time(b) ≥ 0.9); on tool calls b/a ≥ 0.45 and b/c ≥ 1; and for (b)
the cost per event of a body of 16k one-call lines at most 1.5× that of 16k text lines. Per
event, not per line: Ollama sends each call whole, so one line makes three events (start, the
arguments as one delta, end) and a block with an id, where a text line makes one delta — the SSE
benches compare one fragment with one text delta, one event each, which is the same measure. A
stream of ``thinking`` lines is measured too (no budget). Every line has the fields Ollama sends
(``model``, ``created_at``, ``message``, ``done``). Bodies are served by an in-process transport in
16 KiB reads, the same bytes for every stack; times are CPU times, medians of paired interleaved
rounds judged by ``bench._util.RULE``.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import httpx
import jiter

from bench._wire import compare, judge_cost, normalize_body, transport
from normalize import MessageBuilder, Model
from streamfns.kit import Decoder
from streamfns.ollama import STOPS, WIRE, stream_ollama_chat

__all__ = [
    "TEXT_FLOOR_A",
    "TEXT_FLOOR_C",
    "TEXT_FLOOR_M",
    "TOOL_FLOOR_A",
    "TOOL_FLOOR_C",
    "TOOL_TEXT_COST",
    "main",
    "run",
    "text_body",
    "thinking_body",
    "tool_body",
]

# The budgets (issue 34).
#: Text lines: ours over the bare parse (b/a).
TEXT_FLOOR_A = 1.25
#: Text lines: ours over the ollama client (b/c).
TEXT_FLOOR_C = 3.0
#: Text lines: ours at least this fraction of the minimal decoder's speed (b/m = time(m)/time(b)).
TEXT_FLOOR_M = 0.9
#: Tool lines: ours over the bare parse (b/a).
TOOL_FLOOR_A = 0.45
#: Tool lines: ours over the ollama client (b/c).
TOOL_FLOOR_C = 1.0
#: Ours: the cost per event of tool lines over that of text lines, at most.
TOOL_TEXT_COST = 1.5

_MODEL = Model(id="llama-bench", api="ollama-chat", provider="ollama", base_url="http://bench.invalid")
_URL = "http://bench.invalid/api/chat"


def _line(message: dict[str, Any], n: int, **extra: Any) -> bytes:
    stamp = f"2025-06-09T17:59:{n // 1_000_000:02d}.{n % 1_000_000:06d}Z"
    value = {"model": "llama-bench", "created_at": stamp, "message": {"role": "assistant", **message}, **extra}
    return json.dumps(value, separators=(",", ":")).encode() + b"\n"


def _done(n: int) -> bytes:
    counts = {"total_duration": 1, "load_duration": 1, "prompt_eval_count": 10, "eval_count": n}
    return _line({"content": ""}, n, done_reason="stop", done=True, **counts)


def text_body(lines: int) -> bytes:
    """``lines`` content lines (words with Go's ``\\u003c`` escapes now and then), then the ``done`` line."""
    words = ("Hello", " there", ", \u003cfriend\u003e", " and", " caf\u00e9", "\n")
    body = [_line({"content": words[n % len(words)]}, n, done=False) for n in range(lines)]
    return b"".join(body) + _done(lines)


def thinking_body(lines: int) -> bytes:
    """``lines`` lines of ``thinking`` (as reasoning models stream it), one content line, the ``done`` line."""
    words = ("Let", " me", " think", " about", " caf\u00e9", "\n")
    body = [_line({"content": "", "thinking": words[n % len(words)]}, n, done=False) for n in range(lines)]
    return b"".join(body) + _line({"content": "Done."}, lines, done=False) + _done(lines + 1)


def tool_body(lines: int) -> bytes:
    """``lines`` lines of one whole tool call each (as older servers and the done-line buffering send them)."""
    body = [
        _line(
            {
                "content": "",
                "tool_calls": [{"function": {"index": n, "name": "calc", "arguments": {"x": n, "q": "a\tb"}}}],
            },
            n,
            done=False,
        )
        for n in range(lines)
    ]
    return b"".join(body) + _done(lines)


def _transport(body: bytes) -> httpx.MockTransport:
    return transport(body, "application/x-ndjson")


async def _naive(body: bytes) -> int:
    count = 0
    async with httpx.AsyncClient(transport=_transport(body)) as client, client.stream("POST", _URL) as response:
        async for line in response.aiter_lines():
            if line:
                json.loads(line)
                count += 1
    return count


async def _ours(body: bytes) -> int:
    return await normalize_body(stream_ollama_chat, _MODEL, body, media_type="application/x-ndjson")


class _MinimalDecoder(Decoder[bytes]):
    """Each line parsed and handed to the builder as it comes (content as a text delta, a call as a
    whole call, the done line as the stop), with none of the real decoder's checks: error lines,
    thinking, types, counts, the order of blocks, call ids derived from the response. No decoder on
    the kit can undercut it; the strictness of a whole call's arguments is the builder's, so it stays."""

    __slots__ = ("_builder", "_calls")

    def __init__(self, builder: MessageBuilder, model: Model) -> None:
        self._builder = builder
        self._calls = 0

    def on_event(self, frame: bytes, /) -> None:
        line = jiter.from_json(frame)
        message = line["message"]
        content = message["content"]
        if content:
            self._builder.text_delta(0, content)
        for call in message.get("tool_calls", ()):
            function, key = call["function"], ("call", self._calls)
            self._builder.tool_call(key, f"call_{self._calls}", function["name"], function["arguments"])
            self._calls += 1
        if line["done"]:
            STOPS.stop(self._builder, line["done_reason"])
            self._builder.finish()


_MINIMAL = dataclasses.replace(WIRE, decoder=_MinimalDecoder).stream_fn


async def _minimal(body: bytes) -> int:
    return await normalize_body(_MINIMAL, _MODEL, body, media_type="application/x-ndjson")


async def _client(body: bytes) -> int:
    import ollama

    client = ollama.AsyncClient(host="http://bench.invalid", transport=_transport(body))
    count = 0
    parts = await client.chat(  # pyright: ignore[reportUnknownMemberType] - its tools parameter takes any callable
        model="llama-bench", messages=[{"role": "user", "content": "bench"}], stream=True
    )
    async for _ in parts:
        count += 1
    return count


def run() -> list[str]:
    """Measure and return report lines."""
    lines: list[str] = []
    stacks = {"httpx aiter_lines + json.loads": _naive, "stream_ollama_chat": _ours}
    client = ("ollama client chat(stream=True)", _client)
    minimal = ("a minimal decoder on the kit", _minimal)
    for label, body, floor_a, floor_c, floor_m in (
        ("text 40k lines", text_body(40_000), TEXT_FLOOR_A, TEXT_FLOOR_C, TEXT_FLOOR_M),
        ("tool calls 16k lines", tool_body(16_000), TOOL_FLOOR_A, TOOL_FLOOR_C, None),
    ):
        events = body.count(b"\n")
        comparison = compare(
            label, body, events, stacks, client, floor_a=floor_a, floor_c=floor_c, minimal=minimal, floor_m=floor_m
        )
        lines += comparison.lines()
    body = thinking_body(16_000)
    lines += compare("thinking 16k lines", body, body.count(b"\n"), stacks, None, floor_a=None, floor_c=None).lines()
    label = "stream_ollama_chat tool/text cost per event at 16k lines"
    lines.append(judge_cost(label, _ours, tool_body(16_000), text_body(16_000), TOOL_TEXT_COST, per_event=True))
    return lines


def main() -> None:
    """Print the Ollama report."""
    for line in run():
        print(line, flush=True)


if __name__ == "__main__":
    main()
