"""What every framing shares: content types, and failures that survive a trip through pickle."""

from __future__ import annotations

import pickle

import pytest

from normalize.wire import AWS_EVENTSTREAM, NDJSON, SSE, FrameTooLarge, FramingError, SSEEventTooLarge


@pytest.mark.parametrize(
    ("framing", "content_type", "accepted"),
    [
        (SSE, "text/event-stream; charset=utf-8", True),
        (SSE, "application/x-ndjson", False),
        (SSE, "application/vnd.amazon.eventstream", False),
        (NDJSON, "application/stream+json", True),
        (NDJSON, "application/x-json-stream", True),
        (NDJSON, "text/event-stream", False),
        (NDJSON, "application/json", False),
        (AWS_EVENTSTREAM, "text/event-stream", False),
        (AWS_EVENTSTREAM, "application/octet-stream", True),
    ],
)
def test_a_framing_never_reads_another_framings_stream(framing: object, content_type: str, accepted: bool) -> None:
    assert framing.accepts(content_type) is accepted  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]


def test_framing_failures_survive_pickle_with_what_they_carry() -> None:
    failures: list[FramingError] = [
        FramingError("cut", kind="truncated", frames=[b"a"]),
        FrameTooLarge("big", limit=4, size=9, frames=[b"b"]),
        SSEEventTooLarge(4, 9),
    ]
    for failure in failures:
        copy = pickle.loads(pickle.dumps(failure))
        assert type(copy) is type(failure)
        assert (str(copy), copy.kind, copy.frames) == (str(failure), failure.kind, failure.frames)
    too_large = pickle.loads(pickle.dumps(failures[2]))
    assert isinstance(too_large, SSEEventTooLarge)
    assert (too_large.limit, too_large.size, too_large.events) == (4, 9, [])
