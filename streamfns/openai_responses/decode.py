"""OpenAI Responses SSE events → builder calls. Pure: no I/O, no clock.

Output items are decoded by ``output_index`` slot (the builder key), so items that finish out of order
land in the right blocks. How items appear in the normalized message:

- ``reasoning`` → a thinking block. Its text is the reasoning summary (``reasoning_summary_text``
  deltas, parts separated by a blank line) or, from servers that stream raw reasoning (LM Studio,
  OpenRouter, DeepSeek), the ``reasoning_text`` deltas. The whole item as JSON — with its
  ``encrypted_content`` — is the thinking signature, so it can be sent back verbatim; when
  ``output_item.done`` lacks ``encrypted_content`` (Azure), it is taken from the terminal response.
- ``message`` → a text block from ``output_text`` and ``refusal`` deltas; the item id and ``phase``
  are its text signature. A refusal ends the stream as an error of kind ``refusal``, its text kept.
- ``function_call`` → a tool call with id ``"<call_id>|<item_id>"``; ``custom_tool_call`` (grammar
  tools) → a tool call whose arguments are ``{"input": <the raw input>}``.
- Every other item — ``web_search_call``, ``file_search_call``, ``code_interpreter_call``,
  ``mcp_call``, ``mcp_list_tools``, ``image_generation_call``, ``shell_call``, ``local_shell_call``,
  ``computer_call``, ``apply_patch_call``, ``compaction`` … — is built-in tool work the normalized
  message has no block for: it is left out and takes no content index, so the blocks around it keep
  their order.

The payload an item ends with (``function_call_arguments.done``, ``custom_tool_call_input.done``,
``output_item.done``) is authoritative: when it extends what streamed, only the missing suffix is
emitted as a delta (all of it when nothing streamed), so the deltas always add up to the final block.
Tool-call arguments or text that contradict what streamed end the stream as a ``protocol`` error;
reasoning text that does (a summary joined differently) keeps what streamed — the signature carries
the item itself. Deltas after an item ended are ignored: its final payload decided. Deltas (or
final argument and input payloads) for an output item never announced by ``output_item.added`` cannot
be placed: the stream ends as a ``protocol`` error naming the item at its terminal event (the vendor's
own error still wins), never as a ``done`` message with that content missing. A payload aimed at an
item of another kind (a text delta for a function call, arguments for a message) cannot be placed
either: a ``protocol`` error at once. Built-in tool items take no payloads of ours: ones aimed at them
are ignored like the late ones.

Tool calls are executable only when their arguments arrived: a ``function_call`` without a name is a
``protocol`` error, and one that ends (``output_item.done``) or reaches ``response.completed`` without
ever receiving its arguments (no non-empty delta or final payload; a proxy lost them) is a retryable
``truncated`` error rather than a call with ``{}``. Arguments sent as a JSON object rather than a
string are re-encoded; any other type is a ``protocol`` error.

Terminals: ``response.completed`` → ``stop`` (``toolUse`` with a complete call);
``response.incomplete`` → ``length`` for ``max_output_tokens``, otherwise an error (``content_filter``
…); ``response.failed`` and ``error`` events → an error whose kind comes from the vendor's code. A
body that ends (or says ``[DONE]``) before a terminal event is ``truncated``, as is one that starts a
second response. Usage, the service tier and the final reasoning payloads are read from the terminal
response only.

A text delta's layout is learned (:mod:`streamfns.kit.shapes`: its ``delta`` the piece, its running
``sequence_number`` and random ``obfuscation`` holes too) for the kit alone: a read holding only a
delta of that layout is applied to the same block without framing or parsing it (the decoder's
:class:`~streamfns.kit.Shortcut`), until an event other than a text delta is read. The decoder's own
path parses every event: the delta is small, so matching it would cost more than its parse.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, ClassVar, Final

import jiter

from normalize import ErrorInfo, MessageBuilder, Model
from streamfns.kit import (
    SHAPE_LEARNS,
    Decoder,
    EventShape,
    HolePath,
    ServerSentEvent,
    Shortcut,
    StopTable,
    StreamFailure,
    VendorError,
    array,
    int_or_none,
    load_event,
    obj,
    text,
)
from streamfns.openai_responses.errors import ERRORS, extract_error
from streamfns.openai_responses.request import CUSTOM_TOOL_CALL, text_signature

__all__ = ["INCOMPLETE_REASONS", "SERVICE_TIER_COST", "OpenAIResponsesDecoder"]

_VENDOR: Final = "OpenAI Responses"
#: Price multipliers of the processing tiers against the catalog's standard prices (the builder
#: applies them: :meth:`~normalize.MessageBuilder.price_multiplier`).
SERVICE_TIER_COST: Final[dict[str, float]] = {"flex": 0.5, "priority": 2.0}
#: ``incomplete_details.reason`` of a ``response.incomplete``. An unknown reason is the vendor's
#: choice, not a fault a retry is known to fix: ``server``, not retryable.
INCOMPLETE_REASONS: Final = StopTable(
    vendor=_VENDOR,
    stops={"max_output_tokens": "length"},
    errors={"content_filter": "content_filter"},
    unknown="server",
    unknown_retryable=False,
    error_message="{vendor} response incomplete: {raw}",
    unknown_message="{vendor} response incomplete: {raw}",
)

_SKIP, _TEXT, _THINKING, _CALL, _CUSTOM = 0, 1, 2, 3, 4
_KINDS: Final[dict[str, int]] = {
    "message": _TEXT,
    "reasoning": _THINKING,
    "function_call": _CALL,
    "custom_tool_call": _CUSTOM,
}
_INPUT_OPEN: Final = '{"input":"'
_INPUT_CLOSE: Final = '"}'
_PART_SEPARATOR: Final = "\n\n"
_from_json = jiter.from_json  # bound once: looked up per event otherwise
_TEXT_DELTA: Final = "response.output_text.delta"
_Handler = Callable[["OpenAIResponsesDecoder", str, dict[str, Any]], None]


class _Slot:
    """One output item: what kind of block it feeds and what the decoder tracks for it."""

    __slots__ = ("args_final", "key", "kind", "name", "part", "source", "streamed_input")

    def __init__(self, key: int, kind: int) -> None:
        self.key = key  # the output_index: the builder key of the slot's block
        self.kind = kind
        self.args_final = False  # function_call_arguments.done was applied
        self.name = ""  # a tool call's name
        self.part: int | None = None  # the reasoning part the last thinking delta belonged to
        self.source: str | None = None  # "summary" or "content": which reasoning the block shows
        self.streamed_input: list[str] = []  # a custom tool call's raw input, as it streamed


def _escaped(fragment: str) -> str:
    """``fragment`` as the inside of a JSON string."""
    return json.dumps(fragment, ensure_ascii=False)[1:-1]


def _compact(item: dict[str, Any]) -> str:
    return json.dumps(item, ensure_ascii=False, separators=(",", ":"))


def _parts_text(parts: list[Any], kind: str) -> list[str]:
    return [text(obj(part).get("text")) for part in parts if obj(part).get("type", kind) == kind]


class OpenAIResponsesDecoder(Decoder[ServerSentEvent]):
    """Feeds one response's events to a :class:`MessageBuilder` (see the module docstring)."""

    __slots__ = (
        "_builder",
        "_by_item",
        "_dispatch",
        "_learns",
        "_pending_signatures",
        "_raw",
        "_refusal",
        "_response_id",
        "_shape",
        "_shape_key",
        "_slots",
        "_unplaced",
        "_unplaced_count",
        "shortcut",
    )

    def __init__(self, builder: MessageBuilder, model: Model | None = None) -> None:
        del model  # the Responses stream needs nothing from the model
        self._builder = builder
        #: Event type → its handler (bound once: one lookup per event).
        self._dispatch = self._handlers.get
        self._slots: dict[int, _Slot] = {}
        self._by_item: dict[str, int] = {}
        self._response_id: str | None = None
        self._refusal: str | None = None
        # Reasoning blocks whose item ended without encrypted_content: item id -> (builder key, item).
        self._pending_signatures: dict[str, tuple[int, dict[str, Any]]] = {}
        # Payloads for output items never added: the first one (event type, where it pointed) and how
        # many there were. Reported at the terminal event (see the module docstring).
        self._unplaced: tuple[str, str] | None = None
        self._unplaced_count = 0
        # The layout of the last text delta learned and its block, for the kit's shortcut: until an event
        # other than a text delta is read (an item added or done may change what a delta means), a
        # delta whose bytes differ from it only in its holes is text for that block.
        self._shape: EventShape | None = None
        self._shape_key = -1
        self._learns = SHAPE_LEARNS
        #: The event being read whole, when it parsed strictly (only such an event's layout is learned).
        self._raw: ServerSentEvent | None = None
        #: The shape, for the kit (a delta's path here depends on nothing but its bytes and name).
        self.shortcut: Shortcut | None = None

    # -- dispatch ---------------------------------------------------------------------------------

    def on_event(self, sse: ServerSentEvent) -> None:
        """Apply one server-sent event; raises :class:`StreamFailure` for vendor errors."""
        raw = sse.data
        try:
            data: Any = _from_json(raw)
        except ValueError:
            data = None
        strict = data.__class__ is dict
        self._raw = sse if strict else None
        if not strict:  # not plain JSON of an object: repaired, [DONE], or an error
            if raw.strip() == b"[DONE]":
                return  # a proxy's end marker: not a terminal response event (EOF decides)
            data = load_event(raw, _VENDOR)
        kind = data.get("type")
        if type(kind) is not str:
            kind = sse.event
        if kind != _TEXT_DELTA and self._shape is not None:
            self._forget()
        handler = self._dispatch(kind)
        if handler is not None:
            handler(self, kind, data)

    def _text_delta(self, kind: str, data: dict[str, Any]) -> None:
        # One event per token: the slot by output_index without a call (``_slot`` for the rest).
        index = data.get("output_index")
        slot = self._slots.get(index) if type(index) is int else self._slot(data)
        if slot is None:
            self._unannounced(kind, data)
        elif slot.kind == _TEXT:
            delta = data.get("delta")
            self._builder.text_delta(slot.key, delta if type(delta) is str else "")
            shape = self._shape
            if (
                self._learns
                # None yet, one for another block, or one the kit never read by (the reads come
                # several events at a time, or this layout is not that one): learned again.
                and (shape is None or shape.hits == 0 or self._shape_key != slot.key)
                and type(delta) is str
                and self._raw is not None
                and data.get("type") == kind
            ):
                self._learn(self._raw, data, slot.key)
        elif slot.kind != _SKIP:
            raise _misaimed(kind, slot)

    def _forget(self) -> None:
        """Drop the shortcut (see the module docstring); a learn the kit read by is given back."""
        shape = self._shape
        self._shape = self.shortcut = None
        if shape is not None:
            self._learns += shape.hits > 0  # kit.SHAPE_LEARNS

    def _learn(self, sse: ServerSentEvent, data: dict[str, Any], key: int) -> None:
        """Learn the layout of a text delta just applied to block ``key`` (read whole, strictly, its
        type in its bytes: what the shape matches is then read by nothing but its bytes)."""
        if self._shape is not None:
            self._forget()
        self._learns -= 1
        holes: list[HolePath] = [("delta",)]
        if type(data.get("sequence_number")) is int:
            holes.append(("sequence_number",))
        if type(data.get("obfuscation")) is str:
            holes.append(("obfuscation",))
        self._shape = EventShape.learn(sse.data, data, holes)
        self._shape_key = key
        self.shortcut = Shortcut.of(sse.event, self._shape, self._builder.text_delta, key)

    def _arguments_delta(self, kind: str, data: dict[str, Any]) -> None:
        # One event per token: the slot by output_index without a call (``_slot`` for the rest).
        index = data.get("output_index")
        slot = self._slots.get(index) if type(index) is int else self._slot(data)
        if slot is None:
            self._unannounced(kind, data)
        elif slot.kind == _CALL:
            delta = data.get("delta")
            self._builder.tool_call_delta(slot.key, delta if type(delta) is str else "")
        elif slot.kind != _SKIP:
            raise _misaimed(kind, slot)

    def _summary_delta(self, kind: str, data: dict[str, Any]) -> None:
        self._thinking_delta(kind, data, "summary", "summary_index")

    def _reasoning_text_delta(self, kind: str, data: dict[str, Any]) -> None:
        self._thinking_delta(kind, data, "content", "content_index")

    def _refusal_delta(self, kind: str, data: dict[str, Any]) -> None:
        slot = self._slot(data)
        if slot is None:
            self._unannounced(kind, data)
        elif slot.kind == _TEXT:
            if self._refusal is None:
                self._refusal = ""
            self._builder.text_delta(slot.key, text(data.get("delta")))
        elif slot.kind != _SKIP:
            raise _misaimed(kind, slot)

    def _input_delta(self, kind: str, data: dict[str, Any]) -> None:
        slot = self._slot(data)
        if slot is None:
            self._unannounced(kind, data)
        elif slot.kind == _CUSTOM:
            fragment = text(data.get("delta"))
            slot.streamed_input.append(fragment)
            self._builder.tool_call_delta(slot.key, _escaped(fragment))
        elif slot.kind != _SKIP:
            raise _misaimed(kind, slot)

    def _input_done(self, kind: str, data: dict[str, Any]) -> None:
        slot = self._slot(data)
        if slot is None:
            self._unannounced(kind, data)
        elif slot.kind == _CUSTOM:
            self._settle_input(slot, text(data.get("input")))
        elif slot.kind != _SKIP:
            raise _misaimed(kind, slot)

    def _item_added_event(self, kind: str, data: dict[str, Any]) -> None:
        del kind
        self._item_added(data)

    def _item_done_event(self, kind: str, data: dict[str, Any]) -> None:
        del kind
        self._item_done(data)

    def _lifecycle_event(self, kind: str, data: dict[str, Any]) -> None:
        self._lifecycle(kind, obj(data.get("response")))

    def _terminal_event(self, kind: str, data: dict[str, Any]) -> None:
        self._terminal(kind, obj(data.get("response")))

    def _error_event(self, kind: str, data: dict[str, Any]) -> None:
        del kind
        raise ERRORS.from_event(data)

    def on_eof(self) -> None:
        """The body ended before a terminal response event: nothing to conclude (the kit reports
        ``truncated``)."""

    # -- slots ------------------------------------------------------------------------------------

    def _slot(self, data: dict[str, Any]) -> _Slot | None:
        """The slot an event names by ``output_index`` (or, from servers that omit it, by
        ``item_id``); None when no item was added there."""
        index = data.get("output_index")
        if type(index) is not int:
            index = self._by_item.get(text(data.get("item_id")))
            if index is None:
                return None
        return self._slots.get(index)

    def _unannounced(self, kind: str, data: dict[str, Any]) -> None:
        """Note a payload for an output item never added (reported at the terminal event)."""
        self._unplaced_count += 1
        if self._unplaced is None:
            index = data.get("output_index")
            if type(index) is int:
                where = f"output_index {index}"
            else:
                item_id = data.get("item_id")
                where = f"item_id {item_id[:64]!r}" if isinstance(item_id, str) and item_id else "no output_index"
            self._unplaced = (kind, where)

    def _check_unplaced(self) -> None:
        """Fail closed: content sent for an item never announced would otherwise be missing from a
        message that ends ``done``."""
        if self._unplaced is None:
            return
        kind, where = self._unplaced
        count = self._unplaced_count
        raise StreamFailure.protocol(
            f"{_VENDOR} sent {count} payload{'s' if count != 1 else ''} for an output item it never announced "
            f"with response.output_item.added (first: {kind} for {where}); that content cannot be placed"
        )

    def _check_calls_received(self) -> None:
        """A function call whose arguments never arrived must not run with ``{}`` (see the module
        docstring): nothing streamed and no final payload carried any."""
        builder = self._builder
        for index in sorted(self._slots):
            slot = self._slots[index]
            if slot.kind == _CALL and not builder.streamed(index):
                raise self._arguments_missing(slot, "completed the response")

    def _arguments_missing(self, slot: _Slot, when: str) -> StreamFailure:
        return StreamFailure.of(
            "truncated",
            f"{_VENDOR} {when} before the arguments of function call {slot.name!r} (output item {slot.key}) arrived",
        )

    def _arguments_of(self, value: object, index: int) -> str:
        """A function call's ``arguments`` payload as raw JSON: a string as sent, an object (some
        servers send one) re-encoded, absent as ``""``; anything else cannot be arguments."""
        if value is None or type(value) is str:
            return value or ""
        if type(value) is dict:
            return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        raise StreamFailure.protocol(
            f"{_VENDOR} sent arguments for output item {index} that are neither a JSON string nor an object: "
            f"{type(value).__name__}"
        )

    def _item_added(self, data: dict[str, Any]) -> None:
        index = data.get("output_index")
        item = obj(data.get("item"))
        if type(index) is not int or index < 0:
            raise StreamFailure.protocol(f"{_VENDOR} sent an output item without a valid output_index: {index!r}")
        if index in self._slots:
            raise StreamFailure.protocol(f"{_VENDOR} added output item {index} twice")
        self._open(index, item)

    def _open(self, index: int, item: dict[str, Any]) -> _Slot:
        kind = _KINDS.get(text(item.get("type")), _SKIP)
        item_id = text(item.get("id"))
        slot = _Slot(index, kind)
        self._slots[index] = slot
        if item_id:
            self._by_item.setdefault(item_id, index)
        builder = self._builder
        if kind == _TEXT:
            builder.text_start(index)
        elif kind == _THINKING:
            builder.thinking_start(index)
        elif kind == _CALL:
            call_id = text(item.get("call_id"))
            tool_id = f"{call_id}|{item_id}" if call_id and item_id else call_id
            slot.name = self._call_name(index, item)
            builder.tool_call_start(index, tool_id, slot.name)
            initial = self._arguments_of(item.get("arguments"), index)
            if initial:
                builder.tool_call_delta(index, initial)
        elif kind == _CUSTOM:
            call_id = text(item.get("call_id"))
            tool_id = f"{call_id}|{item_id}" if call_id and item_id else call_id
            slot.name = self._call_name(index, item)
            # Marked so that a replay to the same model sends it back as the custom call it was.
            builder.tool_call_start(index, tool_id, slot.name, thought_signature=CUSTOM_TOOL_CALL)
            initial = text(item.get("input"))
            builder.tool_call_delta(index, _INPUT_OPEN + _escaped(initial))
            if initial:
                slot.streamed_input.append(initial)
        return slot

    def _call_name(self, index: int, item: dict[str, Any]) -> str:
        """A tool call's name; a call without one could never run the right tool: ``protocol``."""
        name = text(item.get("name"))
        if not name:
            raise StreamFailure.protocol(f"{_VENDOR} started a tool call without a name (output item {index})")
        return name

    # -- deltas and final payloads ----------------------------------------------------------------

    def _thinking_delta(self, kind: str, data: dict[str, Any], source: str, part_field: str) -> None:
        slot = self._slot(data)
        if slot is None:
            self._unannounced(kind, data)
            return
        if slot.kind != _THINKING:
            if slot.kind != _SKIP:
                raise _misaimed(kind, slot)
            return
        if slot.source is None:
            slot.source = source
        elif slot.source != source:
            return  # a server streaming both summary and raw reasoning: the block shows the first
        delta = text(data.get("delta"))
        if not delta:
            return
        part = int_or_none(data.get(part_field))
        key = slot.key
        if slot.part is not None and part != slot.part and self._builder.streamed(key):
            self._builder.thinking_delta(key, _PART_SEPARATOR)
        slot.part = part
        self._builder.thinking_delta(key, delta)

    def _settle_text(self, key: int, final: str, *, strict: bool, what: str) -> None:
        """Bring the open text or thinking block to the item's ``final`` text (see the module docstring)."""
        builder = self._builder
        streamed = builder.streamed(key)
        if streamed is None or final == streamed:
            return
        if final.startswith(streamed):
            suffix = final[len(streamed) :]
            if what == "text":
                builder.text_delta(key, suffix)
            else:
                builder.thinking_delta(key, suffix)
        elif strict and final:
            raise StreamFailure.protocol(
                f"{_VENDOR} ended output item {key} with {what} that contradicts what it streamed "
                f"({len(streamed)} characters streamed, {len(final)} final)"
            )

    def _settle_arguments(self, key: int, final: str, *, authoritative: bool) -> None:
        builder = self._builder
        streamed = builder.streamed(key)
        if streamed is None or not final or final == streamed:
            return  # an empty final payload never overwrites what streamed
        if final.startswith(streamed):
            builder.tool_call_delta(key, final[len(streamed) :])
            return
        if _same_json(streamed, final) or not authoritative:
            # Whitespace or key order differ, or an output_item.done echo after the authoritative
            # .done (LM Studio sends "{}" there): what streamed stands.
            return
        raise StreamFailure.protocol(
            f"{_VENDOR} ended the arguments of output item {key} with JSON that contradicts what it streamed"
        )

    def _arguments_done(self, kind: str, data: dict[str, Any]) -> None:
        slot = self._slot(data)
        if slot is None:
            self._unannounced(kind, data)
            return
        if slot.kind != _CALL:
            if slot.kind != _SKIP:
                raise _misaimed(kind, slot)
            return
        self._settle_arguments(slot.key, self._arguments_of(data.get("arguments"), slot.key), authoritative=True)
        slot.args_final = True

    def _settle_input(self, slot: _Slot, final: str) -> None:
        key = slot.key
        streamed = "".join(slot.streamed_input)
        if not final or final == streamed:
            return
        if not final.startswith(streamed):
            raise StreamFailure.protocol(
                f"{_VENDOR} ended the input of tool call {key} with text that contradicts its deltas"
            )
        suffix = final[len(streamed) :]
        slot.streamed_input[:] = [final]
        self._builder.tool_call_delta(key, _escaped(suffix))

    def _item_done(self, data: dict[str, Any]) -> None:
        index = data.get("output_index")
        item = obj(data.get("item"))
        if type(index) is not int or index < 0:
            raise StreamFailure.protocol(f"{_VENDOR} ended an output item without a valid output_index: {index!r}")
        slot = self._slots.get(index)
        if slot is None:
            # Never added: a server that sends items whole. Start it here and end it at once.
            slot = self._open(index, item)
        kind = slot.kind
        if kind == _SKIP:
            return
        slot.kind = _SKIP  # late deltas for an ended item are ignored
        builder = self._builder
        if kind == _TEXT:
            self._message_done(index, item)
        elif kind == _THINKING:
            self._reasoning_done(index, slot, item)
        elif kind == _CALL:
            if not slot.args_final:
                self._settle_arguments(index, self._arguments_of(item.get("arguments"), index), authoritative=True)
            if not builder.streamed(index):
                raise self._arguments_missing(slot, "ended")
            builder.block_end(index)
        else:
            self._settle_input(slot, text(item.get("input")))
            builder.tool_call_delta(index, _INPUT_CLOSE)
            builder.block_end(index)

    def _message_done(self, index: int, item: dict[str, Any]) -> None:
        pieces: list[str] = []
        refused = False
        for part in array(item.get("content")):
            fields = obj(part)
            if fields.get("type") == "refusal":
                refused = True
                pieces.append(text(fields.get("refusal")))
            else:
                pieces.append(text(fields.get("text")))
        final = "".join(pieces)
        self._settle_text(index, final, strict=True, what="text")
        builder = self._builder
        if refused:
            self._refusal = builder.streamed(index) or final
        item_id = text(item.get("id"))
        if item_id:
            phase = item.get("phase")
            builder.block_signature(index, text_signature(item_id, phase if isinstance(phase, str) else None))
        builder.block_end(index)

    def _reasoning_done(self, index: int, slot: _Slot, item: dict[str, Any]) -> None:
        summary = [part for part in _parts_text(array(item.get("summary")), "summary_text") if part]
        content = [part for part in _parts_text(array(item.get("content")), "reasoning_text") if part]
        if slot.source == "content" or (slot.source is None and not summary):
            summary = content
        self._settle_text(index, _PART_SEPARATOR.join(summary), strict=False, what="thinking")
        builder = self._builder
        builder.block_signature(index, _compact(item))
        builder.block_end(index)
        encrypted = item.get("encrypted_content")
        item_id = text(item.get("id"))
        if item_id and not (isinstance(encrypted, str) and encrypted):
            self._pending_signatures[item_id] = (index, item)

    # -- response lifecycle -----------------------------------------------------------------------

    def _lifecycle(self, kind: str, response: dict[str, Any]) -> None:
        response_id = response.get("id")
        if not isinstance(response_id, str) or not response_id:
            return
        if self._response_id is None:
            self._response_id = response_id
            served_by = response.get("model")
            self._builder.response(id=response_id, model=served_by if isinstance(served_by, str) else None)
        elif kind == "response.created" and response_id != self._response_id:
            raise StreamFailure.of(
                "truncated", f"{_VENDOR} started response {response_id} before response {self._response_id} ended"
            )

    def _terminal(self, kind: str, response: dict[str, Any]) -> None:
        builder = self._builder
        self._lifecycle(kind, response)
        self._usage(obj(response.get("usage")))
        self._backfill(array(response.get("output")))
        status = response.get("status")
        if kind == "response.failed" or status in ("failed", "cancelled"):
            error = extract_error(obj(response.get("error"))) or VendorError(
                message=f"the response {status or 'failed'} without error details"
            )
            raise ERRORS.from_event(error)
        tier = response.get("service_tier")
        if isinstance(tier, str) and tier:
            builder.response(service_tier=tier)
            multiplier = SERVICE_TIER_COST.get(tier)
            if multiplier is not None:
                builder.price_multiplier(multiplier)
        self._check_unplaced()
        if kind == "response.incomplete" or status == "incomplete":
            self._incomplete(obj(response.get("incomplete_details")).get("reason"))
        elif self._refusal is not None:
            builder.stop(
                "refusal", "error", error=ErrorInfo.of("refusal"), error_message=self._refusal or "the model refused"
            )
        else:
            self._check_calls_received()
            builder.stop(status if isinstance(status, str) and status else "completed", "stop")
        builder.finish()

    def _incomplete(self, reason: object) -> None:
        told = reason if isinstance(reason, str) and reason else ""
        mapping = INCOMPLETE_REASONS.map(
            told, message=None if told else f"{_VENDOR} response incomplete: no reason given"
        )
        self._builder.stop(
            f"incomplete.{told}" if told else "incomplete",
            mapping.reason,
            error=mapping.error,
            error_message=mapping.message,
        )

    def _usage(self, usage: dict[str, Any]) -> None:
        if not usage:
            return
        details = obj(usage.get("input_tokens_details"))
        cached = max(0, int_or_none(details.get("cached_tokens")) or 0)
        written = max(0, int_or_none(details.get("cache_write_tokens")) or 0)
        total_input = int_or_none(usage.get("input_tokens"))
        if total_input is not None:
            # Cache reads and writes are parts of the input, never more than it (a broken server).
            total_input = max(0, total_input)
            cached = min(cached, total_input)
            written = min(written, total_input - cached)
        output = int_or_none(usage.get("output_tokens"))
        # A breakdown of output: the builder keeps it within the output (also when a server sends it
        # without output_tokens).
        reasoning = int_or_none(obj(usage.get("output_tokens_details")).get("reasoning_tokens"))
        self._builder.usage(
            input=total_input - cached - written if total_input is not None else None,
            output=output,
            cache_read=cached,
            cache_write=written,
            reasoning=reasoning,
        )

    def _backfill(self, output: list[Any]) -> None:
        """Give reasoning blocks whose item ended without ``encrypted_content`` the one in the final
        response (Azure sends it only there)."""
        if not self._pending_signatures:
            return
        for entry in output:
            item = obj(entry)
            pending = self._pending_signatures.pop(text(item.get("id")), None)
            encrypted = item.get("encrypted_content")
            if pending is None or not isinstance(encrypted, str) or not encrypted:
                continue
            key, streamed_item = pending
            self._builder.late_signature(key, _compact({**streamed_item, "encrypted_content": encrypted}))

    #: Event type → what applies it. Types not listed (``response.output_text.done``, annotations,
    #: built-in tool progress …) carry nothing the message holds: what ends an item is its
    #: ``output_item.done``.
    _handlers: ClassVar[dict[str, _Handler]] = {
        "response.output_text.delta": _text_delta,
        "response.function_call_arguments.delta": _arguments_delta,
        "response.reasoning_summary_text.delta": _summary_delta,
        "response.reasoning_text.delta": _reasoning_text_delta,
        "response.refusal.delta": _refusal_delta,
        "response.output_item.added": _item_added_event,
        "response.output_item.done": _item_done_event,
        "response.function_call_arguments.done": _arguments_done,
        "response.custom_tool_call_input.delta": _input_delta,
        "response.custom_tool_call_input.done": _input_done,
        "response.created": _lifecycle_event,
        "response.in_progress": _lifecycle_event,
        "response.queued": _lifecycle_event,
        "response.completed": _terminal_event,
        "response.incomplete": _terminal_event,
        "response.failed": _terminal_event,
        "error": _error_event,
    }


_KIND_NAMES: Final = {
    _TEXT: "a message",
    _THINKING: "a reasoning item",
    _CALL: "a function call",
    _CUSTOM: "a custom tool call",
}


def _misaimed(kind: str, slot: _Slot) -> StreamFailure:
    """A payload aimed at an output item of another kind (a text delta for a function call …): it
    cannot be placed, and dropping it would end a shortened message ``done``."""
    return StreamFailure.protocol(
        f"{_VENDOR} sent {kind} for output item {slot.key}, which is {_KIND_NAMES.get(slot.kind, 'another kind')}"
    )


def _same_json(a: str, b: str) -> bool:
    try:
        return bool(json.loads(a) == json.loads(b))
    except ValueError:
        return False
