"""Claude on Vertex AI's events → the Anthropic decoder, with Vertex's error table for ``event: error``.

Vertex streams the Messages api's own server-sent events: :class:`streamfns.anthropic.decode.AnthropicDecoder`
reads them unchanged. Only an ``event: error`` is typed differently, by the table that knows both
shapes a Vertex error takes (Anthropic's ``overloaded_error`` and Google's ``RESOURCE_EXHAUSTED``):
typed by the Messages table alone, a Google status would read as a ``server`` error.
"""

from __future__ import annotations

from typing import ClassVar

from streamfns.anthropic.decode import AnthropicDecoder
from streamfns.anthropic_vertex.errors import ERRORS
from streamfns.kit import ErrorTable

__all__ = ["VertexClaudeDecoder"]


class VertexClaudeDecoder(AnthropicDecoder):
    """:class:`AnthropicDecoder` whose ``event: error`` is typed by :data:`streamfns.anthropic_vertex.errors.ERRORS`
    (the events themselves go through the Messages decoder's one path, unwrapped by nothing)."""

    __slots__ = ()

    errors: ClassVar[ErrorTable] = ERRORS
