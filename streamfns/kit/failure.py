"""``StreamFailure``: how a decoder or an error parser says "end this stream with this error"."""

from __future__ import annotations

from normalize import ErrorInfo

__all__ = ["StreamFailure"]


class StreamFailure(Exception):
    """Ends the stream with ``info`` and ``message``.

    Raised by a decoder for a vendor error event or a malformed event, and returned by an error
    parser for a non-2xx response. The kit catches it, retries when ``info.retryable`` allows and no
    output has started, and otherwise ends the stream with an ``error`` event; the message is
    redacted of the API key first.
    """

    def __init__(self, info: ErrorInfo, message: str) -> None:
        super().__init__(message)
        self.info = info
        self.message = message
