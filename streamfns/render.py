"""Terminal rendering of an event stream: text as it arrives (or one line per event), then a summary.

What the ``streamfns`` command shows, public for any command-line tool built on streamfns (the agent
loop example's renderer uses it)::

    summary = await render_stream(streamfns.stream(model, context), color=use_color(sys.stdout))
    print(format_summary(summary))

Colour and progress are for terminals only: callers pass ``color=use_color(out)`` and a
``progress`` stream only when it is a terminal (:func:`use_color` also honours ``NO_COLOR``). What
:func:`render_stream` and :func:`format_summary` write never drives the terminal: text from a model
or a recording has its control characters escaped (:func:`terminal_safe`).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

from normalize import (
    AssistantMessage,
    AssistantMessageEvent,
    AssistantMessageEventStream,
    Cost,
    CostSum,
    DoneEvent,
    ErrorEvent,
    ModelCost,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)

__all__ = [
    "PRICE_WORDS",
    "StreamSummary",
    "format_cost",
    "format_event",
    "format_summary",
    "is_terminal",
    "one_line",
    "price_cells",
    "render_stream",
    "terminal_safe",
    "use_color",
]

_DIM = "\x1b[2m"
_CYAN = "\x1b[36m"
_RESET = "\x1b[0m"


# Control characters other than newline and tab: a model's (or a hostile recording's) text must not
# drive the terminal — move the cursor, rewrite a line with a carriage return, set the title.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """``text`` with every control character except newline and tab shown escaped (``\\x1b``);
    Windows line ends (``\\r\\n``) are plain newlines."""
    return _CONTROL.sub(lambda match: f"\\x{ord(match.group()):02x}", text.replace("\r\n", "\n"))


_SPACE = re.compile(r"\s+")


def one_line(text: str, width: int = 80) -> str:
    """``text`` as one terminal-safe line of at most ``width`` characters (``width`` ≥ 1): runs of
    whitespace, newlines included, become one space; control characters are escaped
    (:func:`terminal_safe`), and a longer line is cut, ending in ``…``. For a status or progress line
    that must stay on one row."""
    flat = terminal_safe(_SPACE.sub(" ", text).strip())
    if len(flat) <= width:
        return flat
    return flat[: max(width - 1, 0)] + "…"


def is_terminal(stream: TextIO) -> bool:
    """True when ``stream`` is an interactive terminal."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty())


def use_color(stream: TextIO) -> bool:
    """Colour only on a terminal, and never when ``NO_COLOR`` is set (https://no-color.org)."""
    return is_terminal(stream) and not os.environ.get("NO_COLOR")


def format_event(event: AssistantMessageEvent) -> str:
    """One line describing an event: its type, content index and payload (deltas quoted as JSON)."""
    match event:
        case DoneEvent():
            return f"done        reason={event.reason}"
        case ErrorEvent():
            kind = event.error.error_info.kind if event.error.error_info else "?"
            return f"error       reason={event.reason} kind={kind} message={json.dumps(event.error.error_message)}"
        case TextDeltaEvent() | ThinkingDeltaEvent() | ToolCallDeltaEvent():
            return f"{event.type:<15} [{event.content_index}] {json.dumps(event.delta, ensure_ascii=False)}"
        case ToolCallEndEvent():
            call = event.tool_call
            arguments = json.dumps(call.arguments, ensure_ascii=False)
            name, call_id = terminal_safe(call.name), json.dumps(call.id)
            return f"{event.type:<15} [{event.content_index}] {name} id={call_id} arguments={arguments}"
        case TextEndEvent() | ThinkingEndEvent():
            return f"{event.type:<15} [{event.content_index}] {len(event.content)} chars"
        case ThinkingStartEvent() | ToolCallStartEvent() | TextStartEvent():
            return f"{event.type:<15} [{event.content_index}]"
        case _:
            return event.type


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
    stream: AssistantMessageEventStream,
    out: TextIO | None = None,
    *,
    color: bool = True,
    events: bool = False,
    progress: TextIO | None = None,
) -> StreamSummary:
    """Print ``stream`` progressively (thinking dimmed, tool calls in cyan) and summarize it.

    With ``events`` every event is printed on its own line instead (:func:`format_event`). With
    ``progress`` (a terminal) a "waiting" status is shown there until the first event arrives.
    """
    sink: TextIO = out or sys.stdout  # looked up per call, so a redirected sys.stdout is honoured
    dim, cyan, reset = (_DIM, _CYAN, _RESET) if color else ("", "", "")
    counts: Counter[str] = Counter()
    started = time.perf_counter()
    first_token: float | None = None
    if progress is not None:
        progress.write(f"\r{dim}… waiting for the first event{reset}")
        progress.flush()
    async for event in stream:
        if progress is not None:
            progress.write("\r\x1b[2K")
            progress.flush()
            progress = None
        counts[event.type] += 1
        if first_token is None and isinstance(event, TextDeltaEvent | ThinkingDeltaEvent | ToolCallDeltaEvent):
            first_token = time.perf_counter() - started
        if events:
            sink.write(format_event(event) + "\n")
            continue
        match event:
            case TextDeltaEvent() | ThinkingDeltaEvent() | ToolCallDeltaEvent():
                sink.write(terminal_safe(event.delta))
            case ThinkingStartEvent():
                sink.write(f"{dim}[thinking] ")
            case ThinkingEndEvent():
                sink.write(f"{reset}\n")
            case TextEndEvent():
                sink.write("\n")
            case ToolCallStartEvent():
                block = event.partial.content[event.content_index]
                name = block.name if isinstance(block, ToolCall) else "?"
                sink.write(f"{cyan}[tool call] {terminal_safe(name)}(")
            case ToolCallEndEvent():
                sink.write(f"){reset}\n")
            case _:
                pass
        sink.flush()
    if progress is not None:  # no event came at all
        progress.write("\r\x1b[2K")
        progress.flush()
    message = await stream.result()
    return StreamSummary(
        message=message,
        event_counts=counts,
        time_to_first_token_s=first_token,
        elapsed_s=time.perf_counter() - started,
    )


#: What a price cell says for a model not billed per token (one word: a table cell) — never a $0 rate
#: nobody quoted. ``streamfns models`` and the docs' model tables both use it.
PRICE_WORDS: dict[str, str] = {"free": "free", "subscription": "plan", "unknown": "unknown"}


def price_cells(cost: ModelCost, rate: Callable[[float], str]) -> tuple[str, str, str, str]:
    """The input, output, cache-read and cache-write cells of a price table: each metered rate
    through ``rate`` (the caller's format), else the basis's word (:data:`PRICE_WORDS`) in all four."""
    word = PRICE_WORDS.get(cost.basis)
    if word is not None:
        return (word, word, word, word)
    return (rate(cost.input), rate(cost.output), rate(cost.cache_read), rate(cost.cache_write))


def format_cost(cost: Cost | CostSum) -> str:
    """A usage's cost as a person should read it: ``$0.001234`` when metered, ``free`` (a local
    model), ``subscription`` (with what the list prices would give, when the catalog has them) and
    ``unknown`` when nobody knows the price — never ``$0`` for a price that is not known.

    A sum of costs (:func:`normalize.sum_costs`) reads the same way, by its basis; one that holds
    both metered and plan-paid parts shows the bill and the plan apart, never added:
    ``$0.001234 + subscription ($0.000500 at list prices)``."""
    if isinstance(cost, CostSum):
        return _format_sum(cost)
    total = cost.total
    if total is None or cost.basis == "unknown":
        return "unknown"
    if cost.basis == "free":
        return "free"
    if cost.basis == "subscription":
        return _subscription(total)
    return f"${total:.6f}"


def _subscription(at_list_prices: float) -> str:
    return f"subscription (${at_list_prices:.6f} at list prices)" if at_list_prices else "subscription"


def _format_sum(found: CostSum) -> str:
    basis = found.basis
    if basis in ("unknown", "free"):
        return basis
    if basis == "subscription":
        return _subscription(found.plan)
    bill = f"${found.billed:.6f}"
    return f"{bill} + {_subscription(found.plan)}" if "subscription" in found.bases else bill


def format_summary(summary: StreamSummary) -> str:
    """A few lines describing how the stream ended."""
    message = summary.message
    usage = message.usage
    ttft = f"{summary.time_to_first_token_s * 1000:.0f} ms" if summary.time_to_first_token_s is not None else "n/a"
    vendor = f" (vendor: {terminal_safe(message.raw_stop_reason)})" if message.raw_stop_reason else ""
    lines = [
        f"stop reason : {message.stop_reason}{vendor}",
        (
            f"usage       : input {usage.input}, output {usage.output}, cache read {usage.cache_read}, "
            f"cache write {usage.cache_write}, total {usage.total_tokens}, cost {format_cost(usage.cost)}"
        ),
        f"events      : {summary.events} ({', '.join(f'{k} {v}' for k, v in sorted(summary.event_counts.items()))})",
        f"first token : {ttft}; elapsed {summary.elapsed_s * 1000:.0f} ms",
    ]
    if message.error_message:
        kind = message.error_info.kind if message.error_info else "?"
        lines.insert(1, f"error       : [{kind}] {terminal_safe(message.error_message)}")
    return "\n".join(lines)
