"""Mistral's chat-completion chunks → builder calls. Pure: no I/O, no clock.

Mistral streams ``chat.completion.chunk`` objects, so :class:`MistralDecoder` is the chat-completions
decoder (:class:`streamfns.openai_completions.decode.CompletionsDecoder`: every reading rule, the way
the stream ends, the layouts read off the bytes) read with the ``mistral`` compat profile — content
lists of ``text`` and ``thinking`` chunks (Magistral, Small 4, Medium 3.5; a thinking chunk's
``signature`` kept with its block), ``model_length`` → ``length`` — and Mistral's error table
(``errors.py``) and finish reasons (:data:`STOPS`). What is Mistral's own, and nothing else, is here:

- The random ``p`` padding Mistral adds to every chunk is never read, and a chunk's layout is learned
  and matched without it (:func:`unpadded`), so that text, thinking and argument chunks are read off
  their bytes whatever the padding's length — by the kit's shortcut too, with one chunk per read
  (:class:`_Unpadded` reads a chunk as :meth:`MistralDecoder.on_event` does).
- A call id that is the string ``"null"`` (what the SDK's models say of a call without one) names no
  call; a call without an id gets nine letters and digits derived from the response id and its
  position (:func:`generated_call_id`), the form Mistral takes back.
- ``usage``: cached tokens come from ``prompt_tokens_details.cached_tokens``, else
  ``num_cached_tokens`` (:func:`usage_fields`).

Finish reasons: ``stop`` → ``stop`` (``toolUse`` when a complete call came), ``length`` and
``model_length`` → ``length``, ``tool_calls`` → ``toolUse``, ``error`` → an error of kind ``server``,
anything else → ``protocol`` naming it. The first failure stands, and so does a ``length``, whatever
follows. ``[DONE]`` without a ``finish_reason``, or EOF without either, is ``truncated``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, ClassVar, Final

from normalize import MessageBuilder, Model
from streamfns.kit import ErrorTable, EventShape, ServerSentEvent, Shortcut, StopTable, obj, text
from streamfns.mistral.errors import ERRORS, VENDOR
from streamfns.mistral.rules import mistral_tool_call_id
from streamfns.openai_completions.compat import PROFILES, CompletionsCompat
from streamfns.openai_completions.decode import CompletionsDecoder
from streamfns.openai_completions.usage import usage_fields as _chat_usage_fields

__all__ = ["STOPS", "MistralDecoder", "generated_call_id", "unpadded", "usage_fields"]

STOPS: Final = StopTable(
    vendor=VENDOR,
    stops={"stop": "stop", "length": "length", "model_length": "length", "tool_calls": "toolUse"},
    errors={"error": "server"},
    error_message="{vendor} stopped the response: finish_reason {raw}",
    unknown_message="{vendor} sent an unknown finish_reason {raw!r}",
)
#: How Mistral's random padding starts: a last top-level member ``"p"`` of a changing length, read by
#: nothing (:func:`unpadded`).
_PADDING: Final = b',"p":"'
#: The rest of a padding member that ends the chunk: a string without quotes or escapes, then ``}``.
_pad_end: Final = re.compile(rb'[^"\\]*"\}').fullmatch
#: How many plain paddings a decoder remembers.
_PADS_KEPT: Final = 64


def usage_fields(usage: dict[str, Any]) -> dict[str, int | None]:
    """The keyword arguments for ``MessageBuilder.usage`` from Mistral's ``usage`` object: the chat
    arithmetic (:func:`streamfns.openai_completions.usage.usage_fields`: ``input`` excludes cache reads,
    counts are clamped), with ``num_cached_tokens`` — where Mistral has also reported cache reads — read
    when ``prompt_tokens_details.cached_tokens`` is absent."""
    cached = usage.get("num_cached_tokens")
    details = obj(usage.get("prompt_tokens_details"))
    if cached is not None and details.get("cached_tokens") is None:
        usage = {**usage, "prompt_tokens_details": {**details, "cached_tokens": cached}}
    return _chat_usage_fields(usage)


def generated_call_id(response_id: str, position: int) -> str:
    """The id of the ``position``-th call (from 0) of a response that sent none: nine letters and digits
    (what Mistral accepts back), the same for the same response and position."""
    return mistral_tool_call_id(f"{response_id}:{position}")


def unpadded(data: bytes) -> bytes:
    """A chunk's bytes without Mistral's padding: a last top-level member ``"p"`` whose string holds no
    quote or backslash is cut out (``…,"p":"abcdefg"}`` → ``…}``); any other bytes are returned as they are.

    Mistral pads every chunk with a ``p`` of a random length. Nothing reads it, so a chunk's layout is
    learned and matched without it (kit.shapes), the text its only hole. What this promises: what is cut
    is that member (the rest after ``,"p":"`` is one quote-free string ending the top-level object, so
    the quote before ``p`` opens a key of that object), and the chunk parses to the cut bytes' value
    plus a ``p`` nothing reads."""
    head, found, pad = data.rpartition(_PADDING)
    return head + b"}" if found and _pad_end(pad) is not None else data


_MISTRAL: Final = PROFILES["mistral"]


class _Unpadded:
    """The layout a Mistral decoder learned without the padding, read as its on_event reads a chunk
    (a :class:`~streamfns.kit.Matcher` for the kit's shortcut): without a plain last padding first,
    then as it is."""

    __slots__ = ("_pads", "_plain", "_shape")

    def __init__(self, shape: EventShape, pads: set[bytes], plain: Callable[[bytes], bool]) -> None:
        self._shape = shape
        self._pads = pads
        self._plain = plain

    def match(self, data: bytes) -> list[Any] | None:
        head, padded, pad = data.rpartition(_PADDING)
        if padded and (pad in self._pads or self._plain(pad)):
            pieces = self._shape.match(head + b"}")
            if pieces is not None:
                return pieces
        return self._shape.match(data)


class MistralDecoder(CompletionsDecoder):
    """Feeds one response's chunks to a :class:`MessageBuilder` (see the module docstring)."""

    _vendor: ClassVar[str] = VENDOR
    _errors: ClassVar[ErrorTable] = ERRORS
    _stop_table: ClassVar[StopTable] = STOPS
    _done_hint: ClassVar[str] = ""
    __slots__ = ("_pads",)

    def __init__(self, builder: MessageBuilder, model: Model) -> None:
        super().__init__(builder, model)
        #: Paddings already found plain (_plain_pad).
        self._pads: set[bytes] = set()

    @classmethod
    def _profile(cls, model: Model) -> CompletionsCompat:
        """Mistral's chunks, whatever the model (its ``compat`` holds request options only)."""
        return _MISTRAL

    def on_event(self, sse: ServerSentEvent) -> None:
        """Apply one server-sent event; raises :class:`~streamfns.kit.StreamFailure` for vendor errors.

        A chunk whose layout was learned is matched without its padding first (the chat decoder's
        shape, learned without it: :meth:`_learn`); anything else takes the chat decoder's path."""
        shape = self._shape
        if shape is not None and sse.event == "message":
            # unpadded(data), inline (this runs once per token): a padding seen before is known to be a
            # plain string that ends the chunk; a new one is checked first.
            head, padded, pad = sse.data.rpartition(_PADDING)
            if padded and (pad in self._pads or self._plain_pad(pad)):
                pieces = shape.match(head + b"}")
                if pieces is not None:
                    self._shape_sink(pieces[0])
                    return
        super().on_event(sse)

    def _shortcut_for(self, event: str) -> Shortcut | None:
        """The kit's shortcut reads a chunk as on_event does: its layout learned without the padding."""
        shape = self._shape
        if shape is None or event != "message":
            return None
        return Shortcut.of(event, _Unpadded(shape, self._pads, self._plain_pad), self._shape_sink)

    def _plain_pad(self, pad: bytes) -> bool:
        """Whether ``pad`` (what follows ``,"p":"``) is a string without quotes or escapes that ends the
        chunk; a plain one is remembered (a bounded few: Mistral's paddings repeat)."""
        if _pad_end(pad) is None:
            return False
        if len(self._pads) < _PADS_KEPT:
            self._pads.add(pad)
        return True

    def _learn(self, data: bytes, chunk: dict[str, Any], delta: dict[str, Any]) -> None:
        """The chat decoder's learn, on the chunk without its padding (bytes and value alike)."""
        layout = unpadded(data)
        if layout is not data:
            chunk = {name: member for name, member in chunk.items() if name != "p"}
        super()._learn(layout, chunk, delta)

    def _entry_id(self, entry: dict[str, Any]) -> str:
        """The call id an entry names: "" also for the string ``"null"`` (the SDK's models' default)."""
        raw = text(entry.get("id"))
        return "" if raw == "null" else raw

    def _missing_id(self, call_position: int) -> str:
        return generated_call_id(self._builder.response_id or "", call_position)

    def _usage(self, usage: dict[str, Any]) -> None:
        self._usage_seen = True
        self._builder.usage(**usage_fields(usage))
