"""The :class:`Decoder` base class: what turns one response's frames into builder calls.

It sits in a module of its own because both sides of a stream read it: :class:`~streamfns.kit.WireApi`
declares a decoder factory, and :func:`streamfns.kit.http.run_stream` drives the decoder it makes.
Neither of those modules imports the other for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeAlias, TypeVar

from normalize import MessageBuilder, Model

if TYPE_CHECKING:
    from streamfns.kit.shapes import Shortcut

__all__ = ["Decoder", "DecoderFactory"]

FrameT = TypeVar("FrameT")
FrameT_contra = TypeVar("FrameT_contra", contravariant=True)


class Decoder(Generic[FrameT_contra]):
    """Turns one response's frames into builder calls (one instance per attempt). Subclass it and
    write ``on_event``; the other two hooks are optional and do nothing unless overridden.

    The frames are what the api's framing delivers: :class:`~normalize.wire.ServerSentEvent` objects
    for SSE, each line's ``bytes`` for NDJSON, :class:`~normalize.wire.EventStreamMessage` objects for
    the AWS event stream. A decoder speaks to the stream only through the builder's verbs (it never
    edits ``builder.message``) and through :class:`~streamfns.kit.StreamFailure`.
    """

    __slots__ = ()

    #: The decoder's :class:`~streamfns.kit.Shortcut` while it holds one (a subclass that keeps one
    #: declares a ``shortcut`` slot): the kit applies a read holding only such a frame without
    #: ``on_event``. None (this default): every frame goes to ``on_event``.
    shortcut: Shortcut | None = None

    def on_event(self, frame: FrameT_contra, /) -> None:
        """Apply one frame: content to the builder, ``builder.stop(...)`` for the vendor's stop reason,
        ``builder.finish()`` at the terminal marker (which ends the read); raise
        :class:`~streamfns.kit.StreamFailure` for a vendor error or a malformed event."""
        raise NotImplementedError(f"{type(self).__name__} does not implement on_event")

    def on_eof(self) -> None:
        """The body ended before ``builder.finish()``. An api whose marker is not a dedicated last event
        (a Gemini finish reason that came without final usage, a chat-completions ``finish_reason``
        without ``[DONE]``) finishes here. By default nothing is concluded: the builder stays
        unfinished and the kit ends the stream ``truncated``."""

    def on_batch_end(self) -> None:
        """The events of one network read have been applied (also when one of them raised, unless the
        builder finished); they reach the consumer together, right after this. State that only the
        latest event decides — Gemini's cumulative usage, sent in every chunk — can be applied here
        once per read instead of once per event, with the same result for every consumer. By default
        nothing happens. Define it on the class (or set it in ``__init__``): the kit looks it up once
        per response."""


#: ``(builder, model) → Decoder``: a decoder class whose constructor takes those works as is.
DecoderFactory: TypeAlias = Callable[[MessageBuilder, Model], Decoder[FrameT]]
