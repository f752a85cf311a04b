"""N1, N2, A1, A2, D1: how the StreamFn behaves as a Python callable, whatever the server says."""

from __future__ import annotations

import dataclasses

from conformance.check import Check, Outcome
from conformance.checks._common import (
    ended,
    first_difference,
    golden_served,
    normalized_events,
    stalled_scenario,
    text_recording_name,
)
from conformance.observe import Observation, Scenario
from conformance.session import Session
from normalize import Context

__all__ = [
    "AbortBeforeTheRequest",
    "AbortMidStream",
    "CallNeverRaises",
    "IterationNeverRaises",
    "ReplaysAreDeterministic",
]


class CallNeverRaises(Check):
    """Calling the StreamFn (and awaiting it, if it returns an awaitable) must never raise an
    ``Exception``: a bad model, a missing key, ``options=None``, an empty context or an unusable
    ``base_url`` all come back as a stream that ends in ``error``. Catch at the boundary and build an
    error stream (``streamfns.error_stream``), or do the work lazily inside the stream's producer.
    The harness calls ``options=None``, an empty context, ``base_url="not a url"`` and every other
    scenario of the run."""

    id = "N1"
    level = "pi"
    title = "calling the StreamFn never raises (options=None, an empty context, a bad base_url … end as error streams)"

    def scenarios(self, session: Session) -> list[Scenario]:
        """Odd inputs, plus the unmutated replays."""
        name = text_recording_name(session) if session.http else None
        golden = golden_served(session)
        found = [
            Scenario(key="n1:options-none", recording=name, served=golden, pass_options=False),
            Scenario(key="n1:empty-context", recording=name, served=golden, context=Context()),
        ]
        if session.http:
            found.append(
                Scenario(key="n1:bad-base-url", base_url="not a url", fault="no server: model.base_url is 'not a url'")
            )
        return [*found, *session.golden()]

    async def evaluate(self, session: Session, observed: list[Observation]) -> Outcome:
        """No observation of the run may have raised at call time; the odd inputs must end the stream.
        A scenario that hung (or was cut off) without raising is no case examined: whether its call
        would have raised, or its stream ended as an error, was never seen."""
        outcome = Outcome()
        for obs in session.observations:
            if obs.call_error is not None:
                outcome.expect(obs, False, f"calling the StreamFn raised {obs.call_error}")
            elif not obs.hung and obs.cut_off is None:
                outcome.checked += 1
        for obs in observed:
            if obs.call_error is None and obs.complete and obs.terminal is None:
                outcome.flag(obs, "the stream ended without a terminal event")
        return outcome


class IterationNeverRaises(Check):
    """Iterating the stream (and ``await stream.result()``) must never raise an ``Exception``: turn
    HTTP errors, malformed bytes and dropped connections into an ``error`` event. But Python's own
    cancellation must pass through: when the consuming task is cancelled mid-stream,
    ``asyncio.CancelledError`` must propagate out of the ``async for`` (never swallowed, never turned
    into an event that lets the loop finish normally) and the HTTP response must be closed on the
    way out (``try/finally``). ``except Exception`` is right; ``except BaseException`` is not."""

    id = "N2"
    level = "pi"
    title = "iterating never raises; a cancelled consumer gets CancelledError"

    def scenarios(self, session: Session) -> list[Scenario]:
        """A consumer task cancelled mid-stream, plus the unmutated replays."""
        return [stalled_scenario(session, "n2:cancel-mid-stream", consumer="cancel"), *session.golden()]

    async def evaluate(self, session: Session, observed: list[Observation]) -> Outcome:
        """No observation raised while iterating; the cancellation propagated. A stream that hung
        (or was cut off) without raising is no case examined: its iteration never finished."""
        outcome = Outcome()
        for obs in session.observations:
            if obs.iteration_error is not None:
                outcome.expect(obs, False, f"iterating the stream raised {obs.iteration_error}")
            elif not obs.hung and obs.cut_off is None:
                outcome.checked += 1
            problem = obs.result_problem or ""
            if problem.startswith("result() raised"):
                outcome.flag(obs, problem)
        cancel = observed[0]
        messages = {
            "swallowed": "the consumer task was cancelled but finished normally: CancelledError was swallowed",
            "raised": "the cancelled consumer ended with another exception instead of CancelledError",
            "stuck": "the consumer task was still running 1 s after cancel()",
            "finished-first": f"the stream ended ({cancel.outcome()}) before the cancellation could land mid-stream",
        }
        state = cancel.cancel_outcome or "finished-first"
        outcome.expect(cancel, state == "propagated", messages.get(state, state))
        return outcome


class AbortBeforeTheRequest(Check):
    """With ``StreamOptions.signal`` already aborted, the StreamFn must send nothing and end at once
    with exactly ``start`` then ``error`` (reason ``aborted``, ErrorInfo kind ``aborted``) and empty
    content. Check ``signal.aborted`` before building or sending the request."""

    id = "A1"
    level = "pi"
    title = "an abort before the request sends nothing and ends aborted"

    def scenarios(self, session: Session) -> list[Scenario]:
        """The text replay with an already-aborted signal."""
        name = text_recording_name(session) if session.http else None
        return [Scenario(key="a1:pre-aborted", recording=name, served=golden_served(session), abort="before")]

    async def evaluate(self, session: Session, observed: list[Observation]) -> Outcome:
        """Events, reason, kind, content and the server's request count."""
        obs = observed[0]
        outcome = Outcome()
        if not outcome.expect(obs, obs.complete, f"the stream did not complete: {obs.outcome()}"):
            return outcome
        types = [getattr(event, "type", "?") for event in obs.events]
        # pi: nothing streamed, one terminal; streamfns: and a start before it.
        ends_at_once = types[-1:] == ["error"] and len(types) <= 2
        shape = f"events were {types}, expected ['start', 'error']"
        outcome.expect(obs, ends_at_once, shape)
        if ends_at_once:
            outcome.expect(obs, types == ["start", "error"], shape, level="streamfns")
        terminal = obs.terminal
        reason = getattr(terminal, "reason", None)
        outcome.expect(obs, reason == "aborted", f"the stream ended {obs.outcome()}, expected aborted")
        info = obs.error_info
        if info is not None:
            outcome.expect(
                obs, info.kind == "aborted", f"ErrorInfo.kind is {info.kind!r}, expected 'aborted'", level="streamfns"
            )
        message = obs.message
        if message is not None:
            outcome.expect(obs, not message.content, f"the aborted message has {len(message.content)} content block(s)")
        if session.http:
            outcome.expect(obs, not obs.requests, f"the server received {len(obs.requests)} request(s), expected none")
        return outcome


class AbortMidStream(Check):
    """An abort mid-stream must end the stream ``aborted`` promptly — even while the server is
    silent — keeping the partial content received so far. Race every read against the signal (e.g.
    ``asyncio.wait`` on the read and ``signal.wait()``), not only between chunks, and close the
    response when the abort wins. The harness aborts shortly after the first content event while the
    server has gone quiet, and allows ``Limits.abort_bound_s`` (200 ms, on the harness's clock: time
    the machine's load kept the harness from running does not count)."""

    id = "A2"
    level = "pi"
    title = "an abort mid-stream ends aborted within the bound, partial content kept"

    def scenarios(self, session: Session) -> list[Scenario]:
        """The text replay cut before its end, the server then silent; abort after the first content."""
        return [stalled_scenario(session, "a2:abort-mid-stream", abort="mid")]

    async def evaluate(self, session: Session, observed: list[Observation]) -> Outcome:
        """Reason, latency after the abort (on the harness's clock), and the partial content."""
        obs = observed[0]
        outcome = Outcome()
        if not outcome.expect(obs, obs.complete, f"the stream did not complete: {obs.outcome()}"):
            return outcome
        abort_at, terminal_at = obs.abort_at, obs.terminal_at
        if abort_at is None or terminal_at is None or terminal_at < abort_at:
            outcome.flag(obs, f"the stream ended {obs.outcome()} before the harness aborted it")
            return outcome
        outcome.expect(obs, getattr(obs.terminal, "reason", None) == "aborted", f"ended {obs.outcome()}, not aborted")
        latency = terminal_at - abort_at
        bound = session.limits.abort_bound_s
        outcome.expect(
            obs,
            latency <= bound,
            f"the terminal came {latency * 1000:.0f} ms after the abort (bound {bound * 1000:.0f} ms)",
        )
        message = obs.message
        if obs.content_seen and message is not None:
            outcome.expect(obs, bool(message.content), "the aborted message dropped the content already streamed")
        return outcome


class ReplaysAreDeterministic(Check):
    """Replaying the same bytes twice must give the same events (ignoring the message timestamp and
    generated tool-call ids). Nondeterminism usually comes from iterating a set or dict in an
    unspecified order, from random ids written into content, or from time-dependent batching that
    changes which events are emitted."""

    id = "D1"
    title = "two replays of the same recording give identical events"

    def scenarios(self, session: Session) -> list[Scenario]:
        """Every unmutated replay, twice."""
        golden = session.golden()
        again = [dataclasses.replace(s, key=f"{s.key}|again") for s in golden]
        return [*golden, *again]

    async def evaluate(self, session: Session, observed: list[Observation]) -> Outcome:
        """Compare each replay with its repeat."""
        outcome = Outcome()
        half = len(observed) // 2
        for first, second in zip(observed[:half], observed[half:], strict=True):
            if not (ended(first) or ended(second)):
                continue  # two streams that never ended prove nothing by being alike
            difference = first_difference(normalized_events(first), normalized_events(second))
            outcome.checked += 1
            if difference is not None:
                index, text = difference
                outcome.flag(second, "the repeat differs from the first replay", index=index, excerpt=text)
        return outcome
