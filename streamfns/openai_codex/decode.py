"""Codex backend SSE events → builder calls: the Responses decoder, with the Codex differences.

The Codex backend streams the Responses protocol (:mod:`streamfns.openai_responses.decode` says how
each event maps). What differs:

- ``response.done`` is a terminal event too (some Codex deployments end with it rather than
  ``response.completed``): its ``response.status`` decides, as for the other terminals (``completed``
  → ``stop``, ``incomplete`` → ``length`` or an error, ``failed``/``cancelled`` → an error);
- ``error`` events and a failed response's ``error`` are read with the Codex table
  (:mod:`streamfns.openai_codex.errors`): a plan limit said mid-stream is ``rate_limit`` with its
  reset time, ``usage_not_included`` is ``auth``.

Pure: no I/O, no clock (but the reset time of a plan limit given as an epoch, which is measured
against the local clock).
"""

from __future__ import annotations

from typing import Any, ClassVar

from streamfns.kit import StreamFailure, obj
from streamfns.openai_codex.errors import ERRORS, extract_codex_error
from streamfns.openai_responses.decode import OpenAIResponsesDecoder

__all__ = ["CODEX_TERMINALS", "CodexDecoder"]

#: The events that end a Codex response.
CODEX_TERMINALS = ("response.completed", "response.incomplete", "response.failed", "response.done")


class CodexDecoder(OpenAIResponsesDecoder):
    """Feeds one Codex response's events to a :class:`~normalize.MessageBuilder` (see the module
    docstring)."""

    __slots__ = ()

    def _codex_error_event(self, kind: str, data: dict[str, Any]) -> None:
        del kind
        raise ERRORS.from_event(data)

    def _codex_terminal_event(self, kind: str, data: dict[str, Any]) -> None:
        try:
            # Usage, the response id and the items' last payloads are kept as for any terminal event.
            self._terminal_event(kind, data)
        except StreamFailure:
            error = obj(obj(data.get("response")).get("error"))
            found = extract_codex_error(error) if error else None
            if found is None:
                raise
            raise ERRORS.from_event(found) from None

    _handlers: ClassVar[dict[str, Any]] = {
        **OpenAIResponsesDecoder._handlers,  # pyright: ignore[reportPrivateUsage]
        "response.failed": _codex_terminal_event,
        "response.done": _codex_terminal_event,
        "error": _codex_error_event,
    }
