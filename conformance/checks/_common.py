"""What the checks share: scenario builders, error expectations, and event lists in a comparable form.

Comparable events (for the chunking-invariance and determinism checks): two runs over the same bytes
must give the same events. What may legitimately differ is left out: the message timestamp, and
tool-call ids the adapter generated itself (every tool-call id is replaced by its order of first
appearance, so generated ids compare equal while a call that moves or splits still differs).
"""

from __future__ import annotations

from typing import Any

from conformance.check import Outcome
from conformance.observe import AbortMode, Consumer, Observation, Scenario, Served
from conformance.plans import mutated, open_ended, served
from conformance.session import Session
from normalize import ErrorKind

__all__ = [
    "ended",
    "expect_error",
    "first_difference",
    "golden_served",
    "mutated",
    "normalized_events",
    "outcome_list",
    "stalled_scenario",
    "text_recording_name",
]


def text_recording_name(session: Session) -> str | None:
    """The name of the recording used where one replay is enough."""
    recording = session.recording("text")
    return recording.name if recording else None


def golden_served(session: Session) -> tuple[Served, ...]:
    """The text recording served as recorded (nothing for an adapter without HTTP)."""
    recording = session.recording("text")
    if not session.http or recording is None:
        return ()
    return (served(recording, wire=session.profile),)


def stalled_scenario(
    session: Session, key: str, *, abort: AbortMode = "none", consumer: Consumer = "iterate"
) -> Scenario:
    """The text recording without its terminal marker, then silence until the client gives up; for
    an adapter without HTTP, a plain call."""
    recording = session.recording("text")
    if not session.http or recording is None:
        return Scenario(key=key, abort=abort, consumer=consumer)
    mutation = open_ended(recording.cassette, session.profile, end="timeout")
    return Scenario(
        key=f"{key}:{recording.name}",
        recording=recording.name,
        served=(served(recording, mutation, wire=session.profile),),
        abort=abort,
        consumer=consumer,
    )


def ended(obs: Observation) -> bool:
    """True when the stream was consumed to its terminal event (comparable with another)."""
    return obs.complete and obs.terminal is not None


def outcome_list(observations: list[Observation]) -> str:
    """``key → outcome`` for a few observations (for 'none of them did X' messages)."""
    return "; ".join(f"{obs.scenario.key} → {obs.outcome()}" for obs in observations[:4])


def expect_error(outcome: Outcome, obs: Observation, kinds: tuple[ErrorKind, ...], *, retryable: bool | None) -> None:
    """Count one case: ``obs`` must end in ``error`` (the shared contract, ``pi``: never success from a
    broken stream) with an ErrorInfo of one of ``kinds`` and the given ``retryable``, unless None
    (streamfns' stricter contract: those problems are flagged at ``streamfns`` level)."""
    info = obs.error_info
    terminal = obs.terminal
    if terminal is None or terminal.type != "error":
        outcome.expect(obs, False, f"expected an error ({'/'.join(kinds)}), got {obs.outcome()}")
        return
    if info is None:
        outcome.expect(obs, False, f"expected an error ({'/'.join(kinds)}), got {obs.outcome()}", level="streamfns")
        return
    problems: list[str] = []
    if info.kind not in kinds:
        problems.append(f"kind {info.kind!r}, expected {' or '.join(repr(k) for k in kinds)}")
    if retryable is not None and info.retryable != retryable:
        problems.append(f"retryable={info.retryable}, expected {retryable}")
    outcome.expect(obs, not problems, f"{obs.outcome()}: {'; '.join(problems)}", level="streamfns")


# -- comparable events ------------------------------------------------------------------------------------


def _mask(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():  # pyright: ignore[reportUnknownVariableType]
            if key == "timestamp":
                continue
            if key == "id" and value.get("type") == "toolCall" and isinstance(item, str):  # pyright: ignore[reportUnknownMemberType]
                out[key] = ids.setdefault(item, f"<tool-call-{len(ids)}>")
                continue
            out[str(key)] = _mask(item, ids)  # pyright: ignore[reportUnknownArgumentType]
        return out
    if isinstance(value, list):
        return [_mask(item, ids) for item in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def normalized_events(obs: Observation) -> list[dict[str, Any]]:
    """The observation's events as pi JSON without timestamps, tool-call ids masked by order of
    appearance (events the adapter got wrong appear as ``{"type": "<unreadable>"}``)."""
    ids: dict[str, str] = {}
    return [_mask(data, ids) for data in obs.event_json]


def first_difference(left: list[dict[str, Any]], right: list[dict[str, Any]]) -> tuple[int, str] | None:
    """The index of the first differing event and a short description, or None when equal."""
    for index, (a, b) in enumerate(zip(left, right, strict=False)):
        if a != b:
            return index, f"{_short(a)} != {_short(b)}"
    if len(left) != len(right):
        index = min(len(left), len(right))
        return index, f"{len(left)} events != {len(right)} events"
    return None


def _short(value: dict[str, Any]) -> str:
    text = repr(value)
    return text if len(text) <= 160 else text[:157] + "..."
