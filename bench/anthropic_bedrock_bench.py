"""Claude on Bedrock: the Messages events, each base64-encoded inside an AWS event-stream ``chunk``
message (as ``invoke-with-response-stream`` sends them), through three stacks, in one run:

(a) botocore's ``EventStreamBuffer`` + ``json.loads`` of the chunk + base64 + ``json.loads`` of the
    event — merely framing and parsing;
(b) ``stream_anthropic_bedrock`` — our full normalization (the Anthropic decoder behind the unwrapping);
(c) the anthropic SDK's ``AsyncAnthropicBedrock`` ``messages.stream()`` accumulator.

The events are the Anthropic suite's bodies re-framed. Budgets: b/a ≥ 1.5 (the bare parse is botocore's
framing), b/c ≥ 10 (the anthropic SDK's accumulator: ConverseStream's restated ≥ 5 is against boto3's
parse, not this SDK), tool/text ≤ 1.5.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator

from bench import anthropic_bench
from bench._wire import READ, compare, judge_cost, normalize_body, parse_eventstream_naively
from normalize import Model
from normalize.wire import SSE, encode_message
from streamfns.anthropic_bedrock import stream_anthropic_bedrock

__all__ = ["main", "run", "text_body", "tool_body"]

_MODEL = Model(
    id="anthropic.claude-bench-v1:0",
    api="anthropic-bedrock",
    provider="amazon-bedrock-anthropic",
    base_url="http://bench.invalid",
)
_URL = "http://bench.invalid/model/anthropic.claude-bench-v1%3A0/invoke-with-response-stream"
_EVENTSTREAM = "application/vnd.amazon.eventstream"
_CHUNK = {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"}


def _reframed(sse_body: bytes) -> bytes:
    frames: list[bytes] = []
    for span in SSE.spans(sse_body):
        if span.payload is None or span.name == "ping":
            continue
        payload = json.dumps({"bytes": base64.b64encode(span.payload).decode()}).encode()
        frames.append(encode_message(_CHUNK, payload))
    return b"".join(frames)


def text_body(deltas: int) -> bytes:
    """The Anthropic suite's text body, as Bedrock frames it."""
    return _reframed(anthropic_bench.text_body(deltas))


def tool_body(deltas: int) -> bytes:
    """The Anthropic suite's tool-argument body, as Bedrock frames it."""
    return _reframed(anthropic_bench.tool_body(deltas))


def _unwrapped(payload: bytes) -> object:
    return json.loads(base64.b64decode(json.loads(payload)["bytes"]))


async def _bare(body: bytes) -> int:
    return await parse_eventstream_naively(body, _URL, _unwrapped)


async def _ours(body: bytes) -> int:
    return await normalize_body(stream_anthropic_bedrock, _MODEL, body, media_type=_EVENTSTREAM)


async def _sdk(body: bytes) -> int:
    import httpx2
    from anthropic.lib.bedrock import AsyncAnthropicBedrock

    reads = [body[i : i + READ] for i in range(0, len(body), READ)]

    async def content() -> AsyncIterator[bytes]:
        for read in reads:
            yield read

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": _EVENTSTREAM}, content=content())

    async with httpx2.AsyncClient(transport=httpx2.MockTransport(handler)) as http:
        client = AsyncAnthropicBedrock(
            aws_access_key="AKIA" + "BENCH" * 3 + "X",
            aws_secret_key="bench-" + "s" * 34,
            aws_region="us-east-1",
            base_url="http://bench.invalid",
            http_client=http,
            max_retries=0,
        )
        async with client.messages.stream(
            model="anthropic.claude-bench-v1:0", max_tokens=64, messages=[{"role": "user", "content": "bench"}]
        ) as stream:
            async for _ in stream:
                pass
            await stream.get_final_message()
    return 0


def run() -> list[str]:
    """Measure and return report lines."""
    lines: list[str] = []
    stacks = {"botocore EventStreamBuffer + base64 + json.loads": _bare, "stream_anthropic_bedrock": _ours}
    sdk = ("anthropic SDK AsyncAnthropicBedrock stream()", _sdk)
    for label, body in (("text 40k deltas", text_body(40_000)), ("tool args 16k deltas", tool_body(16_000))):
        messages = body.count(b":event-type")  # one header per event-stream message
        lines += compare(label, body, messages, stacks, sdk, floor_a=1.5, floor_c=10.0).lines()
    lines.append(
        judge_cost(
            "stream_anthropic_bedrock tool/text cost at 16k deltas", _ours, tool_body(16_000), text_body(16_000), 1.5
        )
    )
    return lines


def main() -> None:
    """Print the Claude on Bedrock report."""
    for line in run():
        print(line, flush=True)


if __name__ == "__main__":
    main()
