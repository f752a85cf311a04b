"""A terminal listener for the agent loop: text as it streams, tool calls and their results.

    renderer = TerminalRenderer(sys.stdout, color=sys.stdout.isatty())
    await agent.run("What is 6 * 7?", renderer)
    print(renderer.summary())

Colour is the caller's choice (``python -m examples.agent_loop`` turns it on only on a terminal). With
``progress`` set (a terminal stream, usually stderr) a one-line status says what the agent waits for
and is erased as soon as output arrives.

A running tool's progress (``tool_execution_update``) is shown compactly: with ``progress``, in that
one status line (``… calculator: step 2 of 3``), replaced by each update; without it (output to a
file or a pipe), as one dim line per update, ``⋯ calculator: step 2 of 3``, cut to
:data:`PROGRESS_WIDTH` characters. Either way the tool's text is one line, terminal-safe.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TextIO

from examples.agent_loop.events import AgentEvent
from normalize import AssistantMessage, Cost, CostSum, TextContent, ToolCallEndEvent, ToolResultContent, Usage
from streamfns.render import format_cost, one_line, terminal_safe

__all__ = ["PROGRESS_WIDTH", "TerminalRenderer"]

#: How many characters of a tool's progress text one line shows.
PROGRESS_WIDTH = 72

_STYLES = {"dim": "\x1b[2m", "cyan": "\x1b[36m", "green": "\x1b[32m", "red": "\x1b[31m", "reset": "\x1b[0m"}


class TerminalRenderer:
    """An ``on_event`` listener that writes a readable transcript of the run to ``out``."""

    def __init__(self, out: TextIO, *, color: bool = False, progress: TextIO | None = None) -> None:
        self.out = out
        self.progress = progress
        self._style = _STYLES if color else dict.fromkeys(_STYLES, "")
        self._status = False
        self._at_line_start = True
        self.turns = 0
        self.tool_calls = 0
        #: Tokens over every reply. Its ``cost`` stays unknown (never a $0 nobody summed): a run's
        #: replies may be priced on several bases, which one ``Cost`` cannot say — see :attr:`cost`.
        self.usage = Usage(cost=Cost(basis="unknown"))
        #: The replies' costs added up by :func:`normalize.sum_costs`'s rule (an unknown part makes it
        #: unknown; a plan-paid part is never added into the bill).
        self.cost = CostSum()
        self.last: AssistantMessage | None = None

    def _write(self, text: str) -> None:
        self._clear_status()
        self.out.write(text)  # callers pass model or tool text through terminal_safe first
        if text:
            self._at_line_start = text.endswith("\n")
        self.out.flush()

    def _line(self, text: str) -> None:
        self._write(("" if self._at_line_start else "\n") + text + "\n")

    def _show_status(self, text: str) -> None:
        if self.progress is not None:
            self.progress.write(f"\r{self._style['dim']}… {text}{self._style['reset']}")
            self.progress.flush()
            self._status = True

    def _clear_status(self) -> None:
        if self.progress is not None and self._status:
            self.progress.write("\r\x1b[2K")
            self.progress.flush()
            self._status = False

    def __call__(self, event: AgentEvent) -> None:
        s = self._style
        match event.type:
            case "turn_start":
                self.turns += 1
                self._show_status("waiting for the model")
            case "message_start" if event.message.role == "user" and isinstance(event.message.content, str):
                self._line(f"{s['dim']}› {terminal_safe(event.message.content)}{s['reset']}")
            case "message_update":
                inner = event.event
                if inner.type == "text_delta":
                    self._write(terminal_safe(inner.delta))
                elif inner.type == "thinking_start":
                    self._line(f"{s['dim']}[thinking]")
                elif inner.type == "thinking_delta":
                    self._write(terminal_safe(inner.delta))
                elif inner.type == "thinking_end":
                    self._write(s["reset"] + "\n")
                elif isinstance(inner, ToolCallEndEvent):
                    call = inner.tool_call
                    arguments = json.dumps(call.arguments, ensure_ascii=False)
                    self._line(f"{s['cyan']}→ {terminal_safe(call.name)}({terminal_safe(arguments)}){s['reset']}")
            case "message_end" if isinstance(event.message, AssistantMessage):
                self._end_reply(event.message)
            case "tool_execution_start":
                self.tool_calls += 1
                self._show_status(f"running {event.tool_name}")
            case "tool_execution_update":
                self._tool_progress(event.tool_name, event.partial_result)
            case "tool_execution_end":
                text = "".join(b.text for b in event.result.content if isinstance(b, TextContent))
                colour, mark = (s["red"], "✗") if event.is_error else (s["green"], "←")
                self._line(f"{colour}{mark} {terminal_safe(text)}{s['reset']}")
            case _:
                self._clear_status()

    def _tool_progress(self, name: str, partial: Sequence[ToolResultContent]) -> None:
        text = " ".join(block.text if isinstance(block, TextContent) else "[image]" for block in partial)
        line = f"{one_line(name, 32)}: {one_line(text, PROGRESS_WIDTH)}"
        if self.progress is not None:
            self._clear_status()
            self._show_status(line)
        else:
            self._line(f"{self._style['dim']}⋯ {line}{self._style['reset']}")

    def _end_reply(self, message: AssistantMessage) -> None:
        self.last = message
        total, usage = self.usage, message.usage
        total.input += usage.input
        total.output += usage.output
        total.cache_read += usage.cache_read
        total.cache_write += usage.cache_write
        total.total_tokens += usage.total_tokens
        self.cost = self.cost.add(usage.cost)
        if message.stop_reason in ("error", "aborted"):
            kind = message.error_info.kind if message.error_info else message.stop_reason
            error = terminal_safe(message.error_message or "")
            self._line(f"{self._style['red']}✗ [{kind}] {error}{self._style['reset']}")
        elif not self._at_line_start:
            self._write("\n")

    def summary(self) -> str:
        """One line: turns, tool calls, how the run ended, tokens and cost over every turn."""
        ended = self.last.stop_reason if self.last else "no reply"
        u = self.usage
        calls = f"{self.tool_calls} tool call{'s' if self.tool_calls != 1 else ''}"
        return (
            f"{self.turns} turn{'s' if self.turns != 1 else ''} · {calls} · ended {ended} · "
            f"tokens in {u.input} out {u.output} cache {u.cache_read}/{u.cache_write} · {format_cost(self.cost)}"
        )
