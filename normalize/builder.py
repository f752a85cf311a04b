"""``MessageBuilder``: the one place that emits assistant-message events.

Decoders translate vendor events into builder calls; the builder owns the partial message, maps
vendor keys (an Anthropic block index, an OpenAI tool-call index, a Responses ``output_index``) to
content indexes, and emits events that satisfy the grammar G1–G7 by construction:

- ``start`` is emitted once, before anything else — also when the call fails before any byte;
- a block starts at ``len(message.content)``; deltas and ends go only to open blocks of their kind;
- ``done`` ends every open block first; ``error`` leaves incomplete blocks open (no invented ends);
- tool-call arguments are strictly parsed once, at the block's end. A call whose JSON is incomplete
  never reaches ``done`` with ``toolUse``: the stream ends ``length`` if the vendor said so, otherwise
  ``error`` of kind ``truncated``.

Cost is linear in the stream: text grows in place (amortized O(1) per delta), tool arguments keep a
raw fragment buffer whose best-effort preview is re-parsed only when the buffer has grown by a
quarter since the last preview.

Events accumulate in :attr:`events`; the adapter hands them to the stream with :meth:`drain`.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Hashable
from typing import Any

from normalize.content import TextContent, ThinkingContent, ToolCall
from normalize.errors import ErrorInfo, ErrorKind
from normalize.events import (
    AssistantMessageEvent,
    DoneEvent,
    ErrorEvent,
    StartEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
from normalize.messages import AssistantMessage, StopReason
from normalize.model import Model
from normalize.partial_json import ArgumentsError, parse_arguments, parse_partial
from normalize.usage import calculate_cost

__all__ = ["MessageBuilder"]

#: The preview of growing tool arguments is refreshed when the buffer has grown by this factor.
_PREVIEW_GROWTH = 1.25


class _TextState:
    __slots__ = ("block", "index")

    def __init__(self, index: int, block: TextContent) -> None:
        self.index = index
        self.block = block


class _ThinkingState:
    __slots__ = ("block", "index")

    def __init__(self, index: int, block: ThinkingContent) -> None:
        self.index = index
        self.block = block


class _ToolState:
    __slots__ = ("block", "error", "index", "initial", "length", "next_preview", "parts")

    def __init__(self, index: int, block: ToolCall, initial: dict[str, Any] | None) -> None:
        self.index = index
        self.block = block
        self.initial = initial
        self.parts: list[str] = []
        self.length = 0
        self.next_preview = 1
        self.error: ArgumentsError | None = None

    def raw(self) -> str:
        parts = self.parts
        if len(parts) > 1:
            parts[:] = ["".join(parts)]
        return parts[0] if parts else ""


_BlockState = _TextState | _ThinkingState | _ToolState


class MessageBuilder:
    """Builds one assistant message and its events (see the module docstring for the guarantees).

    Calls made after the terminal event are ignored, so a decoder never has to guard them.
    """

    __slots__ = (
        "_finished",
        "_model",
        "_open",
        "_output_started",
        "_started",
        "_stop",
        "_stop_error",
        "_tools",
        "events",
        "message",
    )

    def __init__(self, model: Model | None = None, *, message: AssistantMessage | None = None) -> None:
        self._model = model
        self.message = message if message is not None else AssistantMessage.empty_for(model)
        #: Events emitted since the last :meth:`drain`.
        self.events: list[AssistantMessageEvent] = []
        self._open: dict[Hashable, _BlockState] = {}
        self._tools: list[_ToolState] = []
        self._started = False
        self._finished = False
        self._output_started = False
        self._stop: StopReason | None = None
        self._stop_error: tuple[ErrorInfo, str] | None = None

    # -- lifecycle --------------------------------------------------------------------------------

    @property
    def started(self) -> bool:
        """True once ``start`` has been emitted."""
        return self._started

    @property
    def finished(self) -> bool:
        """True once a terminal event has been emitted."""
        return self._finished

    @property
    def output_started(self) -> bool:
        """True once any content block has started."""
        return self._output_started

    def drain(self) -> list[AssistantMessageEvent]:
        """Return the events emitted since the last call, and forget them."""
        events = self.events
        self.events = []
        return events

    def reset_for_retry(self) -> bool:
        """Forget what a failed attempt recorded (usage, ids, stop) so the request can be retried.

        Only possible before any content block started and before a terminal; returns whether the
        builder was reset. ``start`` stays emitted: a retried call still has exactly one.
        """
        if self._output_started or self._finished:
            return False
        message = self.message
        message.usage = type(message.usage)()
        message.response_id = None
        message.raw_stop_reason = None
        self._stop = None
        self._stop_error = None
        return True

    def start(self) -> None:
        """Emit ``start`` (once)."""
        if not self._started and not self._finished:
            self._started = True
            self.events.append(StartEvent(self.message))

    # -- text and thinking ------------------------------------------------------------------------

    def start_text(self, key: Hashable, initial: str = "") -> None:
        """Open a text block for ``key``; ``initial`` text (if any) is emitted as its first delta."""
        if self._finished or not self._claim(key):
            return
        block = TextContent()
        self._open[key] = _TextState(self._append_block(block), block)
        self.events.append(TextStartEvent(len(self.message.content) - 1, self.message))
        if initial:
            self.text(key, initial)

    def text(self, key: Hashable, delta: str) -> None:
        """Append ``delta`` to the text block for ``key``, opening it first if needed."""
        state = self._open.get(key)
        if state is None:
            if self._finished:
                return
            self.start_text(key)
            state = self._open[key]
        if type(state) is not _TextState:
            self._kind_mismatch(key, "text")
            return
        if delta:
            block = state.block
            # Take the string off the block so this frame holds the only reference: CPython then
            # grows it in place, keeping accumulation linear instead of copying the prefix each time.
            accumulated = block.text
            block.text = ""
            accumulated += delta
            block.text = accumulated
            self.events.append(TextDeltaEvent(state.index, delta, self.message))

    def start_thinking(
        self, key: Hashable, initial: str = "", *, signature: str | None = None, redacted: bool = False
    ) -> None:
        """Open a thinking block; a redacted block carries its opaque payload in ``signature``."""
        if self._finished or not self._claim(key):
            return
        block = ThinkingContent(thinking_signature=signature, redacted=redacted)
        self._open[key] = _ThinkingState(self._append_block(block), block)
        self.events.append(ThinkingStartEvent(len(self.message.content) - 1, self.message))
        if initial:
            self.thinking(key, initial)

    def thinking(self, key: Hashable, delta: str) -> None:
        """Append ``delta`` to the thinking block for ``key``, opening it first if needed."""
        state = self._open.get(key)
        if state is None:
            if self._finished:
                return
            self.start_thinking(key)
            state = self._open[key]
        if type(state) is not _ThinkingState:
            self._kind_mismatch(key, "thinking")
            return
        if delta:
            block = state.block
            accumulated = block.thinking  # see text(): keep the only reference while appending
            block.thinking = ""
            accumulated += delta
            block.thinking = accumulated
            self.events.append(ThinkingDeltaEvent(state.index, delta, self.message))

    def signature(self, key: Hashable, signature: str, *, append: bool = False) -> None:
        """Set (or extend) the signature of the open thinking or text block for ``key``; unknown keys are ignored."""
        state = self._open.get(key)
        if isinstance(state, _ThinkingState):
            block = state.block
            block.thinking_signature = (block.thinking_signature or "") + signature if append else signature
        elif isinstance(state, _TextState):
            text_block = state.block
            text_block.text_signature = (text_block.text_signature or "") + signature if append else signature

    # -- tool calls -------------------------------------------------------------------------------

    def tool_call_start(
        self,
        key: Hashable,
        id: str,
        name: str,
        *,
        arguments: dict[str, Any] | None = None,
        thought_signature: str | None = None,
    ) -> None:
        """Open a tool call. ``arguments`` is an initial payload kept if no argument fragments follow."""
        if self._finished or not self._claim(key):
            return
        index = len(self.message.content)
        block = ToolCall(id=self._unique_id(id, index), name=name, thought_signature=thought_signature)
        if arguments:
            block.arguments = dict(arguments)
        state = _ToolState(index, block, dict(arguments) if arguments else None)
        self._append_block(block)
        self._open[key] = state
        self._tools.append(state)
        self.events.append(ToolCallStartEvent(index, self.message))

    def tool_args(self, key: Hashable, fragment: str) -> None:
        """Append a raw JSON fragment to the arguments of the open tool call for ``key``."""
        state = self._open.get(key)
        if type(state) is not _ToolState:
            if state is not None:
                self._kind_mismatch(key, "tool call")
            return
        if not fragment:
            return
        state.parts.append(fragment)
        state.length += len(fragment)
        if state.length >= state.next_preview:
            state.block.arguments = parse_partial(state.raw())
            state.next_preview = int(state.length * _PREVIEW_GROWTH) + 1
        self.events.append(ToolCallDeltaEvent(state.index, fragment, self.message))

    def is_open(self, key: Hashable) -> bool:
        """True while ``key`` names an open block."""
        return key in self._open

    # -- ending blocks ----------------------------------------------------------------------------

    def end_block(self, key: Hashable, *, final_text: str | None = None) -> None:
        """End the block for ``key``. ``final_text`` replaces the text where the vendor sends an
        authoritative final version. Unknown keys are ignored."""
        state = self._open.pop(key, None)
        if state is None or self._finished:
            return
        if type(state) is _TextState:
            if final_text is not None:
                state.block.text = final_text
            self.events.append(TextEndEvent(state.index, state.block.text, self.message))
        elif type(state) is _ThinkingState:
            if final_text is not None:
                state.block.thinking = final_text
            self.events.append(ThinkingEndEvent(state.index, state.block.thinking, self.message))
        elif type(state) is _ToolState:
            self._end_tool(state)

    def _end_tool(self, state: _ToolState) -> None:
        block = state.block
        if state.parts:
            raw = state.raw()
            try:
                block.arguments = parse_arguments(raw)
            except ArgumentsError as exc:
                # Keep the best-effort view for whoever inspects the failed message, but do not end
                # the block: incomplete arguments are settled in finish().
                block.arguments = parse_partial(raw)
                state.error = exc
                return
        else:
            block.arguments = dict(state.initial) if state.initial else {}
            if state.initial:
                # A payload that came whole in the start event is also sent as one delta, so the
                # deltas of every tool call reassemble its arguments.
                self.events.append(
                    ToolCallDeltaEvent(state.index, json.dumps(state.initial, ensure_ascii=False), self.message)
                )
        self.events.append(ToolCallEndEvent(state.index, block, self.message))

    # -- usage and stop -----------------------------------------------------------------------------

    def usage(
        self,
        *,
        input: int | None = None,
        output: int | None = None,
        cache_read: int | None = None,
        cache_write: int | None = None,
        cache_write_1h: int | None = None,
        reasoning: int | None = None,
    ) -> None:
        """Overwrite the given usage fields (``None`` leaves a field alone), then total and cost."""
        usage = self.message.usage
        if input is not None:
            usage.input = max(0, int(input))
        if output is not None:
            usage.output = max(0, int(output))
        if cache_read is not None:
            usage.cache_read = max(0, int(cache_read))
        if cache_write is not None:
            usage.cache_write = max(0, int(cache_write))
        if cache_write_1h is not None:
            usage.cache_write_1h = max(0, int(cache_write_1h))
        if reasoning is not None:
            usage.reasoning = max(0, int(reasoning))
        usage.recompute_total()
        if self._model is not None:
            calculate_cost(self._model, usage)

    def stop(
        self,
        raw_reason: str | None,
        mapped: StopReason,
        *,
        error: ErrorInfo | None = None,
        error_message: str | None = None,
    ) -> None:
        """Record the vendor's stop reason and its mapping; ``error``/``aborted`` need ``error`` info."""
        if self._finished:
            return
        self.message.raw_stop_reason = raw_reason
        self._stop = mapped
        if mapped in ("error", "aborted"):
            self._stop_error = (
                error or ErrorInfo.of("protocol"),
                error_message or f"the provider stopped with: {raw_reason}",
            )

    @property
    def stop_reason(self) -> StopReason | None:
        """The mapped stop reason recorded so far, if any."""
        return self._stop

    # -- terminals ----------------------------------------------------------------------------------

    def finish(self) -> None:
        """Emit the terminal for a stream whose vendor sent its terminal marker.

        Ends open blocks, settles incomplete tool arguments (``length`` keeps them as salvaged
        previews; anything else fails as ``truncated``), upgrades ``stop`` to ``toolUse`` when a
        complete tool call exists, and emits ``done`` — or ``error`` when the stop was an error.
        """
        if self._finished:
            return
        stop = self._stop
        if stop is None or stop == "pending":
            self.fail(ErrorInfo.of("protocol"), "the provider ended the response without a stop reason")
            return
        if self._stop_error is not None:
            self.fail(*self._stop_error)
            return
        for key in sorted(self._open, key=lambda k: self._open[k].index):
            self.end_block(key)
        incomplete = [state for state in self._tools if state.error is not None]
        if incomplete:
            if stop != "length":
                first = incomplete[0]
                kind: ErrorKind = "truncated" if first.error and first.error.incomplete else "protocol"
                self.fail(
                    ErrorInfo.of(kind),
                    f"tool call {first.block.name!r} ended with invalid arguments: {first.error}",
                )
                return
            for state in incomplete:
                self.events.append(ToolCallEndEvent(state.index, state.block, self.message))
        has_complete_call = any(state.error is None for state in self._tools)
        if stop == "stop" and has_complete_call:
            stop = "toolUse"
        elif stop == "toolUse" and not has_complete_call:
            self.fail(ErrorInfo.of("protocol"), "the provider reported tool use but sent no complete tool call")
            return
        self.start()
        self.message.stop_reason = stop
        self._finished = True
        self._open.clear()
        self.events.append(DoneEvent(stop, self.message))  # pyright: ignore[reportArgumentType]

    def fail(self, info: ErrorInfo, message: str) -> None:
        """Emit the ``error`` terminal, keeping partial content and usage. Open blocks stay open."""
        if self._finished:
            return
        self.start()
        for state in self._open.values():
            if type(state) is _ToolState and state.parts:
                state.block.arguments = parse_partial(state.raw())
        info.output_started = self._output_started
        reason = "aborted" if info.kind == "aborted" else "error"
        msg = self.message
        msg.stop_reason = reason
        msg.error_message = message or "unknown error"
        msg.error_info = info
        self._finished = True
        self._open.clear()
        self.events.append(ErrorEvent(reason, msg))

    def abort(self, reason: str | None = None) -> None:
        """Emit the ``aborted`` terminal."""
        self.fail(ErrorInfo.of("aborted"), reason or "Request was aborted")

    # -- helpers ------------------------------------------------------------------------------------

    def _claim(self, key: Hashable) -> bool:
        if key in self._open:
            self.fail(ErrorInfo.of("protocol"), f"the provider started block {key!r} twice")
            return False
        self.start()
        self._output_started = True
        return True

    def _append_block(self, block: TextContent | ThinkingContent | ToolCall) -> int:
        content = self.message.content
        content.append(block)
        return len(content) - 1

    def _kind_mismatch(self, key: Hashable, kind: str) -> None:
        self.fail(ErrorInfo.of("protocol"), f"the provider sent {kind} content for block {key!r} of another kind")

    def _unique_id(self, candidate: str, index: int) -> str:
        if not candidate:
            seed = self.message.response_id
            suffix = hashlib.sha256(f"{seed}:{index}".encode()).hexdigest()[:12] if seed else secrets.token_hex(6)
            candidate = f"call_gen_{suffix}"
        taken = {block.id for block in self.message.content if isinstance(block, ToolCall)}
        if candidate not in taken:
            return candidate
        n = 2
        while f"{candidate}_{n}" in taken:
            n += 1
        return f"{candidate}_{n}"
