"""Ollama's ``/api/chat`` lines → builder calls: a fold over one JSON object per line.

Each line is ``{"model", "created_at", "message": {"role", "content", "thinking", "tool_calls"},
"done": false}``; the last says ``"done": true`` with ``done_reason`` and the counts. What this decoder
promises:

- ``message.thinking`` and ``message.content`` become thinking and text; when one kind follows the
  other, the earlier block is ended, so blocks come out in the order the server sent them.
- ``message.tool_calls`` hold whole calls (never fragments). Arguments are a JSON object; a string is
  parsed strictly as a JSON object, anything else (a string that is not one, an array, null, a missing
  field, a call without a name) is a ``protocol`` error — arguments are never invented. Ollama sends no
  call ids: each call gets ``call_`` + a digest of the response's first ``created_at`` and the call's
  position (``call_<digest>_<position>``), so the same bytes give the same ids, and two turns (two
  ``created_at``) never share one.
- ``"done": true`` ends the stream: ``done_reason`` ``stop`` (``toolUse`` when a call was made),
  ``length``; a missing reason (servers before 0.1.x sent none) is ``stop``; ``load``, ``unload`` and
  any other word are a ``protocol`` error naming it. ``prompt_eval_count`` → input tokens,
  ``eval_count`` → output; a negative or non-integer count is a ``protocol`` error.
- ``{"error": "..."}`` on a line ends the stream with the kind its words say (see ``errors.py``).
- A line that is not a JSON object (an array, a number) is a ``protocol`` error, and so is a
  ``content`` or ``thinking`` that is neither a string nor null (text that cannot be placed is never
  dropped); a body that ends without a ``done`` line is ``truncated`` (the kit's default for a decoder
  that never finished).

A line that only continued the text is learned (:mod:`streamfns.kit.shapes`: its ``content`` the
piece, and ``created_at`` a hole once it changed) for the kit alone: a read holding only a line of that
layout is applied to the text without framing or parsing it (the decoder's
:class:`~streamfns.kit.Shortcut`), until a line that does anything else is read. The decoder's own
path parses every line: a line is small, so matching it would cost more than its parse.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final, cast

import jiter

from normalize import MessageBuilder, Model
from streamfns.kit import (
    SHAPE_LEARNS,
    Decoder,
    EventShape,
    HolePath,
    Shortcut,
    StopTable,
    StreamFailure,
    changed,
    load_event,
)
from streamfns.ollama.errors import ERRORS, VENDOR

__all__ = ["STOPS", "OllamaDecoder", "tool_call_id"]

STOPS: Final = StopTable(
    vendor=VENDOR,
    stops={"stop": "stop", "length": "length"},
    messages={
        # Said plainly: these reasons come from a request without messages, which this adapter never sends.
        "load": "Ollama only loaded the model and generated nothing (done_reason 'load')",
        "unload": "Ollama unloaded the model and generated nothing (done_reason 'unload')",
    },
)


def _id_prefix(created_at: str) -> str:
    """``call_`` and a digest of the response's first ``created_at``: what every call id of one
    response starts with (hashed once per response, not once per call)."""
    return f"call_{hashlib.sha256(created_at.encode()).hexdigest()[:20]}_"


def tool_call_id(created_at: str, position: int) -> str:
    """The id of the ``position``-th tool call (from 0) of the response first stamped ``created_at``:
    the same for the same bytes, different for another response or another position."""
    return f"{_id_prefix(created_at)}{position}"


def _count(line: dict[str, Any], name: str) -> int | None:
    value = line.get(name)
    if value is None:
        return None
    if value.__class__ is not int or value < 0:
        raise StreamFailure.protocol(f"{VENDOR} sent {name}={value!r}: a token count must be a non-negative integer")
    return value


def _arguments(name: str, raw: object) -> dict[str, Any]:
    """A call's arguments as an object; strictly parsed when the server sent them as a JSON string."""
    if raw.__class__ is dict:
        return raw  # pyright: ignore[reportReturnType] - a JSON object: keys are strings
    if isinstance(raw, str):
        try:
            parsed = jiter.from_json(raw.encode())
        except ValueError:
            parsed = None
        if parsed.__class__ is dict:
            return cast("dict[str, Any]", parsed)
    raise StreamFailure.protocol(
        f"{VENDOR} sent tool call {name!r} with arguments that are not a JSON object: {raw!r:.200}"
    )


def _not_text(member: str, value: object) -> StreamFailure:
    return StreamFailure.protocol(f"{VENDOR} sent message.{member} that is not a string: {value!r:.200}")


_from_json = jiter.from_json

#: What a line without a ``message`` object reads as (never written to).
_NO_MESSAGE: Final[dict[str, Any]] = {}
#: What a call without ``arguments`` reads as (a member that holds null is another thing: not an object).
_NO_ARGUMENTS: Final = object()
#: A text line's piece, and the member Ollama stamps anew on every line (read by nothing after the first).
_CONTENT: Final[HolePath] = ("message", "content")
_STAMP: Final[tuple[HolePath, ...]] = (("created_at",),)


class OllamaDecoder(Decoder[bytes]):
    """One response's lines → builder calls (see the module docstring)."""

    __slots__ = (
        "_builder",
        "_calls",
        "_created_at",
        "_id_prefix",
        "_key",
        "_kind",
        "_learns",
        "_segment",
        "_shape",
        "_shape_value",
        "shortcut",
    )

    def __init__(self, builder: MessageBuilder, model: Model) -> None:
        self._builder = builder
        self._calls = 0
        self._created_at: str | None = None
        self._id_prefix: str | None = None
        # The kind of the block being written ("thinking" or "text") and how many blocks came before it:
        # a key per block keeps the server's order when thinking and text alternate.
        self._kind = ""
        self._segment = 0
        # The open block's key (meaningful while _kind is set): its position among the text and
        # thinking blocks, an int (a call's key is a tuple, never equal to one) hashed in no time on
        # every token.
        self._key = 0
        # The layout of the last line learned that only continued the open text block, for the kit's
        # shortcut: until a line that does anything else is read, a line differing from it only in its
        # holes continues it (see the module docstring); its value, to tell which members change.
        self._shape: EventShape | None = None
        self._shape_value: Any = None
        self._learns = SHAPE_LEARNS
        #: The shape, for the kit (a text line's path depends on nothing but its bytes).
        self.shortcut: Shortcut | None = None

    def _switch(self, kind: str) -> int:
        """The key of the ``kind`` block to write to: the open one, or a new one after ending the other."""
        if self._kind:
            self._builder.block_end(self._key)
            self._segment += 1
        self._kind = kind
        key = self._key = self._segment
        return key

    def on_event(self, frame: bytes, /) -> None:
        # The plain parse inline (one call per token); what it refuses goes through load_event, which
        # repairs what it can and fails the rest as a protocol error.
        strict = True
        try:
            line: Any = _from_json(frame)
        except ValueError:
            line = None
        if line.__class__ is not dict:
            line = load_event(frame, VENDOR)
            strict = False
        if "error" in line:
            raise ERRORS.from_event(line)
        if self._created_at is None:
            stamp = line.get("created_at")
            self._created_at = stamp if isinstance(stamp, str) else frame.decode("utf-8", "replace")
        message = line.get("message", _NO_MESSAGE)
        if message.__class__ is not dict:
            message = _NO_MESSAGE
        builder = self._builder
        content = message.get("content")
        if content is not None and len(message) == 2 and "role" in message:
            # A role and content alone, the usual line (one per token): no thinking and no calls to
            # look for. Text continues the open text block, and keeps the shortcut (see below). The
            # content test is what makes the two members these two: a role beside thinking or calls
            # alone is read below.
            if content.__class__ is str:
                if content:
                    builder.text_delta(self._key if self._kind == "text" else self._switch("text"), content)
                    if line.get("done") is not True:
                        if self._learns and strict:
                            self._text_alone(frame, line)
                        return
            elif content is not None:
                raise _not_text("content", content)
        else:
            thinking = message.get("thinking")
            if thinking.__class__ is str:
                if thinking:
                    builder.thinking_delta(
                        self._key if self._kind == "thinking" else self._switch("thinking"), thinking
                    )
            elif thinking is not None:
                raise _not_text("thinking", thinking)
            if content.__class__ is str:
                if content:
                    builder.text_delta(self._key if self._kind == "text" else self._switch("text"), content)
            elif content is not None:
                raise _not_text("content", content)
            calls = message.get("tool_calls")
            if calls is not None:
                if calls.__class__ is not list:
                    raise StreamFailure.protocol(f"{VENDOR} sent tool_calls that are not a list: {calls!r:.200}")
                for call in calls:
                    self._tool_call(call)
            if not thinking and calls is None and content and line.get("done") is not True:
                # Text alone beside members read as nothing (an empty thinking): the shortcut holds too.
                if self._learns and strict:
                    self._text_alone(frame, line)
                return
        if line.get("done") is True:
            self._done(line)
        if self._shape is not None:
            self._forget()

    def _text_alone(self, frame: bytes, line: dict[str, Any]) -> None:
        """A line, parsed strictly, whose one effect was the text it continued (while learns are left):
        learned when there is no shortcut, or when the kit never read by it (the reads come several
        lines at a time, or the layout moved: created_at)."""
        shape = self._shape
        if shape is None or shape.hits == 0:
            self._learn(frame, line)

    def _forget(self) -> None:
        """Drop the shortcut (see the module docstring); a learn the kit read by is given back."""
        shape = self._shape
        self._shape = self.shortcut = None
        if shape is not None:
            self._learns += shape.hits > 0  # kit.SHAPE_LEARNS

    def _learn(self, frame: bytes, line: dict[str, Any]) -> None:
        """Learn the layout of a line, parsed strictly, whose one effect was the text it continued."""
        if self._shape is not None:
            self._forget()
        self._learns -= 1
        holes: list[HolePath] = [_CONTENT, *changed(self._shape_value, line, _STAMP)]
        self._shape = EventShape.learn(frame, line, holes)
        self._shape_value = line
        self.shortcut = Shortcut.of("", self._shape, self._shaped_text)

    def _shaped_text(self, piece: str) -> None:
        """A text line the kit's shortcut read: as the full path reads it, an empty piece adds nothing,
        and the open text block goes on."""
        if piece:
            self._builder.text_delta(self._key, piece)

    def _tool_call(self, call: Any) -> None:
        # Once per call, with the class tests inline (no obj() calls): a tool line costs a third more
        # per event than a text line, and most of it is here and in the builder.
        function: Any = call.get("function") if call.__class__ is dict else None
        if function.__class__ is not dict:
            function = _NO_MESSAGE
        name = function.get("name")
        if name.__class__ is not str or not name:
            raise StreamFailure.protocol(f"{VENDOR} sent a tool call without a name: {call!r:.200}")
        arguments = function.get("arguments", _NO_ARGUMENTS)
        if arguments is _NO_ARGUMENTS:
            raise StreamFailure.protocol(f"{VENDOR} sent tool call {name!r} without arguments")
        if arguments.__class__ is not dict:
            arguments = _arguments(name, arguments)
        if self._kind:  # a call after text or thinking closes that block: the order stays the server's
            self._builder.block_end(self._key)
            self._kind, self._segment = "", self._segment + 1
        position = self._calls
        prefix = self._id_prefix
        if prefix is None:
            prefix = self._id_prefix = _id_prefix(self._created_at or "")
        self._builder.tool_call(("call", position), f"{prefix}{position}", name, arguments)
        self._calls = position + 1

    def _done(self, line: dict[str, Any]) -> None:
        builder = self._builder
        builder.usage(input=_count(line, "prompt_eval_count"), output=_count(line, "eval_count"))
        reason = line.get("done_reason")
        if reason is None:
            reason = "stop"  # servers before done_reason existed ended every reply this way
        if not isinstance(reason, str):
            raise StreamFailure.protocol(f"{VENDOR} sent a done_reason that is not a string: {reason!r:.200}")
        STOPS.stop(builder, reason)  # the builder makes "stop" "toolUse" when a complete call exists
        builder.finish()
