"""``StreamFailure``: how a decoder or an error parser says "end this stream with this error"."""

from __future__ import annotations

from normalize import ErrorInfo, ErrorKind

__all__ = ["StreamFailure"]


class StreamFailure(Exception):
    """Ends the stream with ``info`` and ``message``.

    Raised by a decoder for a vendor error event or a malformed event, and returned by an error
    parser for a non-2xx response. The kit catches it, retries when ``info.retryable`` allows and no
    output has started, and otherwise ends the stream with an ``error`` event. Both ``message`` and
    every string of ``info`` (the vendor's ``code``) may carry vendor text: the kit cuts and redacts
    them on the message the stream ends with (:func:`streamfns.kit.redact_message`), so a raiser
    quotes the vendor as it is. Whether output had started is the builder's to say when the stream
    ends (``ErrorInfo.output_started`` is set there), never the raiser's.
    """

    def __init__(self, info: ErrorInfo, message: str) -> None:
        super().__init__(message)
        self.info = info
        self.message = message

    @classmethod
    def of(cls, kind: ErrorKind, message: str, *, code: str | None = None) -> StreamFailure:
        """A failure of ``kind`` (retryable as that kind is by default), with the vendor's ``code``."""
        return cls(ErrorInfo.of(kind, code=code), message)

    @classmethod
    def protocol(cls, message: str) -> StreamFailure:
        """The vendor broke its own protocol (a malformed event, content that cannot be placed)."""
        return cls(ErrorInfo.of("protocol"), message)
