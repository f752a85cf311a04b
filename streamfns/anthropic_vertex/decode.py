"""Claude on Vertex AI's events → the Anthropic decoder, with Vertex's error table for ``event: error``.

Vertex streams the Messages api's own server-sent events: :class:`streamfns.anthropic.decode.AnthropicDecoder`
reads them unchanged. Only an ``event: error`` is read here first, by the table that knows both shapes
a Vertex error takes (Anthropic's ``overloaded_error`` and Google's ``RESOURCE_EXHAUSTED``): typed by
the Messages table alone, a Google status would read as a ``server`` error.
"""

from __future__ import annotations

from streamfns.anthropic.decode import AnthropicDecoder
from streamfns.anthropic_vertex.errors import ERRORS, VENDOR
from streamfns.kit import ServerSentEvent, load_event

__all__ = ["VertexClaudeDecoder"]


class VertexClaudeDecoder(AnthropicDecoder):
    """:class:`AnthropicDecoder` whose ``event: error`` is typed by :data:`streamfns.anthropic_vertex.errors.ERRORS`."""

    __slots__ = ()

    def on_event(self, sse: ServerSentEvent) -> None:
        """Apply one server-sent event; raises :class:`~streamfns.kit.StreamFailure` for vendor errors."""
        if sse.event == "error":
            raise ERRORS.from_event(load_event(sse.data, VENDOR))
        super().on_event(sse)
