"""V1: an error the vendor sends inside a stream, in the vendor's own frame."""

from __future__ import annotations

from typing import cast

from cassettes.mutation_specs import Mutation, StreamError
from cassettes.mutations import injected_message
from conformance.check import Check, Outcome
from conformance.checks._common import expect_error, mutated
from conformance.observe import Observation, Scenario
from conformance.plans import api_of, frame_ends, marker_offset
from conformance.session import Session
from normalize import ERROR_KINDS, ErrorKind

__all__ = ["VendorErrorsKeepTheirKind"]

#: A vendor's error is neither malformed bytes nor a cut body, nor an abort.
_VENDOR_KINDS: tuple[ErrorKind, ...] = tuple(
    cast("ErrorKind", kind) for kind in sorted(ERROR_KINDS) if kind not in ("protocol", "truncated", "aborted")
)
_RETRIES = 2


class VendorErrorsKeepTheirKind(Check):
    """An error frame the vendor sends mid-stream — as the api's wire profile declares it (Anthropic's
    ``event: error``, a chat server's ``{"error": …}`` chunk, an event-stream exception message) —
    as the very first frame and three quarters of the way to the terminal marker, must end the stream
    in ``error`` with a vendor kind (not ``protocol``: the frame is the vendor speaking, not malformed
    bytes) and the vendor's message in errorMessage; the content streamed before it is kept, and once
    output has started it is never retried. Read the error frame with your ``ErrorTable``
    (``ERRORS.from_event``) and raise the failure it builds."""

    id = "V1"
    level = "pi"
    title = "a vendor error mid-stream ends in an error of the vendor's kind and message, partial content kept"
    needs = ("http", "stream_error")

    def scenarios(self, session: Session) -> list[Scenario]:
        """The text recording with the error first, and after three quarters of its frames (counting
        only frames that end before the terminal marker: the error must come before the stream says
        it is done)."""
        recording = session.recording("text")
        if recording is None:
            return []
        profile = session.profile
        stop = marker_offset(recording.cassette, profile)
        ends = frame_ends(recording.cassette, profile)
        kept = [count for count, end in enumerate(ends, start=1) if end <= stop]
        chosen = {0: 0}  # frames kept → retries allowed
        if kept:
            chosen[kept[min(len(kept) - 1, (len(kept) * 3) // 4)]] = _RETRIES
        api = api_of(recording.cassette, profile)
        return [
            mutated(
                recording,
                Mutation.of(StreamError(after, api=api, profile=profile)),
                wire=profile,
                max_retries=retries,
            )
            for after, retries in chosen.items()
        ]

    async def evaluate(self, session: Session, observed: list[Observation]) -> Outcome:
        """A vendor kind, the vendor's message, the partial content, one request after output."""
        outcome = Outcome()
        said = injected_message(503)
        for obs in observed:
            expect_error(outcome, obs, _VENDOR_KINDS, retryable=None)
            message = obs.message
            if message is None or getattr(obs.terminal, "type", None) != "error":
                continue
            detail = f"errorMessage lacks the vendor's {said!r}"
            outcome.expect(obs, said in (message.error_message or ""), detail, level="streamfns")
            if obs.content_seen:
                outcome.expect(obs, bool(message.content), "the content streamed before the error was dropped")
                if obs.error_info is not None:
                    detail = "ErrorInfo.output_started is false after content"
                    outcome.expect(obs, obs.error_info.output_started, detail, level="streamfns")
                requests = len(obs.requests)
                outcome.expect(obs, requests == 1, f"the server received {requests} requests after output, expected 1")
        return outcome
