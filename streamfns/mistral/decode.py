"""Mistral's chat-completion chunks → builder calls. Pure: no I/O, no clock.

Mistral streams ``chat.completion.chunk`` objects, so :class:`MistralDecoder` is the chat-completions
decoder (:class:`streamfns.openai_completions.decode.CompletionsDecoder`: every reading rule, the way
the stream ends, the layouts read off the bytes) read with the ``mistral`` compat profile — content
lists of ``text`` and ``thinking`` chunks (Magistral, Small 4, Medium 3.5; a thinking chunk's
``signature`` kept with its block), ``model_length`` → ``length`` — and Mistral's error table
(``errors.py``) and finish reasons (:data:`STOPS`). What is Mistral's own, and nothing else, is here:

- The random ``p`` padding Mistral adds to every chunk is never read: a chunk's layout takes it as a
  hole (as the chat decoder takes OpenAI's ``obfuscation``), so that text, thinking and argument chunks
  are read off their bytes whatever the padding's length — by the kit's shortcut too, with one event
  per read.
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

from typing import Any, ClassVar, Final

from normalize import Model
from streamfns.kit import ErrorTable, HolePath, StopTable, obj, text
from streamfns.mistral.errors import ERRORS, VENDOR
from streamfns.mistral.rules import mistral_tool_call_id
from streamfns.openai_completions.compat import PROFILES, CompletionsCompat
from streamfns.openai_completions.decode import CompletionsDecoder
from streamfns.openai_completions.usage import usage_fields as _chat_usage_fields

__all__ = ["STOPS", "MistralDecoder", "generated_call_id", "usage_fields"]

STOPS: Final = StopTable(
    vendor=VENDOR,
    stops={"stop": "stop", "length": "length", "model_length": "length", "tool_calls": "toolUse"},
    errors={"error": "server"},
    error_message="{vendor} stopped the response: finish_reason {raw}",
    unknown_message="{vendor} sent an unknown finish_reason {raw!r}",
)


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


_MISTRAL: Final = PROFILES["mistral"]


class MistralDecoder(CompletionsDecoder):
    """Feeds one response's chunks to a :class:`MessageBuilder` (see the module docstring)."""

    _vendor: ClassVar[str] = VENDOR
    _errors: ClassVar[ErrorTable] = ERRORS
    _stop_table: ClassVar[StopTable] = STOPS
    _done_hint: ClassVar[str] = ""
    #: Mistral's random padding: the top-level ``p`` of every chunk.
    _padding: ClassVar[tuple[HolePath, ...]] = (("p",),)

    __slots__ = ()

    @classmethod
    def _profile(cls, model: Model) -> CompletionsCompat:
        """Mistral's chunks, whatever the model (its ``compat`` holds request options only)."""
        return _MISTRAL

    def _entry_id(self, entry: dict[str, Any]) -> str:
        """The call id an entry names: "" also for the string ``"null"`` (the SDK's models' default)."""
        raw = text(entry.get("id"))
        return "" if raw == "null" else raw

    def _missing_id(self, call_position: int) -> str:
        return generated_call_id(self._builder.response_id or "", call_position)

    def _usage(self, usage: dict[str, Any]) -> None:
        self._usage_seen = True
        self._builder.usage(**usage_fields(usage))
