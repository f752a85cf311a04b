"""Cohere's per-model flags (``Model.compat``), read strictly with :func:`streamfns.kit.parse_compat`.

They reach request fields of ``/v2/chat`` that :class:`~normalize.StreamOptions` has no name for:

- ``stop_sequences``: up to five strings that end the generation (``finish_reason`` ``STOP_SEQUENCE``);
- ``safety_mode``: ``"CONTEXTUAL"`` (Cohere's default), ``"STRICT"`` or ``"OFF"`` — Cohere refuses it
  together with ``tools`` or ``documents``, so it is not sent on a request with tools;
- ``strict_tools``: tool calls forced to follow the tool definitions' schemas exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["CohereCompat"]


@dataclass(frozen=True, slots=True)
class CohereCompat:
    """See the module docstring."""

    stop_sequences: tuple[str, ...] = ()
    safety_mode: Literal["CONTEXTUAL", "STRICT", "OFF"] | None = None
    strict_tools: bool | None = None
