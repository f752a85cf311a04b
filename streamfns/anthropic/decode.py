"""Anthropic Messages SSE events → builder calls. Pure: no I/O, no clock.

How vendor blocks appear in the normalized message:

- ``text``, ``thinking``, ``redacted_thinking`` and ``tool_use`` become text, thinking (redacted:
  the opaque ``data`` in ``thinking_signature``, a placeholder as text) and tool-call blocks; initial
  payloads in ``content_block_start`` are kept (a ``tool_use`` whose whole ``input`` comes in the
  start event keeps it);
- server-side tool blocks (``server_tool_use``, ``web_search_tool_result``, code execution, web fetch,
  MCP, tool search, advisor, ``fallback`` …) are executed by Anthropic, not by the caller: they are
  left out of the normalized message and take no content index, so the text blocks around them keep
  their order and a transcript replays as plain text. Citations (``citations_delta``) do not change
  the text and are not kept.

Stop reasons: ``end_turn``, ``stop_sequence`` and ``pause_turn`` → ``stop``; ``max_tokens`` and
``model_context_window_exceeded`` → ``length``; ``tool_use`` → ``toolUse``; ``refusal`` → error kind
``refusal``; ``sensitive`` → error kind ``content_filter``; anything else → error kind ``protocol``.
An ``event: error`` mid-stream raises :class:`StreamFailure` with the kind of the vendor's error type.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, ClassVar, Final

from normalize import MessageBuilder, Model
from streamfns.anthropic.errors import ERRORS
from streamfns.kit import (
    SHAPE_LEARNS,
    Decoder,
    ErrorTable,
    EventShape,
    ServerSentEvent,
    Shortcut,
    StopTable,
    StreamFailure,
    int_or_none,
    load_event,
    obj,
    text,
)

__all__ = ["REDACTED_PLACEHOLDER", "STOP_REASONS", "AnthropicDecoder"]

REDACTED_PLACEHOLDER = "[Reasoning redacted]"

_TEXT, _THINKING, _TOOL, _SKIP = 1, 2, 3, 0

#: Anthropic's stop reasons. ``refusal`` carries Anthropic's explanation (``stop_details``) when it sent one.
STOP_REASONS: Final = StopTable(
    vendor="Anthropic",
    stops={
        "end_turn": "stop",
        "stop_sequence": "stop",
        "pause_turn": "stop",
        "max_tokens": "length",
        "model_context_window_exceeded": "length",
        "tool_use": "toolUse",
    },
    errors={"refusal": "refusal", "sensitive": "content_filter"},
    messages={
        "refusal": "The model refused to complete the request",
        "sensitive": "Anthropic stopped the response: sensitive content",
    },
)

#: The deltas that carry a piece of a block: the member holding it, and the kind of block it belongs to.
_PIECE_FIELDS: Final = {"text_delta": "text", "input_json_delta": "partial_json", "thinking_delta": "thinking"}
_PIECE_KINDS: Final = {"text_delta": _TEXT, "input_json_delta": _TOOL, "thinking_delta": _THINKING}

#: What a delta without an object reads as (never mutated).
_NO_DELTA: dict[str, Any] = {}


class AnthropicDecoder(Decoder[ServerSentEvent]):
    """Feeds one response's events to a :class:`MessageBuilder` (see the module docstring)."""

    __slots__ = (
        "_builder",
        "_kinds",
        "_learns",
        "_message_started",
        "_shape",
        "_shape_index",
        "_shape_sink",
        "shortcut",
    )

    #: The table an ``event: error`` is typed by (a cloud serving Claude answers in its own shapes too).
    errors: ClassVar[ErrorTable] = ERRORS

    def __init__(self, builder: MessageBuilder, model: Model | None = None) -> None:
        del model  # the Messages stream needs nothing from the model
        self._builder = builder
        self._kinds: dict[int, int] = {}
        self._message_started = False
        # The layout of the last text, thinking or argument delta read whole, its block and the builder
        # verb it went to: until another event is read whole (which may change what a delta means), a
        # delta whose bytes differ from it only in that piece goes to the same verb (kit.shapes).
        self._shape: EventShape | None = None
        self._shape_index: Hashable = -1
        self._shape_sink: Callable[[Hashable, str], None] = builder.text_delta
        self._learns = SHAPE_LEARNS
        #: The shape, for the kit (its path here depends on nothing but the event's name and bytes).
        self.shortcut: Shortcut | None = None

    def on_event(self, sse: ServerSentEvent) -> None:
        """Apply one server-sent event; raises :class:`StreamFailure` for vendor errors."""
        if sse.event == "ping":
            return
        shape = self._shape
        if shape is not None:
            pieces = shape.match(sse.data)
            if pieces is not None:
                self._shape_sink(self._shape_index, pieces[0])
                return
            self._shape = self.shortcut = None
            self._learns += shape.hits > 0  # a learn that paid is given back (kit.SHAPE_LEARNS)
        data = load_event(sse.data, "Anthropic")
        kind = data.get("type", sse.event)
        builder = self._builder
        if kind == "content_block_delta":
            # The hot path (one call per token): lookups inlined rather than through the accessors.
            index = data.get("index")
            block_kind = self._kinds.get(index) if type(index) is int else None
            if block_kind is None:
                raise self._unplaced(index)
            if block_kind == _SKIP:
                return  # a server-tool block's input or result: not part of the normalized message
            delta: Any = data.get("delta")
            if delta.__class__ is not dict:
                delta = _NO_DELTA
            delta_type = delta.get("type")
            field = _PIECE_FIELDS.get(delta_type)
            if field is not None and _PIECE_KINDS[delta_type] == block_kind:
                piece = delta.get(field)
                sink = self._sink(block_kind)
                sink(index, piece if type(piece) is str else "")
                if self._learns and type(piece) is str:
                    self._learns -= 1
                    self._shape = EventShape.learn(sse.data, data, (("delta", field),))
                    self._shape_index, self._shape_sink = index, sink
                    self.shortcut = Shortcut.of(sse.event, self._shape, sink, index)
            elif delta_type == "signature_delta" and block_kind == _THINKING:
                builder.block_signature(index, text(delta.get("signature")))
            elif delta_type in ("text_delta", "input_json_delta", "thinking_delta", "signature_delta"):
                raise StreamFailure.protocol(
                    f"Anthropic sent a {delta_type} for block {index}, which is of another kind"
                )
            return
        if kind == "content_block_start":
            self._block_start(data)
        elif kind == "content_block_stop":
            index = data.get("index")
            if self._block_kind(index) != _SKIP:
                builder.block_end(index)
        elif kind == "message_start":
            self._message_start(obj(data.get("message")))
        elif kind == "message_delta":
            self._message_delta(data)
        elif kind == "message_stop":
            builder.finish()
        elif kind == "error":
            raise self.errors.from_event(data)

    def _sink(self, kind: int) -> Callable[[Hashable, str], None]:
        """The builder verb that takes a piece of a block of ``kind``: text, argument or thinking."""
        if kind == _TEXT:
            return self._builder.text_delta
        if kind == _TOOL:
            return self._builder.tool_call_delta
        return self._builder.thinking_delta

    def on_eof(self) -> None:
        """The body ended before ``message_stop``: nothing to conclude (the kit reports ``truncated``)."""

    def _block_kind(self, index: object) -> int:
        """The kind of the block a delta or stop names; a block never started cannot be placed."""
        kind = self._kinds.get(index) if type(index) is int else None
        if kind is None:
            raise self._unplaced(index)
        return kind

    def _unplaced(self, index: object) -> StreamFailure:
        return StreamFailure.protocol(f"Anthropic sent an event for content block {index!r}, which never started")

    def _block_start(self, data: dict[str, Any]) -> None:
        index = data.get("index")
        block = obj(data.get("content_block"))
        if not isinstance(index, int) or not block:
            raise StreamFailure.protocol("Anthropic sent a content_block_start without an index or a block")
        builder = self._builder
        block_type = block.get("type")
        if block_type == "text":
            self._kinds[index] = _TEXT
            builder.text_start(index, text(block.get("text")))
        elif block_type == "thinking":
            self._kinds[index] = _THINKING
            builder.thinking_start(index, text(block.get("thinking")), signature=text(block.get("signature")) or None)
        elif block_type == "redacted_thinking":
            self._kinds[index] = _THINKING
            builder.thinking_start(index, REDACTED_PLACEHOLDER, signature=text(block.get("data")), redacted=True)
        elif block_type == "tool_use":
            self._kinds[index] = _TOOL
            builder.tool_call_start(index, text(block.get("id")), text(block.get("name")), arguments=block.get("input"))
        else:
            self._kinds[index] = _SKIP

    def _message_start(self, message: dict[str, Any]) -> None:
        builder = self._builder
        if self._message_started:
            if builder.output_started:
                raise StreamFailure.protocol(
                    "Anthropic sent a second message_start after content had started (a spliced stream)"
                )
            builder.reset_for_retry()
        self._message_started = True
        message_id, served_by = message.get("id"), message.get("model")
        builder.response(
            id=message_id if isinstance(message_id, str) else None,
            model=served_by if isinstance(served_by, str) else None,
        )
        usage = obj(message.get("usage"))
        if usage:
            self._usage(usage)

    def _usage(self, usage: dict[str, Any]) -> None:
        # Only fields that are present and numeric overwrite: proxies omit some (pi #6611).
        self._builder.usage(
            input=int_or_none(usage.get("input_tokens")),
            output=int_or_none(usage.get("output_tokens")),
            cache_read=int_or_none(usage.get("cache_read_input_tokens")),
            cache_write=int_or_none(usage.get("cache_creation_input_tokens")),
            cache_write_1h=int_or_none(obj(usage.get("cache_creation")).get("ephemeral_1h_input_tokens")),
            reasoning=int_or_none(obj(usage.get("output_tokens_details")).get("thinking_tokens")),
        )

    def _message_delta(self, data: dict[str, Any]) -> None:
        usage = obj(data.get("usage"))
        if usage:
            self._usage(usage)
        delta = obj(data.get("delta"))
        raw = delta.get("stop_reason")
        if raw is None:
            return
        explanation = obj(delta.get("stop_details")).get("explanation")
        STOP_REASONS.stop(
            self._builder, str(raw), message=explanation if isinstance(explanation, str) and explanation else None
        )
