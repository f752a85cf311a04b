"""T1, M1, M3, M4: what the adapter does with damaged or re-cut bytes of a good recording."""

from __future__ import annotations

from cassettes.mutation_specs import CorruptJson, Mutation, Rechunk, Truncate
from conformance.check import Check, Outcome
from conformance.checks._common import ended, expect_error, first_difference, mutated, normalized_events
from conformance.observe import Observation, Scenario
from conformance.plans import (
    api_of,
    drop_marker,
    frame_offsets,
    has_marker,
    json_event_indexes,
    marker_offset,
    replay,
    trailer_cut,
)
from conformance.recordings import Recording
from conformance.session import Session

__all__ = [
    "CutBodyIsAnError",
    "MalformedJsonIsAProtocolError",
    "MissingTerminalMarkerIsTruncated",
    "RechunkingChangesNothing",
]

_CUT_FRACTIONS = (0.25, 0.5, 0.75)
#: Bodies up to this size are also replayed one byte per read (larger ones 1–3 bytes per read).
_ONE_BYTE_LIMIT = 4096


def _cuts(session: Session, recording: Recording) -> list[int]:
    """Where to cut ``recording``: the frame boundaries a quarter, half and three quarters of the way
    through its frames before the terminal marker (bytes inside the first frame when the marker is in
    it), and — for an api whose marker a trailer follows — right after the marker, before the trailer."""
    profile = session.profile
    stop = marker_offset(recording.cassette, profile)
    starts = [start for start in frame_offsets(recording.cassette, profile) if 0 < start <= stop]
    cuts: list[int] = []
    for fraction in _CUT_FRACTIONS:
        cut = starts[min(len(starts) - 1, int(len(starts) * fraction))] if starts else max(1, int(stop * fraction))
        if cut not in cuts:
            cuts.append(cut)
    trailer = trailer_cut(recording.cassette, profile)
    if trailer is not None and trailer not in cuts:
        cuts.append(trailer)
    return cuts


class CutBodyIsAnError(Check):
    """A body cut short (a clean EOF at the frame boundaries nearest a quarter, half and three
    quarters of the way to the vendor's terminal marker; and, where the api sends a trailer after the
    marker — Bedrock's usage after ``messageStop`` — right after the marker) must end in ``error``
    with a retryable ErrorInfo (kind ``truncated``), never in ``done``: success is never inferred from
    EOF. Track whether the terminal marker (and the trailer the api promises) arrived and, at EOF
    without it, fail the stream. A cut inside tool-call arguments must never produce ``toolUse``."""

    id = "T1"
    level = "pi"
    title = "a body cut before the terminal marker ends in a retryable error, never done"
    needs = ("http",)

    def scenarios(self, session: Session) -> list[Scenario]:
        """Each recording cut at frame boundaries before its terminal marker, then a clean EOF."""
        found: list[Scenario] = []
        for recording in session.recordings:
            found.extend(
                mutated(recording, Mutation.of(Truncate(bytes=cut, end="eof")), wire=session.profile)
                for cut in _cuts(session, recording)
            )
        return found

    async def evaluate(self, session: Session, observed: list[Observation]) -> Outcome:
        """Every cut ends in a retryable error."""
        outcome = Outcome()
        for obs in observed:
            expect_error(outcome, obs, ("truncated", "network", "protocol"), retryable=True)
        return outcome


class RechunkingChangesNothing(Check):
    """The same bytes cut differently (one byte per read — 1 to 3 bytes for bodies over 4 KiB —,
    random sizes, CR and LF split apart, multi-byte UTF-8 characters split) must give exactly the
    same events as the recording's own chunking. Buffer partial lines and partial UTF-8 sequences
    across reads (decode bytes, not chunks), accept CRLF split across reads, and emit events only for
    complete SSE events."""

    id = "M1"
    level = "pi"
    title = "re-chunking the bytes (1 byte, random, split CRLF, split UTF-8) never changes the events"
    needs = ("http",)

    def scenarios(self, session: Session) -> list[Scenario]:
        """Each recording and its re-chunked variants."""
        found: list[Scenario] = []
        profile = session.profile
        for recording in session.recordings:
            found.append(replay(recording, wire=profile))
            one_byte = len(recording.cassette.interactions[0].response.body) <= _ONE_BYTE_LIMIT
            # every byte its own read costs ~50 µs a byte in most HTTP stacks; 1–3 bytes is close
            variants = (
                Rechunk(1) if one_byte else Rechunk("random", seed=0, max_size=3),
                Rechunk("random", seed=1, max_size=17),
                Rechunk("random", seed=2, max_size=61),
                Rechunk("split_crlf"),
                Rechunk("split_utf8"),
            )
            found.extend(mutated(recording, Mutation.of(variant), wire=profile) for variant in variants)
        return found

    async def evaluate(self, session: Session, observed: list[Observation]) -> Outcome:
        """Compare every variant with its recording's replay."""
        outcome = Outcome()
        per_recording = 6
        for start in range(0, len(observed), per_recording):
            golden, *variants = observed[start : start + per_recording]
            if not ended(golden):
                continue  # nothing to compare against (P1 reports why the replay did not end)
            expected = normalized_events(golden)
            for obs in variants:
                outcome.checked += 1
                difference = first_difference(expected, normalized_events(obs))
                if difference is not None:
                    index, text = difference
                    outcome.flag(obs, "events differ from the recording's own chunking", index=index, excerpt=text)
        return outcome


class MalformedJsonIsAProtocolError(Check):
    """A frame whose JSON payload is cut in half (an SSE event's data, one JSON line, an event-stream
    message's payload re-framed with valid CRCs, inside its envelope where it has one) must end the
    stream in ``error`` of kind ``protocol`` (not ``done``, not a silently skipped frame, not an
    exception). Parse each payload strictly and turn a parse failure into a protocol error."""

    id = "M3"
    level = "pi"
    title = "malformed JSON in an event ends in a protocol error"
    needs = ("http",)

    def scenarios(self, session: Session) -> list[Scenario]:
        """Each recording with its middle JSON frame (not a ping) cut in half."""
        found: list[Scenario] = []
        profile = session.profile
        for recording in session.recordings:
            indexes = json_event_indexes(recording.cassette, profile)
            if not indexes:
                continue
            index = indexes[len(indexes) // 2]
            corrupt = CorruptJson(index, api=api_of(recording.cassette, profile), profile=profile)
            found.append(mutated(recording, Mutation.of(corrupt), wire=profile))
        return found

    async def evaluate(self, session: Session, observed: list[Observation]) -> Outcome:
        """Every corrupted replay ends in a protocol error."""
        outcome = Outcome()
        for obs in observed:
            expect_error(outcome, obs, ("protocol",), retryable=None)
        return outcome


class MissingTerminalMarkerIsTruncated(Check):
    """A body that ends cleanly but without the api's terminal marker, as its wire profile declares
    it (Anthropic ``message_stop``, OpenAI ``[DONE]``/``finish_reason``, Responses
    ``response.completed``, Gemini ``finishReason``, a third party's own) must end in ``error`` of
    kind ``truncated``, retryable — never ``done``: success is never inferred from EOF. Remember
    whether the marker arrived; at EOF without it, fail."""

    id = "M4"
    level = "pi"
    title = "a body without the api's terminal marker ends in a truncated error"
    needs = ("http", "terminal")

    def scenarios(self, session: Session) -> list[Scenario]:
        """Each recording with its terminal marker removed (a recording that has none — an author's
        that ends in a vendor error — has nothing to remove; P1 says what became of it)."""
        profile = session.profile
        return [
            mutated(r, Mutation.of(drop_marker(r.cassette, profile)), wire=profile)
            for r in session.recordings
            if has_marker(r.cassette, profile)
        ]

    async def evaluate(self, session: Session, observed: list[Observation]) -> Outcome:
        """Every replay without its marker ends truncated."""
        outcome = Outcome()
        for obs in observed:
            expect_error(outcome, obs, ("truncated",), retryable=True)
        return outcome
