"""The report: one result per check, the evidence behind it, and a verdict.

Statuses: ``pass``; ``fail`` (the adapter broke the contract — evidence says where);
``unsupported`` (the check needs something the capabilities do not declare); ``xfail`` (it failed
and the author declared it would, with a written reason); ``harness-error`` (the harness itself
could not run the check — a bug to report, never the adapter's pass).

Verdict: any ``fail`` or ``harness-error`` → ``non-conformant``; otherwise any ``xfail`` or any
``unsupported`` that marks a missing *feature* → ``conformant-with-limitations``; otherwise
``conformant``. A check that is unsupported only because the adapter has no HTTP transport
(``Capabilities.http=False``) is not a limitation: there is no transport to be limited in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from conformance.capabilities import Capabilities

__all__ = ["CheckResult", "Evidence", "Report", "Status", "Verdict"]

Status = Literal["pass", "fail", "unsupported", "xfail", "harness-error"]
Verdict = Literal["conformant", "conformant-with-limitations", "non-conformant"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Evidence:
    """Where a check saw a problem: the scenario (and the recording and mutation it came from), the
    event index when one event is at fault (-1 or None: the stream as a whole), an excerpt."""

    scenario: str
    detail: str
    recording: str | None = None
    mutation: str | None = None
    event_index: int | None = None
    excerpt: str = ""

    def __str__(self) -> str:
        where = f" at event {self.event_index}" if self.event_index is not None and self.event_index >= 0 else ""
        tail = f" [{self.excerpt}]" if self.excerpt else ""
        return f"{self.detail}{where} (scenario {self.scenario}){tail}"

    def to_json(self) -> dict[str, Any]:
        """The evidence as a JSON object."""
        return {
            "scenario": self.scenario,
            "recording": self.recording,
            "mutation": self.mutation,
            "eventIndex": self.event_index,
            "excerpt": self.excerpt,
            "detail": self.detail,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckResult:
    """One check's outcome. ``reason`` is the xfail reason or why the check is unsupported;
    ``limitation`` says whether an ``unsupported``/``xfail`` lowers the verdict."""

    id: str
    title: str
    status: Status
    message: str = ""
    reason: str = ""
    evidence: tuple[Evidence, ...] = ()
    limitation: bool = False
    duration_s: float = 0.0
    troubleshooting: str = ""

    def to_json(self) -> dict[str, Any]:
        """The result as a JSON object (with the troubleshooting text unless it passed)."""
        data: dict[str, Any] = {
            "id": self.id,
            "title": self.title,
            "status": self.status,
            "message": self.message,
            "reason": self.reason,
            "limitation": self.limitation,
            "durationS": round(self.duration_s, 4),
            "evidence": [item.to_json() for item in self.evidence],
        }
        if self.status != "pass":
            data["troubleshooting"] = " ".join(self.troubleshooting.split())
        return data


def verdict_of(results: tuple[CheckResult, ...]) -> Verdict:
    """The verdict rule (see the module docstring)."""
    if any(r.status in ("fail", "harness-error") for r in results):
        return "non-conformant"
    if any(r.status == "xfail" or (r.status == "unsupported" and r.limitation) for r in results):
        return "conformant-with-limitations"
    return "conformant"


@dataclass(frozen=True, slots=True, kw_only=True)
class Report:
    """Everything a run found; render it with :meth:`to_text`, :meth:`to_json` or :meth:`to_junit`."""

    adapter: str
    harness_version: str
    capabilities: Capabilities
    results: tuple[CheckResult, ...]
    recordings: tuple[str, ...] = ()
    scenarios: int = 0
    duration_s: float = 0.0

    @property
    def verdict(self) -> Verdict:
        """``conformant``, ``conformant-with-limitations`` or ``non-conformant``."""
        return verdict_of(self.results)

    @property
    def ok(self) -> bool:
        """True unless the verdict is ``non-conformant``."""
        return self.verdict != "non-conformant"

    def ids(self, *statuses: Status) -> list[str]:
        """Ids of the checks whose status is one of ``statuses``, in report order."""
        return [r.id for r in self.results if r.status in statuses]

    @property
    def failing(self) -> list[str]:
        """Ids of the checks that failed or could not run (``fail`` or ``harness-error``)."""
        return self.ids("fail", "harness-error")

    def result(self, check_id: str) -> CheckResult:
        """The result of ``check_id``; ``KeyError`` when it was not run."""
        for result in self.results:
            if result.id == check_id:
                return result
        raise KeyError(check_id)

    def to_json(self) -> dict[str, Any]:
        """The report as a JSON object."""
        from conformance.render import report_json  # noqa: PLC0415 - render imports this module

        return report_json(self)

    def to_text(self) -> str:
        """A table for a terminal."""
        from conformance.render import report_text  # noqa: PLC0415 - render imports this module

        return report_text(self)

    def to_junit(self) -> str:
        """JUnit XML (one test case per check)."""
        from conformance.render import report_junit  # noqa: PLC0415 - render imports this module

        return report_junit(self)
