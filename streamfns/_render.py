"""Terminal rendering of an event stream: text as it arrives, then a summary."""

from __future__ import annotations

import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TextIO

from normalize import (
    AssistantMessage,
    AssistantMessageEventStream,
    TextDeltaEvent,
    TextEndEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)

__all__ = ["StreamSummary", "format_summary", "render_stream"]

_DIM = "\x1b[2m"
_CYAN = "\x1b[36m"
_RESET = "\x1b[0m"


@dataclass(slots=True)
class StreamSummary:
    """What a rendered stream did."""

    message: AssistantMessage
    event_counts: Counter[str] = field(default_factory=Counter[str])
    time_to_first_token_s: float | None = None
    elapsed_s: float = 0.0

    @property
    def events(self) -> int:
        """Total events seen."""
        return sum(self.event_counts.values())


async def render_stream(
    stream: AssistantMessageEventStream, out: TextIO = sys.stdout, *, color: bool = True
) -> StreamSummary:
    """Print ``stream`` progressively (thinking dimmed, tool calls in cyan) and summarize it."""
    dim, cyan, reset = (_DIM, _CYAN, _RESET) if color else ("", "", "")
    counts: Counter[str] = Counter()
    started = time.perf_counter()
    first_token: float | None = None
    async for event in stream:
        counts[event.type] += 1
        match event:
            case TextDeltaEvent() | ThinkingDeltaEvent() | ToolCallDeltaEvent():
                if first_token is None:
                    first_token = time.perf_counter() - started
                out.write(event.delta)
            case ThinkingStartEvent():
                out.write(f"{dim}[thinking] ")
            case ThinkingEndEvent():
                out.write(f"{reset}\n")
            case TextEndEvent():
                out.write("\n")
            case ToolCallStartEvent():
                block = event.partial.content[event.content_index]
                name = block.name if isinstance(block, ToolCall) else "?"
                out.write(f"{cyan}[tool call] {name}(")
            case ToolCallEndEvent():
                out.write(f"){reset}\n")
            case _:
                pass
        out.flush()
    message = await stream.result()
    return StreamSummary(
        message=message,
        event_counts=counts,
        time_to_first_token_s=first_token,
        elapsed_s=time.perf_counter() - started,
    )


def format_summary(summary: StreamSummary) -> str:
    """A few lines describing how the stream ended."""
    message = summary.message
    usage = message.usage
    ttft = f"{summary.time_to_first_token_s * 1000:.0f} ms" if summary.time_to_first_token_s is not None else "n/a"
    vendor = f" (vendor: {message.raw_stop_reason})" if message.raw_stop_reason else ""
    lines = [
        f"stop reason : {message.stop_reason}{vendor}",
        (
            f"usage       : input {usage.input}, output {usage.output}, cache read {usage.cache_read}, "
            f"cache write {usage.cache_write}, total {usage.total_tokens}, cost ${usage.cost.total:.6f}"
        ),
        f"events      : {summary.events} ({', '.join(f'{k} {v}' for k, v in sorted(summary.event_counts.items()))})",
        f"first token : {ttft}; elapsed {summary.elapsed_s * 1000:.0f} ms",
    ]
    if message.error_message:
        kind = message.error_info.kind if message.error_info else "?"
        lines.insert(1, f"error       : [{kind}] {message.error_message}")
    return "\n".join(lines)
