"""ConverseStream event-stream messages → builder calls. Pure: no I/O, no clock.

The body is a run of AWS event-stream messages (:data:`streamfns.kit.AWS_EVENTSTREAM` frames them and
checks both CRCs); each ``event`` message is named by ``:event-type`` and carries a JSON object with a
random ``"p"`` padding member, which is ignored. What this decoder promises:

- ``messageStart`` (role ``assistant``; anything else is ``protocol``) opens the response; content
  before it, a second one, or any message after ``metadata`` is ``protocol``.
- Content blocks are keyed by ``contentBlockIndex``. Text and reasoning blocks get no
  ``contentBlockStart``: the first delta with content decides the block's kind (an empty ``text`` or
  ``reasoningContent.text`` delta opens nothing). ``text`` → text; ``reasoningContent.text`` → thinking,
  its ``signature`` kept (pieces concatenated) for replay, ``redactedContent`` → a redacted thinking block
  (the opaque data in the signature, :data:`REDACTED_PLACEHOLDER` as its text); ``toolUse.input``
  fragments → the arguments of the tool call its ``contentBlockStart`` opened (strictly parsed when the
  block ends: arguments that are not a JSON object are never executable). Citations do not change the
  text and are not kept. A delta of another kind than its block, for a block that ended or never
  started, or of a kind this decoder does not know, is ``protocol``: nothing is dropped silently.
- Server-side tools (``contentBlockStart`` ``toolUse`` of type ``server_tool_use``, ``toolResult``
  blocks: Nova grounding, code interpreter) run at AWS, not at the caller: they are left out of the
  normalized message with all their deltas, so the text around them keeps its order.
- ``messageStop.stopReason``: ``end_turn``, ``stop_sequence`` → ``stop``; ``tool_use`` → ``toolUse``;
  ``max_tokens`` → ``length``; ``guardrail_intervened`` and ``content_filtered`` → error
  ``content_filter``; ``model_context_window_exceeded`` → error ``context_overflow``; anything else →
  ``protocol``.
- ``metadata`` (sent after ``messageStop``; once) gives the usage: ``inputTokens``, ``outputTokens``,
  ``cacheReadInputTokens``, ``cacheWriteInputTokens`` (a negative or non-integer count is ``protocol``).
  The stream is complete at the end of the body once both came; a body that ends without either is
  ``truncated``, and so is one cut between them. Nothing may follow both (``protocol``).
- ``exception`` and ``error`` messages end the stream with the kind of their type (``errors.py``).

A text delta's layout is learned (:mod:`streamfns.kit.shapes`: its text the piece, Bedrock's random
``p`` padding a hole once it changed): until another message is read whole, a ``contentBlockDelta``
whose payload differs from it only there is text for that block, read without a parse, and the kit
may apply a read holding only such a message itself (the decoder's :class:`~streamfns.kit.Shortcut`).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Final

from normalize import MessageBuilder, Model
from streamfns.bedrock.errors import VENDOR, exception_failure
from streamfns.kit import (
    SHAPE_LEARNS,
    Decoder,
    EventShape,
    EventStreamMessage,
    HolePath,
    Shortcut,
    StopTable,
    StreamFailure,
    changed,
    load_event,
)

__all__ = ["REDACTED_PLACEHOLDER", "STOPS", "ConverseDecoder"]

#: The text of a redacted thinking block (its opaque data is the block's signature).
REDACTED_PLACEHOLDER: Final = "[Reasoning redacted]"

STOPS: Final = StopTable(
    vendor=VENDOR,
    stops={"end_turn": "stop", "stop_sequence": "stop", "tool_use": "toolUse", "max_tokens": "length"},
    errors={
        "guardrail_intervened": "content_filter",
        "content_filtered": "content_filter",
        "model_context_window_exceeded": "context_overflow",
    },
    messages={
        "guardrail_intervened": "Amazon Bedrock stopped the response: a guardrail intervened",
        "content_filtered": "Amazon Bedrock stopped the response: the content was filtered",
        "model_context_window_exceeded": "Amazon Bedrock stopped the response: the model's context window is full",
    },
)

# Block kinds. _EMPTY: seen, nothing opened yet (only empty deltas or citations so far).
_EMPTY, _TEXT, _THINKING, _REDACTED, _TOOL, _SKIP, _CLOSED = range(7)
_NAMES: Final = {
    _EMPTY: "empty",
    _TEXT: "text",
    _THINKING: "reasoning",
    _REDACTED: "redacted reasoning",
    _TOOL: "tool use",
    _SKIP: "server tool",
    _CLOSED: "ended",
}
# Phases of the response.
_BEFORE, _OPEN, _STOPPED, _DONE = range(4)
#: The event of every piece of content (one per token).
_DELTA: Final = "contentBlockDelta"
#: A delta's text, and Bedrock's random padding (read by nothing).
_TEXT_PIECE: Final[HolePath] = ("delta", "text")
_PADDING: Final[tuple[HolePath, ...]] = (("p",),)


def _count(usage: dict[str, Any], name: str) -> int | None:
    value = usage.get(name)
    if value is None:
        return None
    if value.__class__ is not int or value < 0:
        raise StreamFailure.protocol(f"{VENDOR} sent {name}={value!r}: a token count must be a non-negative integer")
    return value


class ConverseDecoder(Decoder[EventStreamMessage]):
    """One ConverseStream response's messages → builder calls (see the module docstring)."""

    __slots__ = (
        "_builder",
        "_event",
        "_headers",
        "_kinds",
        "_learns",
        "_metadata",
        "_phase",
        "_shape",
        "_shape_index",
        "_shape_value",
        "shortcut",
    )

    def __init__(self, builder: MessageBuilder, model: Model | None = None) -> None:
        del model  # the stream needs nothing from the model
        self._builder = builder
        self._kinds: dict[int, int] = {}
        self._phase = _BEFORE
        self._metadata = False
        # The last headers read and the event type they name: the framing hands over one shared,
        # read-only mapping per distinct headers section, so a stream of deltas reads them once.
        self._headers: object = None
        self._event: object = None
        # The layout of the last text delta read whole, and its block: until another message is read
        # whole (which may change what a delta means), a delta whose payload differs from it only in
        # its holes is text for that block (see the module docstring).
        self._shape: EventShape | None = None
        self._shape_index = -1
        self._shape_value: Any = None
        self._learns = SHAPE_LEARNS
        #: The shape, for the kit (a delta's path here depends on nothing but its event type and payload).
        self.shortcut: Shortcut | None = None

    def on_event(self, message: EventStreamMessage, /) -> None:
        headers = message.headers
        if headers is self._headers:
            event = self._event
        else:
            if headers.get(":message-type", "event") != "event":
                raise exception_failure(message)
            event = self._event = headers.get(":event-type")
            # Only a mapping nobody can change is remembered (a caller's own dict could be reused).
            self._headers = headers if headers.__class__ is MappingProxyType else None
        shape = self._shape
        if shape is not None:
            if event == _DELTA:
                pieces = shape.match(message.payload)
                if pieces is not None:
                    self._builder.text_delta(self._shape_index, pieces[0])
                    return
            self._shape = self.shortcut = None
            self._learns += shape.hits > 0  # a learn that paid is given back (kit.SHAPE_LEARNS)
        data = load_event(message.payload, VENDOR)
        if event == _DELTA and self._phase == _OPEN:
            # The hot path (one message per token): no copies, one kind lookup.
            index = data.get("contentBlockIndex")
            delta: Any = data.get("delta")
            if type(index) is not int or delta.__class__ is not dict:
                raise StreamFailure.protocol(f"{VENDOR} sent a contentBlockDelta without an index or a delta")
            kind = self._kinds.get(index)
            piece = delta.get("text")
            if piece is not None and kind == _TEXT and type(piece) is str:
                self._builder.text_delta(index, piece)
                if self._learns:
                    self._learn(message.payload, data, index)
                return
            self._delta(index, kind, delta)
        elif event == "contentBlockStart" and self._phase == _OPEN:
            self._start(data)
        elif event == "contentBlockStop" and self._phase == _OPEN:
            self._stop(data.get("contentBlockIndex"))
        elif event == "messageStart":
            self._message_start(data)
        elif event == "messageStop" and self._phase == _OPEN:
            raw = data.get("stopReason")
            if not isinstance(raw, str) or not raw:
                raise StreamFailure.protocol(f"{VENDOR} sent a messageStop without a stopReason")
            self._phase = _DONE if self._metadata else _STOPPED
            STOPS.stop(self._builder, raw)
        elif event == "metadata" and self._phase in (_OPEN, _STOPPED) and not self._metadata:
            self._metadata = True
            self._usage(data.get("usage"))
            if self._phase == _STOPPED:
                self._phase = _DONE
        elif self._phase == _DONE:
            raise StreamFailure.protocol(f"{VENDOR} sent {event!r} after the response's metadata")
        elif event in ("contentBlockDelta", "contentBlockStart", "contentBlockStop", "messageStop", "metadata"):
            where = "before messageStart" if self._phase == _BEFORE else "after messageStop"
            if event == "metadata":
                where = "twice" if self._metadata else where
            raise StreamFailure.protocol(f"{VENDOR} sent {event} {where}")
        # Any other event type is one this decoder does not know: it carries no content we could place.

    def on_eof(self) -> None:
        """The body ended: complete after ``messageStop`` and ``metadata``, else ``truncated``."""
        if self._phase == _DONE:
            self._builder.finish()
        elif self._phase == _STOPPED:
            raise StreamFailure.of("truncated", f"{VENDOR} stream ended after messageStop, before its metadata")

    def _message_start(self, data: dict[str, Any]) -> None:
        if self._phase != _BEFORE:
            raise StreamFailure.protocol(f"{VENDOR} sent a second messageStart")
        role = data.get("role")
        if role != "assistant":
            raise StreamFailure.protocol(f"{VENDOR} started a message with role {role!r}, not 'assistant'")
        self._phase = _OPEN

    def _mismatch(self, index: int, kind: int | None, what: str) -> StreamFailure:
        state = "never started" if kind is None else f"a {_NAMES[kind]} block"
        return StreamFailure.protocol(f"{VENDOR} sent {what} for content block {index}, which is {state}")

    def _delta(self, index: int, kind: int | None, delta: dict[str, Any]) -> None:
        builder, kinds = self._builder, self._kinds
        if kind == _SKIP:
            return  # a server tool's input or result: not part of the normalized message
        if kind == _CLOSED:
            raise self._mismatch(index, kind, "a delta")
        piece = delta.get("text")
        if piece is not None:
            if type(piece) is not str:
                raise StreamFailure.protocol(f"{VENDOR} sent a text delta that is not a string: {piece!r:.100}")
            if kind not in (None, _EMPTY):
                raise self._mismatch(index, kind, "text")
            kinds[index] = _TEXT if piece else _EMPTY
            builder.text_delta(index, piece)
            return
        reasoning = delta.get("reasoningContent")
        if reasoning is not None:
            if reasoning.__class__ is not dict:
                raise StreamFailure.protocol(f"{VENDOR} sent reasoningContent that is not an object")
            self._reasoning(index, kind, reasoning)
            return
        use = delta.get("toolUse")
        if use is not None:
            fragment = use.get("input") if use.__class__ is dict else None
            if kind != _TOOL:
                raise self._mismatch(index, kind, "tool input")
            if type(fragment) is not str:
                raise StreamFailure.protocol(f"{VENDOR} sent tool input that is not a string: {fragment!r:.100}")
            builder.tool_call_delta(index, fragment)
            return
        if "citation" in delta:
            if kind is None:
                kinds[index] = _EMPTY
            return  # where the text came from: the text itself is unchanged
        if "toolResult" in delta:
            raise self._mismatch(index, kind, "a tool result")
        raise StreamFailure.protocol(f"{VENDOR} sent a delta this adapter cannot place: {sorted(delta)!r:.200}")

    def _reasoning(self, index: int, kind: int | None, reasoning: dict[str, Any]) -> None:
        builder, kinds = self._builder, self._kinds
        redacted = reasoning.get("redactedContent")
        if redacted is not None:
            if type(redacted) is not str or not redacted:
                raise StreamFailure.protocol(f"{VENDOR} sent redactedContent that is not base64 text")
            if kind in (None, _EMPTY):
                kinds[index] = _REDACTED
                builder.thinking_start(index, REDACTED_PLACEHOLDER, signature=redacted, redacted=True)
            elif kind == _REDACTED:
                builder.block_signature(index, redacted, append=True)
            else:
                raise self._mismatch(index, kind, "redacted reasoning")
            return
        if kind not in (None, _EMPTY, _THINKING):
            raise self._mismatch(index, kind, "reasoning")
        thought = reasoning.get("text")
        signature = reasoning.get("signature")
        if thought is None and signature is None:
            raise StreamFailure.protocol(
                f"{VENDOR} sent reasoningContent this adapter cannot place: {sorted(reasoning)!r:.200}"
            )
        if thought is not None:
            if type(thought) is not str:
                raise StreamFailure.protocol(f"{VENDOR} sent reasoning text that is not a string")
            if thought:
                kinds[index] = _THINKING
                builder.thinking_delta(index, thought)
            elif kind is None:
                kinds[index] = _EMPTY
        if signature is not None:
            if type(signature) is not str:
                raise StreamFailure.protocol(f"{VENDOR} sent a reasoning signature that is not a string")
            if kinds.get(index) == _THINKING:
                builder.block_signature(index, signature, append=True)
            elif signature:
                kinds[index] = _THINKING
                builder.thinking_start(index, signature=signature)

    def _learn(self, payload: bytes, data: dict[str, Any], index: int) -> None:
        """Learn the layout of a text delta just applied to block ``index`` (a learn checks the bytes
        parse strictly to ``data``: a payload the parse had to repair is not learned)."""
        self._learns -= 1
        holes: list[HolePath] = [_TEXT_PIECE, *changed(self._shape_value, data, _PADDING)]
        self._shape = EventShape.learn(payload, data, holes)
        self._shape_index = index
        self._shape_value = data
        self.shortcut = Shortcut.of(_DELTA, self._shape, self._builder.text_delta, index)

    def _start(self, data: dict[str, Any]) -> None:
        index = data.get("contentBlockIndex")
        start: Any = data.get("start")
        if type(index) is not int or start.__class__ is not dict:
            raise StreamFailure.protocol(f"{VENDOR} sent a contentBlockStart without an index or a start")
        if index in self._kinds:
            raise StreamFailure.protocol(f"{VENDOR} started content block {index} twice")
        use: Any = start.get("toolUse")
        if use.__class__ is dict and use.get("type") != "server_tool_use":
            call_id, name = use.get("toolUseId"), use.get("name")
            if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
                raise StreamFailure.protocol(f"{VENDOR} started a tool use without an id or a name: {use!r:.200}")
            self._kinds[index] = _TOOL
            self._builder.tool_call_start(index, call_id, name)
            return
        # A server tool's call or result, or a block kind this adapter does not know: run by AWS, skipped.
        self._kinds[index] = _SKIP

    def _stop(self, index: object) -> None:
        if type(index) is not int:
            raise StreamFailure.protocol(f"{VENDOR} sent a contentBlockStop without an index")
        kind = self._kinds.get(index)
        if kind is None or kind == _CLOSED:
            raise self._mismatch(index, kind, "contentBlockStop")
        if kind not in (_EMPTY, _SKIP):
            self._builder.block_end(index)
        self._kinds[index] = _CLOSED

    def _usage(self, usage: object) -> None:
        if usage is None:
            return
        if usage.__class__ is not dict:
            raise StreamFailure.protocol(f"{VENDOR} sent usage that is not an object")
        fields: dict[str, Any] = usage  # pyright: ignore[reportAssignmentType] - a JSON object: string keys
        self._builder.usage(
            input=_count(fields, "inputTokens"),
            output=_count(fields, "outputTokens"),
            cache_read=_count(fields, "cacheReadInputTokens"),
            cache_write=_count(fields, "cacheWriteInputTokens"),
        )
