"""H1, H2, C1, C2, C3: HTTP statuses, bodies that are not a stream, dropped and silent connections."""

from __future__ import annotations

from cassettes.mutation_specs import EmptyBody, Mutation, Stall, Status, Truncate
from cassettes.mutations import error_body, injected_message
from conformance.check import Check, Outcome
from conformance.checks._common import expect_error, mutated, text_recording_name
from conformance.loopback import Scripted
from conformance.observe import Observation, Scenario, Served
from conformance.plans import api_of, open_ended, raw_plan, served
from conformance.session import Session
from normalize import ErrorKind

__all__ = [
    "ErrorStatusesMapToKinds",
    "NonStreamBodiesAreErrors",
    "RefusedIsANetworkError",
    "ResetIsANetworkError",
    "SilenceTimesOut",
]

#: status → (acceptable kinds, retryable)
_STATUS_KINDS: dict[int, tuple[tuple[ErrorKind, ...], bool]] = {
    400: (("invalid_request",), False),
    401: (("auth",), False),
    404: (("not_found",), False),
    429: (("rate_limit",), True),
    500: (("server",), True),
    502: (("server",), True),
    503: (("server", "overloaded"), True),
    529: (("overloaded",), True),
}
_RETRY_AFTER = "7"
_SILENCE_S = 30.0
_EMPTY = Mutation.of(EmptyBody())
_JSON_200 = "a 200 whose body is one JSON object (application/json), not an event stream"
_HTML_200 = "a 200 whose body is an HTML sign-in page (text/html)"
_SILENT = f"a server that accepts the request and then says nothing for {_SILENCE_S:g} s (no status line)"


class ErrorStatusesMapToKinds(Check):
    """Each HTTP error status must end the stream in ``error`` whose ErrorInfo has the right kind,
    ``retryable`` flag and ``status``: 400 → invalid_request, 401 → auth, 404 → not_found (not
    retryable); 429 → rate_limit with ``retry_after_s`` from the ``retry-after`` header; 500/502 (an HTML
    gateway page) → server; 503 → server or overloaded; 529 → overloaded (retryable). The vendor's
    own error message (from its JSON error body) belongs in errorMessage. Start from
    ``normalize.error_kind_for_status`` and refine with the vendor's error type."""

    id = "H1"
    level = "pi"
    title = (
        "HTTP error statuses (400/401/404/429/500/502/503/529) end in errors with the right kind, retryable and status"
    )
    needs = ("http",)

    def scenarios(self, session: Session) -> list[Scenario]:
        """One error response per status, shaped like the vendor's when the api is known."""
        recording = session.recording("text")
        if recording is None:
            return []
        profile = session.profile
        return [
            Scenario(
                key=f"h1:http-{status}",
                recording=recording.name,
                served=(
                    served(
                        recording,
                        Mutation.of(
                            Status(
                                status,
                                _RETRY_AFTER if status == 429 else None,
                                api=api_of(recording.cassette, profile),
                                profile=profile,
                            )
                        ),
                        wire=profile,
                    ),
                ),
            )
            for status in _STATUS_KINDS
        ]

    async def evaluate(self, session: Session, observed: list[Observation]) -> Outcome:
        """Kind, retryable, status, retry-after and the vendor's message, per status."""
        outcome = Outcome()
        for obs, status in zip(observed, _STATUS_KINDS, strict=True):
            kinds, retryable = _STATUS_KINDS[status]
            expect_error(outcome, obs, kinds, retryable=retryable)
            info = obs.error_info
            message = obs.message
            if message is None:
                continue
            if info is not None:
                detail = f"ErrorInfo.status is {info.status}, expected {status}"
                outcome.expect(obs, info.status == status, detail, level="streamfns")
            if info is not None and status == 429:
                ok = info.retry_after_s is not None and abs(info.retry_after_s - float(_RETRY_AFTER)) < 0.01
                detail = f"ErrorInfo.retry_after_s is {info.retry_after_s}, expected {_RETRY_AFTER}"
                outcome.expect(obs, ok, detail, level="streamfns")
            # The vendor's message is expected where the api's error body carries it (not in the 502
            # gateway page, nor in a declared body that leaves it out).
            vendor = injected_message(status)
            if vendor.encode() in error_body(status, profile=session.profile).body:
                outcome.expect(
                    obs,
                    vendor in (message.error_message or ""),
                    f"errorMessage lacks the vendor's message {vendor!r}",
                    level="streamfns",
                )
        return outcome


class NonStreamBodiesAreErrors(Check):
    """A 200 whose body is not an event stream must end in ``error``: a JSON body
    (``application/json``) or an HTML page is kind ``protocol`` — check the content type before
    parsing —, and an empty body is ``truncated`` or ``protocol``. Never a ``done`` with no content."""

    id = "H2"
    level = "pi"
    title = "a 200 that is not an event stream (JSON, HTML, empty) ends in an error"
    needs = ("http",)

    def scenarios(self, session: Session) -> list[Scenario]:
        """A JSON 200, an HTML 200 and an empty 200."""
        json_body = b'{"id":"conformance-1","object":"not-a-stream","content":[{"type":"text","text":"Hello"}]}\n'
        html_body = b"<!DOCTYPE html>\n<html><body><h1>Sign in to continue</h1></body></html>\n"
        found = [
            Scenario(
                key="h2:json-200",
                served=(Served(raw_plan(200, "application/json", json_body), fault=_JSON_200),),
            ),
            Scenario(
                key="h2:html-200",
                served=(Served(raw_plan(200, "text/html; charset=utf-8", html_body), fault=_HTML_200),),
            ),
        ]
        recording = session.recording("text")
        if recording is not None:
            found.append(mutated(recording, _EMPTY, wire=session.profile))
        return found

    async def evaluate(self, session: Session, observed: list[Observation]) -> Outcome:
        """Protocol errors for the JSON and HTML bodies; truncated or protocol for the empty one."""
        outcome = Outcome()
        for obs in observed:
            kinds: tuple[ErrorKind, ...] = (
                ("truncated", "protocol") if obs.scenario.mutation == _EMPTY.spec else ("protocol",)
            )
            expect_error(outcome, obs, kinds, retryable=None)
        return outcome


class ResetIsANetworkError(Check):
    """A connection reset (a TCP RST) — right after the response headers, or mid-body after
    content — must end in ``error`` of kind ``network``, retryable, with ``output_started`` telling whether content had
    been emitted, and the partial content kept. Catch the HTTP library's read errors around every
    read and map them to ``network`` (timeouts to ``timeout``)."""

    id = "C1"
    level = "pi"
    title = "a reset connection (after the headers, mid-body) ends in a retryable network error, partial content kept"
    needs = ("http",)

    def scenarios(self, session: Session) -> list[Scenario]:
        """A reset after the headers and a reset after most of the body."""
        recording = session.recording("text")
        if recording is None:
            return []
        profile = session.profile
        after_headers = Mutation.of(Truncate(bytes=0, end="reset"))
        mid_body = open_ended(recording.cassette, profile, end="reset")
        return [mutated(recording, mutation, reset=True, wire=profile) for mutation in (after_headers, mid_body)]

    async def evaluate(self, session: Session, observed: list[Observation]) -> Outcome:
        """Kind network, retryable, output_started and the partial content."""
        outcome = Outcome()
        for obs in observed:
            expect_error(outcome, obs, ("network",), retryable=True)
            info, message = obs.error_info, obs.message
            if message is None:
                continue
            if info is not None:
                outcome.expect(
                    obs,
                    info.output_started == obs.content_seen,
                    f"ErrorInfo.output_started is {info.output_started} but content events were "
                    f"{'' if obs.content_seen else 'not '}emitted",
                    level="streamfns",
                )
            if obs.content_seen:
                outcome.expect(obs, bool(message.content), "the partial content was dropped")
        return outcome


class RefusedIsANetworkError(Check):
    """A refused connection (nothing listens on the port) must end in ``error`` of kind ``network``,
    retryable, with ``output_started`` false — not an exception from the HTTP library."""

    id = "C2"
    level = "pi"
    title = "a refused connection ends in a retryable network error"
    needs = ("http",)

    def scenarios(self, session: Session) -> list[Scenario]:
        """``base_url`` on a port that was bound and released."""
        return [
            Scenario(
                key="c2:refused-port",
                recording=text_recording_name(session),
                refused=True,
                fault="no server: a port that was bound and released, so connecting is refused",
            )
        ]

    async def evaluate(self, session: Session, observed: list[Observation]) -> Outcome:
        """Kind network, retryable, no output."""
        outcome = Outcome()
        obs = observed[0]
        expect_error(outcome, obs, ("network",), retryable=True)
        info = obs.error_info
        if info is not None:
            detail = "ErrorInfo.output_started is true for a refused connection"
            outcome.expect(obs, not info.output_started, detail, level="streamfns")
        return outcome


class SilenceTimesOut(Check):
    """A server that goes silent — before sending any header, or in the middle of the body — must
    end the stream in ``error`` of kind ``timeout`` (retryable) once ``StreamOptions.timeout`` (the
    idle timeout: the longest wait for the next bytes) has passed, not hang. Apply the idle timeout
    to every read, including waiting for the response head."""

    id = "C3"
    title = "a silent server ends in a timeout error after the idle timeout (StreamOptions.timeout)"
    needs = ("http",)

    def scenarios(self, session: Session) -> list[Scenario]:
        """Silence before the head; silence after half the body."""
        idle = session.limits.stall_timeout_s
        silent = Scripted(
            head_delay_s=_SILENCE_S, end="stall", headers=[("content-type", session.profile.framing.media_types[0])]
        )
        found = [Scenario(key="c3:silent-before-headers", served=(Served(silent, fault=_SILENT),), idle_timeout_s=idle)]
        recording = session.recording("text")
        if recording is not None:
            at = len(recording.cassette.interactions[0].response.chunks) // 2
            found.append(
                mutated(recording, Mutation.of(Stall(at, _SILENCE_S)), idle_timeout_s=idle, wire=session.profile)
            )
        return found

    async def evaluate(self, session: Session, observed: list[Observation]) -> Outcome:
        """Kind timeout, retryable, and ended within the idle timeout plus slack (an upper bound, on the
        harness's clock: a loaded machine does not stretch it)."""
        outcome = Outcome()
        limit = session.limits.stall_timeout_s + session.limits.timeout_slack_s
        for obs in observed:
            expect_error(outcome, obs, ("timeout",), retryable=True)
            if obs.terminal_at is not None:
                took = obs.terminal_at - obs.started_at
                outcome.expect(obs, took <= limit, f"the timeout took {took:.2f} s (limit {limit:.2f} s)")
        return outcome
