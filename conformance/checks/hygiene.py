"""L1, L2, S1: nothing left open, nothing left running, no secret in the output — across the run."""

from __future__ import annotations

import json

from cassettes.mutations import error_body, status_override
from conformance.check import Check, Outcome
from conformance.checks._common import stalled_scenario
from conformance.observe import Observation, Scenario, Served
from conformance.plans import plan
from conformance.session import API_KEY, Session
from normalize.wire import generic_error_body
from streamfns.kit import redact

__all__ = ["ClosesEveryConnection", "LeavesNoTasksBehind", "NeverLeaksTheKey"]


class ClosesEveryConnection(Check):
    """Every HTTP connection must be closed by the adapter once its stream has ended — after
    ``done``, after ``error``, after an abort, after the consumer was cancelled and after it broke out
    of the ``async for`` early. Close the response in a ``finally`` around the read loop (an async
    generator's ``finally`` runs on ``aclose()``), stop reading at the terminal marker, and close a
    client you created yourself."""

    id = "L1"
    title = "every HTTP connection is closed once its stream ends (also after abort, cancel, break)"
    needs = ("http",)

    def scenarios(self, session: Session) -> list[Scenario]:
        """A consumer that breaks out after the first content event, plus the unmutated replays."""
        return [stalled_scenario(session, "l1:break-early", consumer="break"), *session.golden()]

    async def evaluate(self, session: Session, observed: list[Observation]) -> Outcome:
        """Every request of every scenario had its connection closed by the client once the stream had
        ended — by the end of the grace that follows it (``Limits.grace_s``, on the harness's clock:
        the machine's load does not shorten it). What counts is the server seeing the client close
        the connection, not how soon: a response still being read is not a leak."""
        outcome = Outcome()
        outcome.checked = sum(len(obs.requests) for obs in session.observations)
        for obs in session.observations:
            for number in obs.unreleased:
                outcome.flag(
                    obs, f"the connection of request {number} was still open {obs.grace_s:g} s after the stream ended"
                )
        return outcome


class LeavesNoTasksBehind(Check):
    """No task the adapter started may outlive its stream: background readers, keep-alive pingers or
    abort watchers must finish (or be cancelled and awaited) before the terminal event is delivered,
    or when the consumer stops early or is cancelled — and none may end with an exception nobody
    retrieves (asyncio's "Task exception was never retrieved"). A helper that races a read against
    the abort signal must cancel and await its read task also when *it* is cancelled
    (``except asyncio.CancelledError: task.cancel(); raise``). Prefer structured code (the producer
    runs inside the consumer's ``async for``) over fire-and-forget tasks."""

    id = "L2"
    title = "no task started by the adapter outlives its stream or dies with an unretrieved exception"

    def scenarios(self, session: Session) -> list[Scenario]:
        """The unmutated replays (the check looks at every scenario of the run)."""
        return session.golden()

    async def evaluate(self, session: Session, observed: list[Observation]) -> Outcome:
        """Tasks still pending a grace period after each scenario ended. A scenario counts as a case
        examined only when its stream started (a call that gave no stream ran too little to judge)."""
        outcome = Outcome()
        for obs in session.observations:
            outcome.checked += 1 if obs.started else 0
            if obs.leaked_tasks:
                outcome.flag(obs, f"tasks still running after the stream ended: {', '.join(obs.leaked_tasks)}")
            for error in obs.loop_errors:
                outcome.flag(obs, f"the event loop reported (during or right after this scenario): {error}")
        return outcome


def _echo_scenario(session: Session) -> Scenario | None:
    recording = session.recording("text")
    if recording is None:
        return None
    echo = f"Invalid API key: {API_KEY}"
    sample = error_body(401, profile=session.profile, message=echo)
    if echo.encode() not in sample.body:  # a declared error body that leaves the message out: quote it anyway
        sample = generic_error_body(401, echo)
    cassette = status_override(
        recording.cassette, 401, body=sample.body, content_type=sample.content_type, retry_after=None
    )
    fault = "a 401 whose error body quotes the API key back (status:401 with the key in its message)"
    served = Served(plan(cassette, session.profile), fault=fault)
    return Scenario(key="s1:401-echoes-key", recording=recording.name, served=(served,))


class NeverLeaksTheKey(Check):
    """The API key must never appear in an event, an errorMessage or an exception message — also
    when a vendor's error body quotes it back. Redact the key (``options.api_key``) from any vendor
    text and from HTTP-library error messages (URLs may carry it as a query parameter) before it
    goes into errorMessage."""

    id = "S1"
    level = "pi"
    title = "the API key never appears in events or error messages, even when the vendor quotes it"

    def scenarios(self, session: Session) -> list[Scenario]:
        """A 401 whose body quotes the key back, plus the unmutated replays."""
        echo = _echo_scenario(session) if session.http else None
        return [*([echo] if echo else []), *session.golden()]

    async def evaluate(self, session: Session, observed: list[Observation]) -> Outcome:
        """Search every event's JSON, the message ``result()`` returned and every recorded error text
        for the key in any spelling ``streamfns.kit.redact`` knows (escaped, URL-encoded, base64 …).
        A scenario counts as a case examined only when its stream gave an event (a ``start``, or —
        from an adapter that keeps only pi's contract — any event); a key in an exception message is
        flagged whatever the scenario gave."""
        outcome = Outcome()
        for obs in session.observations:
            outcome.checked += 1 if obs.events else 0
            texts = [obs.call_error, obs.iteration_error, obs.result_problem, *obs.loop_errors]
            if any(text and _leaks(text) for text in texts):
                outcome.flag(obs, "an error message contains the API key")
            dumped = [json.dumps(data, ensure_ascii=False) for data in obs.event_json]
            if _leaks("\n".join(dumped)):  # one search per scenario; per event only to say where
                index = next((index for index, text in enumerate(dumped) if _leaks(text)), None)
                excerpt = str(obs.event_json[index].get("type", "")) if index is not None else ""
                outcome.flag(obs, "an event contains the API key", index=index, excerpt=excerpt)
            elif obs.result_json is not None and _leaks(json.dumps(obs.result_json, ensure_ascii=False)):
                outcome.flag(obs, "the message result() returned contains the API key")
        return outcome


def _leaks(text: str) -> bool:
    """True when ``text`` holds the API key in any form ``redact`` removes."""
    return redact(text, [API_KEY]) != text
