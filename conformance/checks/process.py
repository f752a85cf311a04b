"""X1, X2: how an adapter run as a process (``conformance run --exec``) keeps the process protocol.

Only a process adapter has these to judge (:mod:`conformance.process`); for any other target they
are left out of the report. What they read is each scenario's process reports — what the harness saw
the process do, written down as it happened (:class:`~conformance.process.child.Fault`).
"""

from __future__ import annotations

from conformance.check import Check, Outcome
from conformance.checks._common import golden_served, text_recording_name
from conformance.observe import Observation, Scenario
from conformance.session import Session

__all__ = ["ProcessIsWellBehaved", "ProcessKeepsTheProtocol"]


class _ProcessCheck(Check):
    """What X1 and X2 share: a plain replay of their own, and every process of the run judged."""

    needs = ("process",)

    def scenarios(self, session: Session) -> list[Scenario]:
        """A plain replay (every other scenario of the run is judged too)."""
        return [Scenario(key="x:plain", recording=text_recording_name(session), served=golden_served(session))]

    async def evaluate(self, session: Session, observed: list[Observation]) -> Outcome:
        """Each process of each scenario is a case; each of its faults this check judges, a problem."""
        del observed
        outcome = Outcome()
        for obs in session.observations:
            for report in obs.processes:
                outcome.checked += 1
                for fault in report.faults:
                    if fault.check == self.id:
                        outcome.flag(obs, f"process {report.pid} {fault.detail}" if report.pid else fault.detail)
        return outcome


class ProcessKeepsTheProtocol(_ProcessCheck):
    """The adapter process must speak ``streamfns-process/1`` (docs/process-protocol.md): say
    ``{"type": "ready"}`` once started; write only events on stdout, one JSON object per line; end
    every call with a terminal event before it exits or closes stdout (a crash, an uncaught exception
    or an exit mid-stream leaves the stream without one); and after ``{"type": "abort"}`` on stdin (or
    ``SIGINT``, with ``--abort signal``), end the stream ``aborted`` at once — a process that has not
    ended it within the abort grace is killed. Log to a file, never to stdout; catch every error and
    turn it into an ``error`` event; read stdin for the abort line while the request runs."""

    id = "X1"
    title = "the adapter process speaks the protocol: ready, only events on stdout, a terminal, abort honoured"
    level = "pi"


class ProcessIsWellBehaved(_ProcessCheck):
    """The adapter process must behave: nothing on stderr during a run (a warning printed by a
    library counts: silence it, or log to a file), nothing on stdout after its terminal event, exit
    with status 0 once its stdin closes — within the grace the harness gives any adapter after its
    stream (``Limits.grace_s``) — and leave no process of its own running. What is still running then
    is killed, with everything it started."""

    id = "X2"
    title = "the adapter process is well behaved: stderr empty, exits 0 after its terminal, leaves nothing running"
