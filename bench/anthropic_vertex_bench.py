"""Claude on Vertex AI: the Messages api's own server-sent events through three stacks, in one run:

(a) httpx-sse + ``json.loads`` — merely parsing;
(b) ``stream_anthropic_vertex`` — our full normalization (the Anthropic decoder behind Vertex's own
    error typing);
(c) the anthropic SDK's ``AsyncAnthropicVertex`` ``messages.stream()`` accumulator.

The bodies are the Anthropic suite's (Vertex streams the same events); budgets as there: b/a ≥ 2 on
text, ≥ 1.8 on tool arguments, b/c ≥ 20, tool/text ≤ 1.5.
"""

from __future__ import annotations

from bench._wire import compare, judge_cost, normalize_body, parse_naively, sdk_http_client
from bench.anthropic_bench import text_body, thinking_body, tool_body
from normalize import Model
from streamfns.anthropic_vertex import stream_anthropic_vertex

__all__ = ["main", "run", "text_body", "thinking_body", "tool_body"]

_BASE = "http://bench.invalid/v1/projects/bench-project/locations/us-east5"
_MODEL = Model(id="claude-bench@20250101", api="anthropic-vertex", provider="google-vertex", base_url=_BASE)
_URL = f"{_BASE}/publishers/anthropic/models/claude-bench@20250101:streamRawPredict"


async def _ours(body: bytes) -> int:
    return await normalize_body(stream_anthropic_vertex, _MODEL, body)


async def _naive(body: bytes) -> int:
    return await parse_naively(body, _URL)


async def _sdk(body: bytes) -> int:
    from anthropic.lib.vertex import AsyncAnthropicVertex

    async with sdk_http_client(body) as http:
        client = AsyncAnthropicVertex(
            region="us-east5",
            project_id="bench-project",
            access_token="bench",
            base_url=_BASE.removesuffix("/projects/bench-project/locations/us-east5"),
            http_client=http,
            max_retries=0,
        )
        async with client.messages.stream(
            model="claude-bench@20250101", max_tokens=64, messages=[{"role": "user", "content": "bench"}]
        ) as stream:
            async for _ in stream:
                pass
            await stream.get_final_message()
    return 0


def run() -> list[str]:
    """Measure and return report lines."""
    lines: list[str] = []
    stacks = {"httpx-sse + json.loads": _naive, "stream_anthropic_vertex": _ours}
    sdk = ("anthropic SDK AsyncAnthropicVertex stream()", _sdk)
    for label, body, floor in (
        ("text 40k deltas", text_body(40_000), 2.0),
        ("tool args 16k deltas", tool_body(16_000), 1.8),
    ):
        lines += compare(label, body, body.count(b"\n\n"), stacks, sdk, floor_a=floor, floor_c=20.0).lines()
    body = thinking_body(16_000)
    lines += compare("thinking 16k deltas", body, body.count(b"\n\n"), stacks, None, floor_a=None, floor_c=None).lines()
    lines.append(
        judge_cost(
            "stream_anthropic_vertex tool/text cost at 16k deltas", _ours, tool_body(16_000), text_body(16_000), 1.5
        )
    )
    return lines


def main() -> None:
    """Print the Claude on Vertex report."""
    for line in run():
        print(line, flush=True)


if __name__ == "__main__":
    main()
