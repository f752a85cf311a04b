"""``MessageBuilder``: the one place that emits assistant-message events.

Decoders translate vendor events into builder calls; the builder owns the partial message, maps
vendor keys (an Anthropic block index, an OpenAI tool-call index, a Responses ``output_index``) to
content indexes, and emits events that satisfy the grammar G1–G7 by construction. Its verbs mirror
the events they emit: ``text_start``/``text_delta``, ``thinking_start``/``thinking_delta``,
``tool_call_start``/``tool_call_delta``, ``block_end``, ``tool_call`` (a call that arrived whole), then
``stop`` and ``finish`` (``done``) or ``fail``/``abort`` (``error``). Verbs that emit nothing record
what the vendor said about the response: ``response`` (its id, model and service tier), ``usage``
(token counts, priced at the model's rates times ``price_multiplier``), ``block_signature`` and
``late_signature`` (a block's opaque signature).
A decoder speaks only these verbs: it never reaches into :attr:`MessageBuilder.message`. The guarantees:

- ``start`` is emitted once, before anything else — also when the call fails before any byte;
- a block starts at ``len(message.content)``; deltas and ends go only to open blocks of their kind;
- ``done`` ends every open block first; ``error`` leaves incomplete blocks open (no invented ends);
- usage keeps its contract: counts are clamped to ``0 … 2**53 - 1`` and ``reasoning`` (a breakdown of
  ``output``) is never more than ``output``;
- tool-call arguments are strictly parsed once, at the block's end. A call whose JSON is incomplete
  never reaches ``done`` with ``toolUse``: the stream ends ``length`` if the vendor said so, otherwise
  ``error`` of kind ``truncated``;
- what the builder cannot place safely is a ``protocol`` error, never a silent drop or an invented
  value: argument fragments for a tool call that was never started, initial arguments that are not
  a JSON object, a block started twice, content of one kind sent to a block of another, a mapped
  stop reason outside ``stop|length|toolUse|error|aborted``.

Generated tool-call ids (for vendors that send none) are derived from the response id and the
content index, so two replays of one recording give identical events.

Cost is linear in the stream: a delta is kept as a piece, and the pieces are joined onto the block
once per :meth:`drain` (or when :attr:`message` or :meth:`streamed` is read), tool arguments keep a
raw fragment buffer whose best-effort preview is re-parsed only when the buffer has doubled since
the last preview (so all previews together parse about twice the final arguments). Arguments that
need repair (raw control characters) are repaired incrementally, each character once.

Events accumulate in :attr:`events`; the adapter hands them to the stream with :meth:`drain`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable
from typing import Any, cast, get_args

from normalize._growing import growing, settle, start_growing
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
from normalize.model import Model, ModelCost
from normalize.partial_json import (
    ArgumentsError,
    JsonRepairer,
    arguments_round_trip,
    arguments_text,
    parse_strict,
    partial_object,
)
from normalize.usage import Cost, calculate_cost

__all__ = ["MessageBuilder"]

#: The preview of growing tool arguments is refreshed when the buffer has grown by this factor.
_PREVIEW_GROWTH = 2.0
#: Stop reasons a decoder may map a vendor's reason to (``pending`` is not a stop).
_STOP_REASONS = frozenset(reason for reason in get_args(StopReason) if reason != "pending")
#: Token counts above this are not counts (a hostile or broken server); they are capped.
_MAX_TOKENS = 2**53 - 1
#: A preview threshold no buffer reaches.
_NEVER = 2**63
_INF = float("inf")
_new = object.__new__  # the hot delta events are made field by field (see text_delta)


#: Text and thinking blocks while they stream: their text is the list of its pieces, joined when read
#: (appending each delta to a string copies the whole text each time: quadratic; see normalize._growing).
_GrowingText = growing(TextContent, "text")
_GrowingThinking = growing(ThinkingContent, "thinking")


class _TextState:
    __slots__ = ("block", "index", "pieces")

    def __init__(self, index: int, block: TextContent) -> None:
        self.index = index
        self.block = block
        #: The block's pieces: each delta is appended here (the block reads them joined).
        self.pieces: list[str] = start_growing(block, _GrowingText, block.text)


class _ThinkingState:
    __slots__ = ("block", "index", "pieces")

    def __init__(self, index: int, block: ThinkingContent) -> None:
        self.index = index
        self.block = block
        self.pieces: list[str] = start_growing(block, _GrowingThinking, block.thinking)


class _ToolState:
    __slots__ = (
        "block",
        "error",
        "index",
        "initial",
        "length",
        "next_preview",
        "parts",
        "repaired",
        "repaired_upto",
        "repairer",
    )

    def __init__(self, index: int, block: ToolCall, initial: dict[str, Any] | None) -> None:
        self.index = index
        self.block = block
        self.initial = initial
        self.parts: list[str] = []
        self.length = 0
        self.next_preview = 1
        self.error: ArgumentsError | None = None
        # Set once the arguments turned out to need repair: the repaired text so far, and how much
        # of the raw text it covers. Repair then continues from there, never from the start.
        self.repairer: JsonRepairer | None = None
        self.repaired = ""
        self.repaired_upto = 0

    def raw(self) -> str:
        parts = self.parts
        if len(parts) > 1:
            parts[:] = ["".join(parts)]
        return parts[0] if parts else ""

    def _repaired(self, raw: str) -> str:
        repairer = self.repairer
        if repairer is None:
            repairer = self.repairer = JsonRepairer()
        if self.repaired_upto < len(raw):
            self.repaired += repairer.feed(raw[self.repaired_upto :])
            self.repaired_upto = len(raw)
        return self.repaired

    def preview(self) -> dict[str, Any]:
        """Best-effort arguments from what has arrived (never raises)."""
        raw = self.raw()
        if not raw:
            return {}
        if self.repairer is None:
            preview = partial_object(raw)
            if preview is not None:
                return preview
        return partial_object(self._repaired(raw)) or {}

    def final(self) -> dict[str, Any]:
        """The strictly parsed arguments; raises :class:`ArgumentsError` when they are not complete JSON."""
        raw = self.raw()
        if self.repairer is None:
            try:
                return parse_strict(raw)
            except ArgumentsError:
                pass
        repaired = self._repaired(raw)
        tail = self.repairer.finish() if self.repairer is not None else ""
        return parse_strict(repaired + tail)


_BlockState = _TextState | _ThinkingState | _ToolState


class MessageBuilder:
    """Builds one assistant message and its events (see the module docstring for the guarantees).

    Calls made after the terminal event are ignored, so a decoder never has to guard them.
    """

    __slots__ = (
        "_ended",
        "_ids",
        "_message",
        "_model",
        "_open",
        "_output_started",
        "_price_multiplier",
        "_started",
        "_stop",
        "_stop_error",
        "_tools",
        "_whole_calls",
        "events",
        "finished",
    )

    def __init__(self, model: Model | None = None, *, message: AssistantMessage | None = None) -> None:
        self._model = model
        self._message = message if message is not None else AssistantMessage.empty_for(model)
        #: Events emitted since the last :meth:`drain`.
        self.events: list[AssistantMessageEvent] = []
        self._open: dict[Hashable, _BlockState] = {}
        #: The last block ended under each key, for a signature that arrives after the block's end.
        self._ended: dict[Hashable, _BlockState] = {}
        self._price_multiplier = 1.0
        #: The calls streamed in parts (None until the first: most messages have none, and a stream's
        #: objects stay in the collector's sight for its whole life).
        self._tools: list[_ToolState] | None = None
        #: Calls that arrived whole (:meth:`tool_call`): complete from the start, never open.
        self._whole_calls = 0
        #: Every tool-call id given out, so a duplicate is told apart in one lookup (None: none yet).
        self._ids: set[str] | None = None
        self._started = False
        #: True once a terminal event has been emitted (read it; the builder sets it). A plain
        #: attribute, not a property: the kit reads it after every event.
        self.finished = False
        self._output_started = False
        self._stop: StopReason | None = None
        self._stop_error: tuple[ErrorInfo, str] | None = None
        if message is None:
            self._basis_cost()

    def _basis_cost(self) -> None:
        """A model not billed per token says so before any usage arrives: a stream that reports none
        still has an unknown (or free, or plan-paid) cost, never a metered $0. Reads only the basis
        (the rates are checked later, by the request checks)."""
        cost = getattr(self._model, "cost", None)
        if isinstance(cost, ModelCost) and cost.basis in ("free", "subscription", "unknown"):
            self._message.usage.cost = Cost(basis=cost.basis)

    # -- lifecycle --------------------------------------------------------------------------------

    @property
    def output_started(self) -> bool:
        """True once any content block has started."""
        return self._output_started

    @property
    def message(self) -> AssistantMessage:
        """The message being built, current up to the last verb (the events' ``partial``)."""
        return self._message

    def drain(self) -> list[AssistantMessageEvent]:
        """Return the events emitted since the last call, and forget them; the message they carry
        holds every delta among them."""
        events = self.events
        self.events = []
        return events

    def reset_for_retry(self) -> bool:
        """Forget what a failed attempt recorded (usage, ids, model, stop) so the request can be retried.

        Only possible before any content block started and before a terminal; returns whether the
        builder was reset. ``start`` stays emitted: a retried call still has exactly one.
        """
        if self._output_started or self.finished:
            return False
        message = self._message
        message.usage = type(message.usage)()
        self._basis_cost()
        message.response_id = None
        message.response_model = None
        message.raw_stop_reason = None
        message.service_tier = None
        self._price_multiplier = 1.0
        self._stop = None
        self._stop_error = None
        return True

    def start(self) -> None:
        """Emit ``start`` (once)."""
        if not self._started and not self.finished:
            self._started = True
            self.events.append(StartEvent(self._message))

    def response(self, *, id: str | None = None, model: str | None = None, service_tier: str | None = None) -> None:
        """Record what the vendor says about the response: its id, the model that served it, its
        processing tier. Each non-empty value given replaces the one recorded; ``None`` or ``""``
        leaves it alone. Emits nothing: the values travel with the message."""
        message = self._message
        if id:
            message.response_id = id
        if model:
            message.response_model = model
        if service_tier:
            message.service_tier = service_tier

    @property
    def response_id(self) -> str | None:
        """The response id recorded so far (see :meth:`response`)."""
        return self._message.response_id

    def is_open(self, key: Hashable) -> bool:
        """True while ``key`` names an open block."""
        return key in self._open

    def streamed(self, key: Hashable) -> str | None:
        """What the open block for ``key`` holds so far: the text of a text or thinking block, the raw
        argument JSON of a tool call (as its fragments arrived); None when ``key`` names no open block.

        For vendors that close a block with an authoritative final payload: a decoder compares it with
        what streamed and sends only the missing suffix, so the deltas still add up (G4).
        """
        state = self._open.get(key)
        if state is None:
            return None
        if type(state) is _TextState:
            return state.block.text
        if type(state) is _ThinkingState:
            return state.block.thinking
        assert type(state) is _ToolState
        return state.raw()

    # -- text and thinking ------------------------------------------------------------------------

    def text_start(self, key: Hashable, initial: str = "") -> None:
        """Open a text block for ``key``; ``initial`` text (if any) is emitted as its first delta."""
        if self.finished or not self._claim(key):
            return
        block = TextContent()
        self._open[key] = _TextState(self._append_block(block), block)
        self.events.append(TextStartEvent(len(self._message.content) - 1, self._message))
        if initial:
            self.text_delta(key, initial)

    def text_delta(self, key: Hashable, delta: str) -> None:
        """Append ``delta`` to the text block for ``key``, opening it first if needed; an empty delta
        never opens a block (a chunk whose ``content`` is ``""`` is not a text part)."""
        state = self._open.get(key)
        if state is None:
            if self.finished or not delta:
                return
            self.text_start(key)
            state = self._open[key]
        if type(state) is not _TextState:
            self._kind_mismatch(key, "text")
            return
        if delta:
            state.pieces.append(delta)
            # One event per token, made field by field: calling the class runs the dataclass's
            # __init__ in a frame of its own, which costs about half as much again. Every field is
            # set, as __init__ sets them (a test checks the events equal the class's).
            event = _new(TextDeltaEvent)
            event.content_index = state.index
            event.delta = delta
            event.partial = self._message
            event.type = "text_delta"
            self.events.append(event)

    def thinking_start(
        self, key: Hashable, initial: str = "", *, signature: str | None = None, redacted: bool = False
    ) -> None:
        """Open a thinking block; a redacted block carries its opaque payload in ``signature``."""
        if self.finished or not self._claim(key):
            return
        block = ThinkingContent(thinking_signature=signature, redacted=redacted)
        self._open[key] = _ThinkingState(self._append_block(block), block)
        self.events.append(ThinkingStartEvent(len(self._message.content) - 1, self._message))
        if initial:
            self.thinking_delta(key, initial)

    def thinking_delta(self, key: Hashable, delta: str) -> None:
        """Append ``delta`` to the thinking block for ``key``, opening it first if needed; an empty
        delta never opens a block."""
        state = self._open.get(key)
        if state is None:
            if self.finished or not delta:
                return
            self.thinking_start(key)
            state = self._open[key]
        if type(state) is not _ThinkingState:
            self._kind_mismatch(key, "thinking")
            return
        if delta:
            state.pieces.append(delta)
            event = _new(ThinkingDeltaEvent)
            event.content_index = state.index
            event.delta = delta
            event.partial = self._message
            event.type = "thinking_delta"
            self.events.append(event)

    def block_signature(self, key: Hashable, signature: str, *, append: bool = False) -> None:
        """Set (or extend) the signature of the open thinking or text block for ``key`` (the thought
        signature of a tool call); unknown keys are ignored."""
        state = self._open.get(key)
        if type(state) is _ThinkingState:
            block = state.block
            block.thinking_signature = (block.thinking_signature or "") + signature if append else signature
        elif type(state) is _TextState:
            text_block = state.block
            text_block.text_signature = (text_block.text_signature or "") + signature if append else signature
        elif type(state) is _ToolState:
            call = state.block
            call.thought_signature = (call.thought_signature or "") + signature if append else signature

    def late_signature(self, key: Hashable, signature: str) -> None:
        """Set the signature of the block for ``key`` after it ended (open blocks take it too), for a
        vendor that sends it only with the final response. The block's end event has gone out: the
        signature travels with the final message. Unknown keys are ignored."""
        if self.finished:
            return
        if key in self._open:
            self.block_signature(key, signature)
            return
        state = self._ended.get(key)
        if type(state) is _ThinkingState:
            state.block.thinking_signature = signature
        elif type(state) is _TextState:
            state.block.text_signature = signature
        elif type(state) is _ToolState:
            state.block.thought_signature = signature

    # -- tool calls -------------------------------------------------------------------------------

    def tool_call_start(
        self,
        key: Hashable,
        id: str,
        name: str,
        *,
        arguments: object = None,
        thought_signature: str | None = None,
        preview: dict[str, Any] | None = None,
    ) -> None:
        """Open a tool call. ``arguments`` is an initial payload, kept if no fragments follow; it must
        be a JSON object (a dict) — anything else is a ``protocol`` error, never an empty call.

        ``preview`` is a live view of the arguments that the adapter keeps current itself while the
        fragments arrive (it assembles them from structured pieces, so it knows them better than a
        re-parse of the text would): the message shows it instead of re-parsing the fragments. The
        strict parse at the block's end decides the final arguments all the same.

        An empty ``id`` gets one derived from the response id and the content index.
        """
        if self.finished:
            return
        if arguments is not None and not isinstance(arguments, dict):
            self.fail(
                ErrorInfo.of("protocol"),
                f"the provider started tool call {name!r} with arguments that are not a JSON object: "
                f"{type(arguments).__name__}",
            )
            return
        if not self._claim(key):
            return
        initial = dict(cast("dict[str, Any]", arguments)) if arguments else None
        index = len(self._message.content)
        # The arguments are given, not left to the field's default factory (a generic alias, which is
        # several times slower to call than ``dict``): one tool call is one block on the hot path.
        block = ToolCall(
            id=self._unique_id(id, index),
            name=name,
            arguments=dict(initial) if initial else {},
            thought_signature=thought_signature,
        )
        state = _ToolState(index, block, initial)
        if preview is not None:
            block.arguments = preview
            state.next_preview = _NEVER  # the adapter keeps the preview: no re-parse
        self._append_block(block)
        self._open[key] = state
        if self._tools is None:
            self._tools = []
        self._tools.append(state)
        self.events.append(ToolCallStartEvent(index, self._message))

    def tool_call(
        self, key: Hashable, id: str, name: str, arguments: object, *, thought_signature: str | None = None
    ) -> None:
        """A tool call that arrived whole, its arguments an already-parsed JSON object (Ollama's calls,
        Gemini's ``functionCall``): its start, the arguments as one delta of compact JSON and its end,
        emitted at once; the message holds the strict parse of that delta, as for a streamed call.

        ``arguments`` that are not a dict, or that JSON cannot carry (``NaN``, infinities, a value that
        is not JSON), are a ``protocol`` error before the call enters the message: no tool meets them
        and no empty call stands in for them. ``key`` is checked like a streamed call's (a key that
        names an open block is a ``protocol`` error) and is not kept open. An empty ``id`` gets one
        derived from the response id and the content index.
        """
        if self.finished:
            return
        if not isinstance(arguments, dict):
            self.fail(
                ErrorInfo.of("protocol"),
                f"the provider sent tool call {name!r} with arguments that are not a JSON object: "
                f"{type(arguments).__name__}",
            )
            return
        try:
            # The message holds the parse of the delta it sends, as for a streamed call: a fresh object
            # no decoder can change afterwards, and exactly JSON whatever a decoder handed over.
            text, final = arguments_round_trip(arguments)  # pyright: ignore[reportUnknownArgumentType] - a dict
        except ArgumentsError as exc:
            self.fail(ErrorInfo.of("protocol"), f"the provider sent tool call {name!r}: {exc}")
            return
        if not self._claim(key):
            return
        content = self._message.content
        index = len(content)
        block = ToolCall(id=self._unique_id(id, index), name=name, arguments=final, thought_signature=thought_signature)
        content.append(block)
        self._whole_calls += 1
        events = self.events
        message = self._message
        events.append(ToolCallStartEvent(index, message))
        events.append(ToolCallDeltaEvent(index, text, message))
        events.append(ToolCallEndEvent(index, block, message))

    def tool_call_delta(self, key: Hashable, fragment: str) -> None:
        """Append a raw JSON fragment to the arguments of the open tool call for ``key``.

        A fragment for a key that names no open tool call cannot be placed: ``protocol`` error.
        """
        state = self._open.get(key)
        if type(state) is not _ToolState:
            if self.finished:
                return
            if state is not None:
                self._kind_mismatch(key, "tool-call arguments")
            else:
                self.fail(ErrorInfo.of("protocol"), f"the provider sent tool-call arguments for unknown block {key!r}")
            return
        if not fragment:
            return
        state.parts.append(fragment)
        state.length += len(fragment)
        if state.length >= state.next_preview:
            state.block.arguments = state.preview()
            state.next_preview = int(state.length * _PREVIEW_GROWTH) + 1
        event = _new(ToolCallDeltaEvent)
        event.content_index = state.index
        event.delta = fragment
        event.partial = self._message
        event.type = "toolcall_delta"
        self.events.append(event)

    # -- ending blocks ----------------------------------------------------------------------------

    def block_end(self, key: Hashable, *, final_text: str | None = None) -> None:
        """End the block for ``key``. ``final_text`` replaces the text where the vendor sends an
        authoritative final version. Unknown keys are ignored."""
        state = self._open.pop(key, None)
        if state is None or self.finished:
            return
        self._ended[key] = state
        if type(state) is _TextState:
            if final_text is not None:
                state.block.text = final_text
            settle(state.block)
            self.events.append(TextEndEvent(state.index, state.block.text, self._message))
        elif type(state) is _ThinkingState:
            if final_text is not None:
                state.block.thinking = final_text
            settle(state.block)
            self.events.append(ThinkingEndEvent(state.index, state.block.thinking, self._message))
        elif type(state) is _ToolState:
            self._end_tool(state)

    def _end_tool(self, state: _ToolState) -> None:
        block = state.block
        if state.parts:
            try:
                block.arguments = state.final()
            except ArgumentsError as exc:
                # Keep the best-effort view for whoever inspects the failed message, but do not end
                # the block: incomplete arguments are settled in finish().
                block.arguments = state.preview()
                state.error = exc
                return
        elif state.initial:
            # A payload that came whole in the start event is also sent as one delta, so the deltas
            # of every tool call reassemble its arguments; what JSON cannot carry (NaN, infinities)
            # fails the stream instead of reaching a tool.
            try:
                text = arguments_text(state.initial)
            except ArgumentsError as exc:
                block.arguments = {}  # what JSON cannot carry stays out of the message too (it is serialized)
                self.fail(ErrorInfo.of("protocol"), f"the provider sent tool call {block.name!r}: {exc}")
                return
            block.arguments = dict(state.initial)
            self.events.append(ToolCallDeltaEvent(state.index, text, self._message))
        else:
            block.arguments = {}
        self.events.append(ToolCallEndEvent(state.index, block, self._message))

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
        """Overwrite the given usage fields (``None`` leaves a field alone), then total and cost.

        Counts are clamped to ``0 … 2**53 - 1``: a hostile number cannot overflow the cost arithmetic.
        ``reasoning`` is a breakdown of ``output``: it is lowered to ``output`` when it says more (a
        broken server, or a later chunk that lowers the output without restating the reasoning).
        The cost is the model's rates times the :meth:`price_multiplier`.
        """
        usage = self._message.usage
        if input is not None:
            usage.input = _count(input)
        if output is not None:
            usage.output = _count(output)
        if cache_read is not None:
            usage.cache_read = _count(cache_read)
        if cache_write is not None:
            usage.cache_write = _count(cache_write)
        if cache_write_1h is not None:
            usage.cache_write_1h = _count(cache_write_1h)
        if reasoning is not None:
            usage.reasoning = _count(reasoning)
        if usage.reasoning is not None and usage.reasoning > usage.output:
            usage.reasoning = usage.output
        usage.recompute_total()
        self._price()

    def usage_counts(self, input: int, output: int, cache_read: int, cache_write: int, reasoning: int | None) -> None:
        """:meth:`usage` for a decoder that restates every count in each chunk (Gemini does, at every
        read): the same fields but the one-hour writes, given positionally, with the same clamps,
        total and cost. At one event per read this runs per event, so it takes the short way: counts
        already in range are not passed through a call."""
        usage = self._message.usage
        # Clamped as _count clamps; in range (always, from a sound server) with no call.
        if not (input.__class__ is int and 0 <= input <= _MAX_TOKENS):
            input = _count(input)
        if not (output.__class__ is int and 0 <= output <= _MAX_TOKENS):
            output = _count(output)
        if not (cache_read.__class__ is int and 0 <= cache_read <= _MAX_TOKENS):
            cache_read = _count(cache_read)
        if not (cache_write.__class__ is int and 0 <= cache_write <= _MAX_TOKENS):
            cache_write = _count(cache_write)
        if reasoning is not None:
            if not (reasoning.__class__ is int and 0 <= reasoning <= _MAX_TOKENS):
                reasoning = _count(reasoning)
            usage.reasoning = reasoning
        usage.input, usage.output, usage.cache_read, usage.cache_write = input, output, cache_read, cache_write
        if usage.reasoning is not None and usage.reasoning > output:
            usage.reasoning = output
        usage.total_tokens = input + output + cache_read + cache_write  # Usage.recompute_total, inline
        if self._model is not None:  # _price, inline
            calculate_cost(self._model, usage, multiplier=self._price_multiplier)

    def price_multiplier(self, multiplier: float) -> None:
        """Price this response at ``multiplier`` times the model's rates (a processing tier billed
        relative to the catalog's standard prices: half for a flex tier, double for priority). The
        cost is recomputed now and at every later usage step; calling it again replaces the multiplier
        (it never compounds). A multiplier that is negative or not finite is a decoder bug: ValueError.
        """
        if not 0 <= multiplier < _INF:
            raise ValueError(f"a price multiplier must be finite and not negative, got {multiplier!r}")
        if self.finished:
            return
        self._price_multiplier = float(multiplier)
        self._price()

    def _price(self) -> None:
        if self._model is None:
            return
        # The multiplier inside the pricing: an unknown price stays unknown (no total), never $0 × factor.
        calculate_cost(self._model, self._message.usage, multiplier=self._price_multiplier)

    def stop(
        self,
        raw_reason: str | None,
        mapped: StopReason,
        *,
        error: ErrorInfo | None = None,
        error_message: str | None = None,
    ) -> None:
        """Record the vendor's stop reason and its mapping; ``error``/``aborted`` need ``error`` info.

        ``mapped`` must be one of ``stop|length|toolUse|error|aborted``: a decoder mapping to anything
        else is a ``protocol`` error at once.
        """
        if self.finished:
            return
        if mapped not in _STOP_REASONS:
            self.fail(
                ErrorInfo.of("protocol"),
                f"the provider's stop reason {raw_reason!r} was mapped to {mapped!r}, which is not a stop reason",
            )
            return
        self._message.raw_stop_reason = raw_reason
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
        A ``length`` stop stays ``length`` even after complete tool calls (the vendor's word is
        never overwritten): the calls are kept, the message is not ``toolUse``, so nothing runs them.
        """
        if self.finished:
            return
        stop = self._stop
        if stop is None or stop == "pending":
            self.fail(ErrorInfo.of("protocol"), "the provider ended the response without a stop reason")
            return
        if self._stop_error is not None:
            self.fail(*self._stop_error)
            return
        for key in sorted(self._open, key=lambda k: self._open[k].index):
            self.block_end(key)
        tools = self._tools or ()
        incomplete = [state for state in tools if state.error is not None]
        has_complete_call = self._whole_calls > 0 or any(state.error is None for state in tools)
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
                self.events.append(ToolCallEndEvent(state.index, state.block, self._message))
        if stop == "stop" and has_complete_call:
            stop = "toolUse"
        elif stop == "toolUse" and not has_complete_call:
            self.fail(ErrorInfo.of("protocol"), "the provider reported tool use but sent no complete tool call")
            return
        self.start()
        self._message.stop_reason = stop
        self.finished = True
        self._open.clear()
        self.events.append(DoneEvent(stop, self._message))  # pyright: ignore[reportArgumentType]

    def fail(self, info: ErrorInfo, message: str) -> None:
        """Emit the ``error`` terminal, keeping partial content and usage. Open blocks stay open."""
        if self.finished:
            return
        self.start()
        for state in self._open.values():
            if type(state) is _ToolState:
                if state.parts:
                    state.block.arguments = state.preview()
            else:
                settle(state.block)  # it stays open, and no delta comes any more
        info.output_started = self._output_started
        reason = "aborted" if info.kind == "aborted" else "error"
        msg = self._message
        msg.stop_reason = reason
        msg.error_message = message or "unknown error"
        msg.error_info = info
        self.finished = True
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
        content = self._message.content
        content.append(block)
        return len(content) - 1

    def _kind_mismatch(self, key: Hashable, kind: str) -> None:
        self.fail(ErrorInfo.of("protocol"), f"the provider sent {kind} for block {key!r} of another kind")

    def _unique_id(self, candidate: str, index: int) -> str:
        if not candidate:
            # Derived, not random: two replays of one recording must give identical events.
            seed = f"{self._message.response_id or ''}:{index}"
            candidate = f"call_gen_{hashlib.sha256(seed.encode()).hexdigest()[:12]}"
        taken = self._ids
        if taken is None:
            taken = self._ids = set()
        if candidate in taken:
            n = 2
            while f"{candidate}_{n}" in taken:
                n += 1
            candidate = f"{candidate}_{n}"
        taken.add(candidate)
        return candidate


def _count(value: int) -> int:
    return min(max(0, int(value)), _MAX_TOKENS)
