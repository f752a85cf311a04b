"""Scenario builders and small helpers shared by the checks."""

from __future__ import annotations

from cassettes import Cassette
from conformance.loopback import Scripted
from conformance.observe import AbortMode, Consumer, Observation, Scenario
from conformance.plans import open_ended, plan
from conformance.recordings import Recording
from conformance.registry import Outcome
from conformance.session import Session
from normalize import ErrorKind

__all__ = ["expect_error", "golden_plans", "mutated", "outcome_list", "stalled_scenario", "text_recording_name"]


def text_recording_name(session: Session) -> str | None:
    """The name of the recording used where one replay is enough."""
    recording = session.recording("text")
    return recording.name if recording else None


def golden_plans(session: Session) -> tuple[Scripted, ...]:
    """The text recording's unmutated plan (nothing for an adapter without HTTP)."""
    recording = session.recording("text")
    if not session.http or recording is None:
        return ()
    return (plan(recording.cassette),)


def stalled_scenario(
    session: Session, key: str, *, abort: AbortMode = "none", consumer: Consumer = "iterate"
) -> Scenario:
    """The text recording without its terminal marker, then silence until the client gives up; for
    an adapter without HTTP, a plain call."""
    recording = session.recording("text")
    if not session.http or recording is None:
        return Scenario(key=key, abort=abort, consumer=consumer)
    cassette = open_ended(recording.cassette, session.capabilities.api, end="timeout")
    return Scenario(
        key=f"{key}:{recording.name}",
        recording=recording.name,
        mutation="open-ended+stall",
        plans=(plan(cassette),),
        abort=abort,
        consumer=consumer,
    )


def outcome_list(observations: list[Observation]) -> str:
    """``key → outcome`` for a few observations (for 'none of them did X' messages)."""
    return "; ".join(f"{obs.scenario.key} → {obs.outcome()}" for obs in observations[:4])


def mutated(recording: Recording, mutation: str, cassette: Cassette) -> Scenario:
    """A scenario serving ``cassette`` (a mutation of ``recording``), keyed ``<recording>|<mutation>``."""
    return Scenario(
        key=f"{recording.name}|{mutation}",
        recording=recording.name,
        mutation=mutation,
        plans=(plan(cassette),),
    )


def expect_error(outcome: Outcome, obs: Observation, kinds: tuple[ErrorKind, ...], *, retryable: bool | None) -> None:
    """Count one case: ``obs`` must end in ``error`` with an ErrorInfo of one of ``kinds`` (and the
    given ``retryable``, unless None)."""
    info = obs.error_info
    terminal = obs.terminal
    if terminal is None or terminal.type != "error" or info is None:
        outcome.expect(obs, False, f"expected an error ({'/'.join(kinds)}), got {obs.outcome()}")
        return
    problems: list[str] = []
    if info.kind not in kinds:
        problems.append(f"kind {info.kind!r}, expected {' or '.join(repr(k) for k in kinds)}")
    if retryable is not None and info.retryable != retryable:
        problems.append(f"retryable={info.retryable}, expected {retryable}")
    outcome.expect(obs, not problems, f"{obs.outcome()}: {'; '.join(problems)}")
