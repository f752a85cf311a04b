"""Cohere v2 chat SSE events → builder calls. Pure: no I/O, no clock.

Each event is ``event: <type>`` with a JSON ``data:`` whose ``type`` names it; the JSON ``type`` decides.
How they land in the normalized message:

- ``message-start`` gives the response id.
- ``content-start`` opens a block at Cohere's content ``index``: ``text`` or ``thinking`` (reasoning
  models); ``content-delta`` appends its ``text`` (or ``thinking``) to it; ``content-end`` ends it. A
  content type we do not know is left out (its deltas too). An index names one block for the whole
  response: a delta or end for an index that never started or already ended, a second start for it, or
  a delta of the other kind is a ``protocol`` error.
- ``tool-plan-delta`` (the plan a model states before its tool calls) becomes a thinking block whose
  signature is ``tool_plan``, so a transcript replays it to Cohere as the assistant message's
  ``tool_plan`` (see ``request.py``); the first tool call ends it.
- ``tool-call-start`` opens a call (its ``id`` and ``function.name``; arguments it already carries
  count as the first fragment), ``tool-call-delta`` appends ``function.arguments`` fragments,
  ``tool-call-end`` ends it: the arguments are parsed strictly once, there (a call with no fragments
  has none: ``{}``). A call without a name is a ``protocol`` error; its index follows the content
  rule above.
- Every piece a delta carries is a string (Cohere's schema and SDK type ``text``, ``thinking``,
  ``tool_plan`` and ``function.arguments`` as optional strings). A piece that is absent or null adds
  nothing; a piece of another type — arguments sent as an object or a number, ``"text": 123`` — or a
  ``delta``/``message``/``content`` that is not an object is a ``protocol`` error: arguments we did not
  read as the string Cohere sent are never encoded into something executable, and text we cannot place
  is never dropped without a word.
- ``citation-start``/``citation-end`` are not kept: the normalized text block has no place for them
  (text and an opaque replay signature only), and they do not change the text they point into; the
  cited spans and their sources (documents, tool outputs) are dropped. ``debug`` events and types we
  do not know are skipped.
- ``message-end`` is the terminal marker: its ``usage`` and ``finish_reason`` are recorded and the
  stream ends there (the ``data: [DONE]`` that follows is not read). Usage comes from ``tokens`` —
  ``input_tokens`` less ``cached_tokens`` as input, ``cached_tokens`` as cache reads,
  ``output_tokens`` (reasoning included) as output, ``reasoning_tokens`` as its breakdown; only when
  ``tokens`` is missing does ``billed_units`` stand in. Counts that are not non-negative whole numbers
  are ignored.

Finish reasons: ``COMPLETE`` and ``STOP_SEQUENCE`` → ``stop`` (``toolUse`` when a call was made);
``MAX_TOKENS`` → ``length``; ``TOOL_CALL`` → ``toolUse``; ``ERROR`` → error ``server`` and ``TIMEOUT``
→ error ``timeout``, each with the ``delta.error`` words Cohere sent; anything else → error
``protocol`` naming it. ``data: [DONE]`` before ``message-end`` is ``truncated``, as is a body that ends
without it (the kit's default). An error object in the stream (``{"message": …}`` without a
``type``, or named ``error`` by its ``type`` or its ``event:`` line) ends it with the kind its words say
(``errors.py``); an ``event: error`` whose data is not such an object (plain text, say) ends it the
same way with that text as Cohere's words (the kit cuts and redacts it). A whole non-streaming chat
response (``{"id", "message": {"role", "content", …}, "finish_reason"}``) sent as an event is a
``protocol`` error that says so, not retryable: repeating the request gets the same answer. A payload
without a ``type`` is otherwise named by its ``event:`` line.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from typing import Any, Final, cast

from normalize import MessageBuilder, Model
from streamfns.cohere.errors import ERRORS, VENDOR
from streamfns.kit import (
    SHAPE_LEARNS,
    Decoder,
    EventShape,
    ServerSentEvent,
    Shortcut,
    StopTable,
    StreamFailure,
    load_event,
    obj,
    text,
)

__all__ = ["STOPS", "TOOL_PLAN", "CohereDecoder"]

#: The signature of a thinking block that holds a tool plan (it goes back as ``tool_plan``).
TOOL_PLAN: Final = "tool_plan"

STOPS: Final = StopTable(
    vendor=VENDOR,
    stops={"COMPLETE": "stop", "STOP_SEQUENCE": "stop", "MAX_TOKENS": "length", "TOOL_CALL": "toolUse"},
    errors={"ERROR": "server", "TIMEOUT": "timeout"},
    messages={
        "ERROR": "Cohere stopped the response with an error",
        "TIMEOUT": "Cohere timed out generating the response",
    },
)

# A content index's state: the kind of its open block, left out (a type we do not know), or ended.
_TEXT, _THINKING, _SKIP, _ENDED = 1, 2, 0, -1
_KINDS: Final = {"text": _TEXT, "thinking": _THINKING}
_FIELDS: Final = {_TEXT: "text", _THINKING: "thinking"}
#: Where the piece of each kind of delta lies in its event (the hole a learned shape reads).
_TEXT_PATH: Final = ("delta", "message", "content", "text")
_THINKING_PATH: Final = ("delta", "message", "content", "thinking")
_ARGUMENTS_PATH: Final = ("delta", "message", "tool_calls", "function", "arguments")
_PLAN_PATH: Final = ("delta", "message", "tool_plan")
_DONE: Final = b"[DONE]"
#: What a non-streaming chat response's ``message`` holds (an error's ``message`` is its words).
_RESPONSE_MESSAGE: Final = frozenset({"role", "content", "tool_calls", "tool_plan", "citations"})


def _piece(data: dict[str, Any], path: tuple[str, ...], what: str) -> Any:
    """The value at ``path`` in an event: None when a member on the way is absent or null; a member on
    the way that is not an object is a ``protocol`` error (the event cannot be read, so its piece cannot
    be placed)."""
    value: Any = data
    for depth, key in enumerate(path):
        if value.__class__ is not dict:
            if value is None:
                return None
            where = ".".join(path[:depth])
            raise StreamFailure.protocol(f"Cohere sent a {what} whose {where} is not an object: {value!r:.200}")
        value = value.get(key)
    return value


def _not_a_string(what: str, path: tuple[str, ...], value: object) -> StreamFailure:
    return StreamFailure.protocol(f"Cohere sent a {what} whose {path[-1]!r} is not a string: {value!r:.200}")


def _is_response(data: dict[str, Any]) -> bool:
    """Whether a payload without a ``type`` is a whole non-streaming chat response: its ``message`` is
    the assistant message (an object holding a role, content, calls …), where an error has its words."""
    message = data.get("message")
    return isinstance(message, dict) and not _RESPONSE_MESSAGE.isdisjoint(cast("dict[str, Any]", message))


def _count(value: object) -> int | None:
    """A token count: a non-negative whole number (Cohere's schema types counts as numbers, so ``12.0``
    reads as 12); anything else is None (not stated)."""
    if value.__class__ is int:
        return value if value >= 0 else None  # pyright: ignore[reportOperatorIssue, reportReturnType] - an int
    if isinstance(value, float) and math.isfinite(value) and value >= 0 and value.is_integer():
        return int(value)
    return None


class CohereDecoder(Decoder[ServerSentEvent]):
    """One response's events → builder calls (see the module docstring)."""

    __slots__ = (
        "_builder",
        "_calls",
        "_kinds",
        "_learns",
        "_plan",
        "_plans",
        "_shape",
        "_shape_key",
        "_shape_sink",
        "_started",
        "shortcut",
    )

    def __init__(self, builder: MessageBuilder, model: Model | None = None) -> None:
        del model  # the stream needs nothing from the model
        self._builder = builder
        self._kinds: dict[int, int] = {}  # Cohere content index → its kind, or _ENDED
        self._calls: dict[int, bool] = {}  # tool-call index → whether its call is still open
        self._plan: Hashable | None = None  # the open tool-plan block's key
        self._plans = 0
        self._started = False
        # The layout of the last delta read whole, its block and the builder verb it went to: until
        # another event is read whole (which may change what a delta means), a delta whose bytes differ
        # from it only in that piece goes to the same verb (kit.shapes).
        self._shape: EventShape | None = None
        self._shape_key: Hashable = None
        self._shape_sink: Callable[[Hashable, str], None] = builder.text_delta
        self._learns = SHAPE_LEARNS
        self.shortcut: Shortcut | None = None

    def _learn(
        self,
        frame: ServerSentEvent,
        value: dict[str, Any],
        path: tuple[str, ...],
        key: Hashable,
        sink: Callable[[Hashable, str], None],
    ) -> None:
        """Remember the layout of a delta just read whole, while learns remain (kit.SHAPE_LEARNS)."""
        if self._learns:
            self._learns -= 1
            self._shape = EventShape.learn(frame.data, value, (path,))
            self._shape_key, self._shape_sink = key, sink
            # For the kit too: the shape path here depends on nothing but the event's name and bytes.
            self.shortcut = Shortcut.of(frame.event, self._shape, sink, key)

    def on_event(self, frame: ServerSentEvent, /) -> None:
        """Apply one event; raises :class:`StreamFailure` for a vendor error or a malformed event."""
        shape = self._shape
        if shape is not None:
            pieces = shape.match(frame.data)
            if pieces is not None:
                self._shape_sink(self._shape_key, pieces[0])
                return
            self._shape = self.shortcut = None
            self._learns += shape.hits > 0  # a learn that paid is given back (kit.SHAPE_LEARNS)
        raw = frame.data
        if raw.endswith(b"]") and raw.strip() == _DONE:
            # message-end is the marker and ends the read: a [DONE] reaching us means it never came.
            raise StreamFailure.of("truncated", "Cohere ended the stream ([DONE]) before message-end")
        if frame.event == "error":
            raise self._event_error(frame)
        data = load_event(raw, VENDOR)
        # The JSON type names the event; a payload without one is named by its event line, if it has one.
        kind = data.get("type") or (frame.event if frame.event != "message" else None)
        builder = self._builder
        if kind == "content-delta":
            # The hot path when no learned shape reads the event (one call per token): index checks inline.
            index = data.get("index")
            block = self._kinds.get(index) if index.__class__ is int else None  # pyright: ignore[reportArgumentType]
            if block is None:
                raise self._unplaced("content-delta", index)
            if block == _SKIP:
                return
            if block == _ENDED:
                raise self._ended("content-delta", index)
            path = _TEXT_PATH if block == _TEXT else _THINKING_PATH
            piece = _piece(data, path, "content-delta")
            if piece.__class__ is str:
                key = ("content", index)
                sink = builder.text_delta if block == _TEXT else builder.thinking_delta
                sink(key, piece)
                self._learn(frame, data, path, key, sink)
            elif piece is not None:
                raise _not_a_string("content-delta", path, piece)
            elif isinstance(_piece(data, _THINKING_PATH if block == _TEXT else _TEXT_PATH, "content-delta"), str):
                raise StreamFailure.protocol(f"Cohere sent a content-delta for block {index}, which is of another kind")
            return  # a delta without its piece adds nothing
        if kind == "tool-call-delta":
            index = data.get("index")
            is_open = self._calls.get(index) if index.__class__ is int else None  # pyright: ignore[reportArgumentType]
            if is_open is None:
                raise self._unplaced("tool-call-delta", index)
            if not is_open:
                raise self._ended("tool-call-delta", index)
            fragment = _piece(data, _ARGUMENTS_PATH, "tool-call-delta")
            if fragment.__class__ is str:
                key = ("call", index)
                builder.tool_call_delta(key, fragment)
                self._learn(frame, data, _ARGUMENTS_PATH, key, builder.tool_call_delta)
            elif fragment is not None:
                raise _not_a_string("tool-call-delta", _ARGUMENTS_PATH, fragment)
            return
        if kind == "tool-plan-delta":
            plan = _piece(data, _PLAN_PATH, "tool-plan-delta")
            if plan.__class__ is str:
                if plan:
                    key = self._open_plan()
                    builder.thinking_delta(key, plan)
                    self._learn(frame, data, _PLAN_PATH, key, builder.thinking_delta)
            elif plan is not None:
                raise _not_a_string("tool-plan-delta", _PLAN_PATH, plan)
            return
        if kind == "content-start":
            self._content_start(data)
        elif kind == "content-end":
            index = data.get("index")
            block = self._kinds.get(index) if index.__class__ is int else None  # pyright: ignore[reportArgumentType]
            if block is None:
                raise self._unplaced("content-end", index)
            if block == _ENDED:
                raise self._ended("content-end", index)
            self._kinds[index] = _ENDED  # pyright: ignore[reportArgumentType] - an int
            if block != _SKIP:
                builder.block_end(("content", index))
        elif kind == "tool-call-start":
            self._tool_call_start(data)
        elif kind == "tool-call-end":
            index = data.get("index")
            is_open = self._calls.get(index) if index.__class__ is int else None  # pyright: ignore[reportArgumentType]
            if is_open is None:
                raise self._unplaced("tool-call-end", index)
            if not is_open:
                raise self._ended("tool-call-end", index)
            self._calls[index] = False  # pyright: ignore[reportArgumentType] - an int
            builder.block_end(("call", index))
        elif kind == "message-start":
            self._message_start(data)
        elif kind == "message-end":
            self._message_end(obj(data.get("delta")))
        elif kind is None and _is_response(data):
            raise StreamFailure.protocol(
                "Cohere sent a non-streaming chat response, not an event stream (the request must say stream: true)"
            )
        elif kind == "error" or (kind is None and ("message" in data or "error_type" in data)):
            raise ERRORS.from_event(data)
        # citation-start/-end, debug and types we do not know carry nothing the message holds.

    def _unplaced(self, what: str, index: object) -> StreamFailure:
        return StreamFailure.protocol(f"Cohere sent a {what} for index {index!r}, which never started")

    def _ended(self, what: str, index: object) -> StreamFailure:
        return StreamFailure.protocol(f"Cohere sent a {what} for index {index!r}, which had already ended")

    def _event_error(self, frame: ServerSentEvent) -> StreamFailure:
        """The failure an ``event: error`` reports: its JSON error object, else its data as Cohere's words
        (a plain-text error must not turn into "malformed JSON" and lose them)."""
        try:
            value: Any = load_event(frame.data, VENDOR)
        except StreamFailure:
            value = None
        if ERRORS.extract(value) is None:
            return ERRORS.from_event(frame.text.strip())
        return ERRORS.from_event(value)

    def _open_plan(self) -> Hashable:
        """The key of the open tool-plan block (a thinking block signed ``tool_plan``), opened if needed."""
        key = self._plan
        if key is None:
            key = self._plan = ("plan", self._plans)
            self._plans += 1
            self._builder.thinking_start(key, signature=TOOL_PLAN)
        return key

    def _close_plan(self) -> None:
        if self._plan is not None:
            self._builder.block_end(self._plan)
            self._plan = None

    def _content_start(self, data: dict[str, Any]) -> None:
        index = data.get("index")
        if index.__class__ is not int:
            raise StreamFailure.protocol(f"Cohere sent a content-start without an index: {index!r}")
        if index in self._kinds:
            raise StreamFailure.protocol(f"Cohere sent a second content-start for index {index!r}")
        content = obj(obj(obj(data.get("delta")).get("message")).get("content"))
        block = _KINDS.get(text(content.get("type")), _SKIP)
        self._kinds[index] = block  # pyright: ignore[reportArgumentType] - an int
        if block == _SKIP:
            return
        self._close_plan()
        key = ("content", index)
        initial = content.get(_FIELDS[block])
        if initial is None:
            initial = ""
        elif initial.__class__ is not str:
            raise _not_a_string("content-start", (_FIELDS[block],), initial)
        if block == _TEXT:
            self._builder.text_start(key, initial)
        else:
            self._builder.thinking_start(key, initial)

    def _tool_call_start(self, data: dict[str, Any]) -> None:
        index = data.get("index")
        call = obj(obj(obj(data.get("delta")).get("message")).get("tool_calls"))
        function = obj(call.get("function"))
        name = function.get("name")
        if index.__class__ is not int:
            raise StreamFailure.protocol(f"Cohere sent a tool-call-start without an index: {index!r}")
        if not isinstance(name, str) or not name:
            raise StreamFailure.protocol(f"Cohere sent a tool call without a name: {call!r:.200}")
        if index in self._calls:
            raise StreamFailure.protocol(f"Cohere sent a second tool-call-start for index {index!r}")
        initial = function.get("arguments")
        if initial is not None and initial.__class__ is not str:
            # Not JSON-encoded into a string: only what Cohere sent as text is parsed (strictly) into
            # arguments, so a call whose arguments came in another form never becomes executable.
            raise _not_a_string("tool-call-start", _ARGUMENTS_PATH, initial)
        self._close_plan()
        self._calls[index] = True  # pyright: ignore[reportArgumentType] - an int
        key = ("call", index)
        self._builder.tool_call_start(key, text(call.get("id")), name)
        if initial:
            self._builder.tool_call_delta(key, initial)

    def _message_start(self, data: dict[str, Any]) -> None:
        if self._started and self._builder.output_started:
            raise StreamFailure.protocol("Cohere sent a second message-start after content had started")
        self._started = True
        response_id = data.get("id")
        self._builder.response(id=response_id if isinstance(response_id, str) else None)

    def _message_end(self, delta: dict[str, Any]) -> None:
        builder = self._builder
        usage = obj(delta.get("usage"))
        if usage:
            self._usage(usage)
        reason = delta.get("finish_reason")
        error = text(delta.get("error")).strip()
        if reason is None and error:
            raise ERRORS.from_event(error)
        if reason is not None:
            if not isinstance(reason, str):
                raise StreamFailure.protocol(f"Cohere sent a finish_reason that is not a string: {reason!r:.200}")
            STOPS.stop(builder, reason, detail=error)
        builder.finish()  # without a finish_reason: a protocol error (the builder says so)

    def _usage(self, usage: dict[str, Any]) -> None:
        tokens = obj(usage.get("tokens")) or obj(usage.get("billed_units"))
        prompt = _count(tokens.get("input_tokens"))
        cached = _count(usage.get("cached_tokens")) or 0
        if prompt is not None:
            cached = min(cached, prompt)
        self._builder.usage(
            input=None if prompt is None else prompt - cached,
            output=_count(tokens.get("output_tokens")),
            cache_read=cached if prompt is not None else None,
            reasoning=_count(tokens.get("reasoning_tokens")),
        )
