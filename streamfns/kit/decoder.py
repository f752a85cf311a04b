"""The :class:`Decoder` protocol: what turns one response's frames into builder calls.

It sits in a module of its own because both sides of a stream read it: :class:`~streamfns.kit.WireApi`
declares a decoder factory, and :func:`streamfns.kit.http.run_stream` drives the decoder it makes.
Neither of those modules imports the other for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeAlias, TypeVar

from normalize import MessageBuilder, Model

__all__ = ["Decoder", "DecoderFactory"]

FrameT = TypeVar("FrameT")
FrameT_contra = TypeVar("FrameT_contra", contravariant=True)


class Decoder(Protocol[FrameT_contra]):
    """Turns one response's frames into builder calls (one instance per attempt).

    The frames are what the api's framing delivers: :class:`~normalize.wire.ServerSentEvent` objects
    for SSE, each line's ``bytes`` for NDJSON, :class:`~normalize.wire.EventStreamMessage` objects for
    the AWS event stream. ``on_event`` applies a frame: content to the builder, ``builder.stop(...)``
    for the vendor's stop reason, ``builder.finish()`` at the terminal marker (which ends the read),
    and raises :class:`~streamfns.kit.StreamFailure` for a vendor error or a malformed event. ``on_eof`` runs when
    the body ends before ``finish()``: an api whose marker is not a dedicated last event (a Gemini
    finish reason that came without final usage, a chat-completions ``finish_reason`` without
    ``[DONE]``) finishes there; leaving the builder unfinished makes the stream ``truncated``.

    A decoder may also define ``on_batch_end()``: the kit calls it after the events of one network
    read have been applied (also when one of them raised, unless the builder finished), before they
    reach the consumer. The events of a read are handed over together, so state that only the
    latest event decides — Gemini's cumulative usage, sent in every chunk — can be applied there
    once per read instead of once per event, with the same result for every consumer.
    """

    def on_event(self, frame: FrameT_contra, /) -> None: ...

    def on_eof(self) -> None: ...


#: ``(builder, model) → Decoder``: a decoder class whose constructor takes those works as is.
DecoderFactory: TypeAlias = Callable[[MessageBuilder, Model], Decoder[FrameT]]
