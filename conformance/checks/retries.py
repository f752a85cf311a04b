"""R1, R2: retries happen only before output, and honour ``retry-after``."""

from __future__ import annotations

from cassettes import EndKind
from cassettes.mutation_specs import Mutation, Status
from conformance.check import Check, Outcome
from conformance.checks._common import expect_error
from conformance.observe import Observation, Scenario
from conformance.plans import api_of, open_ended, served
from conformance.session import Session

__all__ = ["NoRetryAfterOutput", "RetriesHonourRetryAfter"]

_RETRIES = 2
#: How the R2 bodies end: (label, recorded end) — a recorded reset is replayed as a hang-up.
_ENDS: tuple[tuple[str, EndKind], ...] = (("hangup", "reset"), ("eof", "eof"))


class RetriesHonourRetryAfter(Check):
    """A 429 before any output, with ``retry-after``: an adapter that declares ``retries`` must wait at
    least that long, retry, and succeed — with a single ``start`` (the retry is invisible in the
    events). An adapter without retries must end the stream in ``error`` of kind ``rate_limit``,
    retryable, after exactly one request (retry it in your agent loop instead, reading
    ``ErrorInfo.retry_after_s``). Read ``retry-after-ms`` and ``retry-after`` (seconds, possibly
    fractional, or an HTTP date), cap the delay with ``max_retry_delay_s``, and make the sleep abortable."""

    id = "R1"
    title = "a 429 before output is retried after retry-after (or reported as rate_limit)"
    needs = ("http",)

    def scenarios(self, session: Session) -> list[Scenario]:
        """A 429 with a short retry-after, then the text recording."""
        recording = session.recording("text")
        if recording is None:
            return []
        wait = f"{session.limits.retry_after_s:g}"
        profile = session.profile
        return [
            Scenario(
                key="r1:429-then-replay",
                recording=recording.name,
                served=(
                    served(
                        recording,
                        Mutation.of(Status(429, wait, api=api_of(recording.cassette, profile), profile=profile)),
                        wire=profile,
                    ),
                    served(recording, wire=profile),
                ),
                max_retries=_RETRIES,
            )
        ]

    async def evaluate(self, session: Session, observed: list[Observation]) -> Outcome:
        """Success after one honoured retry, or a rate_limit error without any."""
        outcome = Outcome()
        if not observed:
            return outcome
        obs = observed[0]
        requests = obs.requests
        if not session.capabilities.retries:
            expect_error(outcome, obs, ("rate_limit",), retryable=True)
            outcome.expect(
                obs,
                len(requests) == 1,
                f"the server received {len(requests)} requests although capabilities.retries is False "
                "(declare retries=True if the adapter retries)",
            )
            return outcome
        outcome.expect(
            obs, getattr(obs.terminal, "type", None) == "done", f"expected done after a retry, got {obs.outcome()}"
        )
        if not outcome.expect(obs, len(requests) == 2, f"the server received {len(requests)} requests, expected 2"):
            return outcome
        # Wall time, unlike the harness's upper bounds: a lower bound on the adapter's own wait, which
        # the machine's load can only lengthen.
        gap = requests[1].received_at - requests[0].received_at
        wanted = session.limits.retry_after_s
        outcome.expect(
            obs, gap >= wanted - 0.02, f"the retry came after {gap:.3f} s; retry-after asked for {wanted:g} s"
        )
        starts = sum(1 for event in obs.events if getattr(event, "type", None) == "start")
        outcome.expect(obs, starts == 1, f"{starts} start events across the retry, expected 1")
        return outcome


class NoRetryAfterOutput(Check):
    """Once content has been emitted, a failure must never be retried: the consumer has already seen
    the output, and a retry would duplicate it. After a dropped connection or an EOF without the terminal marker
    following output, the server must see exactly one request and the stream must end in ``error``
    with ``output_started`` true. Decide "may retry" from whether any content event was emitted. (A
    body whose cut came before any content event may be retried: such a case is not counted.)"""

    id = "R2"
    level = "pi"
    title = "a failure after output is never retried"
    needs = ("http",)

    def scenarios(self, session: Session) -> list[Scenario]:
        """The text recording without its terminal marker, then a dropped connection or a clean EOF."""
        recording = session.recording("text")
        if recording is None:
            return []
        profile = session.profile
        return [
            Scenario(
                key=f"r2:{label}-after-output",
                recording=recording.name,
                served=(served(recording, open_ended(recording.cassette, profile, end=end), wire=profile),),
                max_retries=_RETRIES,
            )
            for label, end in _ENDS
        ]

    async def evaluate(self, session: Session, observed: list[Observation]) -> Outcome:
        """One request each, an error terminal, output_started — for every case whose first attempt
        emitted content before the failure (the only ones that test this rule: one that failed before
        any output may be retried, and is not counted)."""
        outcome = Outcome()
        for obs in observed:
            if not obs.content_seen:
                continue  # failed before any output: retrying was allowed, so this case says nothing here
            outcome.expect(
                obs, getattr(obs.terminal, "type", None) == "error", f"expected an error, got {obs.outcome()}"
            )
            outcome.expect(obs, len(obs.requests) == 1, f"the server received {len(obs.requests)} requests, expected 1")
            info = obs.error_info
            if info is not None:
                detail = "ErrorInfo.output_started is false after content events"
                outcome.expect(obs, info.output_started, detail, level="streamfns")
        return outcome
