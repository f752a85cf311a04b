"""The report: one result per check, the evidence behind it, a verdict, and its renderings
(text for a terminal, JSON, JUnit XML).

Statuses: ``pass``; ``fail`` (the adapter broke the contract — evidence says where);
``unsupported`` (the check needs something the capabilities do not declare, or — not examined — no
recording shows the feature it judges; the reason says which); ``xfail`` (it failed
and the author declared it would, with a written reason); ``harness-error`` (the harness itself
could not run the check — a bug to report, never the adapter's pass).

Contract levels: every check belongs to one (:data:`Level`). ``pi`` is the contract pi states for any
StreamFn — never raise, exactly one terminal, failures as ``error``/``aborted`` with the partial
content and an ``errorMessage``, never success from a broken stream, abort honoured, no key in what is
reported — which an adapter in any language can be held to; ``streamfns`` is what this project adds
(``start`` first, ``ErrorInfo`` kinds and retry hints, idle and progress timeouts, …). Each piece of
evidence carries the level of the promise it shows broken (a ``pi`` check may also find problems only
the stricter contract forbids), so a report gives a verdict per level (:meth:`Report.verdict_at`):
the ``pi`` verdict counts only ``pi`` checks and their ``pi`` evidence; the ``streamfns`` verdict
counts everything. A run judged at ``contract="pi"`` holds only ``pi`` checks and evidence, and has no
``streamfns`` verdict.

Verdict: any ``fail`` or ``harness-error``, or no check that was run at all (no result, or every
one ``unsupported``: nothing was examined) → ``non-conformant``; otherwise any ``xfail`` or any
``unsupported`` that marks a missing *feature* → ``conformant-with-limitations``; otherwise
``conformant``. A check that is unsupported only because the adapter has no HTTP transport
(``Capabilities.http=False``) is not a limitation: there is no transport to be limited in.

A report quotes the adapter (exception and error messages, its name, its cassettes' names): the
renderings escape every control character in it (:func:`conformance.text.printable`), so a report is
safe on a terminal and the JUnit XML is always well-formed. :meth:`Report.to_json` keeps the data as
it is; :func:`report_json_text` writes it as JSON whose escapes cover those characters too.
"""

from __future__ import annotations

import json
import re
import textwrap
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from conformance.text import printable

if TYPE_CHECKING:
    from conformance.recordings import FeatureSource
    from conformance.target import Capabilities

__all__ = [
    "CheckResult",
    "Evidence",
    "Level",
    "Report",
    "Status",
    "Verdict",
    "report_json",
    "report_json_text",
    "report_junit",
    "report_text",
    "reproductions",
]

Status = Literal["pass", "fail", "unsupported", "xfail", "harness-error"]
#: A contract level (see the module docstring).
Level = Literal["pi", "streamfns"]
#: The levels, the shared one first.
LEVELS: tuple[Level, ...] = ("pi", "streamfns")
Verdict = Literal["conformant", "conformant-with-limitations", "non-conformant"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Evidence:
    """Where a check saw a problem: the scenario (and the recording and mutation it came from, the
    mutation in the :mod:`cassettes.mutation_specs` grammar), the event index when one event is at fault (-1 or
    None: the stream as a whole), an excerpt (with the stream's own ``errorMessage``, key redacted)."""

    scenario: str
    detail: str
    recording: str | None = None
    mutation: str | None = None
    event_index: int | None = None
    excerpt: str = ""
    #: How to get the bytes the scenario served: a ``cassettes mutate`` command, or what the fault is.
    reproduce: str = ""
    #: The contract level of the promise this shows broken (None: the check's own level).
    level: Level | None = None

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
            "reproduce": self.reproduce,
            "level": self.level,
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
    #: The contract level the check belongs to.
    level: Level = "streamfns"

    def status_at(self, level: Level) -> Status | None:
        """The status judged at ``level``: the status itself at ``streamfns``; at ``pi``, None for a
        ``streamfns`` check (not part of that contract) and ``pass`` for a failure whose evidence
        all shows stricter promises broken."""
        if level == "streamfns":
            return self.status
        if self.level != "pi":
            return None
        if self.status in ("fail", "xfail") and self.evidence and all(e.level == "streamfns" for e in self.evidence):
            return "pass"
        return self.status

    def to_json(self) -> dict[str, Any]:
        """The result as a JSON object (with the troubleshooting text unless it passed)."""
        data: dict[str, Any] = {
            "id": self.id,
            "title": self.title,
            "level": self.level,
            "status": self.status,
            "piStatus": self.status_at("pi"),
            "message": self.message,
            "reason": self.reason,
            "limitation": self.limitation,
            "durationS": round(self.duration_s, 4),
            "evidence": [item.to_json() for item in self.evidence],
        }
        if self.status != "pass":
            data["troubleshooting"] = " ".join(self.troubleshooting.split())
        return data


def verdict_of(results: tuple[CheckResult, ...], level: Level = "streamfns") -> Verdict:
    """The verdict rule (see the module docstring), judged at ``level``."""
    judged = [(r, status) for r in results if (status := r.status_at(level)) is not None]
    if any(status in ("fail", "harness-error") for _r, status in judged):
        return "non-conformant"
    if all(status == "unsupported" for _r, status in judged):
        # Fail closed: a report that examined nothing (``run`` refuses such selections; a report built
        # by hand may still hold one) must not read as a pass.
        return "non-conformant"
    if any(status == "xfail" or (status == "unsupported" and r.limitation) for r, status in judged):
        return "conformant-with-limitations"
    return "conformant"


def failing_at(results: tuple[CheckResult, ...], level: Level) -> list[str]:
    """Ids of the checks that fail (or could not run) at ``level``, in report order."""
    return [r.id for r in results if r.status_at(level) in ("fail", "harness-error")]


@dataclass(frozen=True, slots=True, kw_only=True)
class Report:
    """Everything a run found; render it with :meth:`to_text`, :meth:`to_json` or :meth:`to_junit`."""

    adapter: str
    harness_version: str
    capabilities: Capabilities
    results: tuple[CheckResult, ...]
    recordings: tuple[str, ...] = ()
    #: Which recording served each declared feature, and how it was picked — or why none did.
    features: tuple[FeatureSource, ...] = ()
    scenarios: int = 0
    duration_s: float = 0.0
    #: The bound the run's wall time was held to (``Limits.bound_s``).
    bound_s: float = 0.0
    #: Why part of the run did not happen (a budget spent on hangs, a blocked event loop), else None.
    interrupted: str | None = None
    #: The kit's process-wide HTTP transport during the run (``"httpx"``, ``"aiohttp"``, ``"native"``:
    #: :func:`streamfns.kit.default_transport`), which every adapter built on the kit sent its requests
    #: on unless a call chose another; None when the adapter sends no HTTP (``Capabilities.http``).
    transport: str | None = None
    #: The contract the run judged: ``streamfns`` (both levels) or ``pi`` (only the shared one).
    contract: Level = "streamfns"

    @property
    def verdict(self) -> Verdict:
        """``conformant``, ``conformant-with-limitations`` or ``non-conformant``, at the contract the
        run judged (:attr:`contract`)."""
        return verdict_of(self.results, self.contract)

    def verdict_at(self, level: Level) -> Verdict | None:
        """The verdict at ``level``; None for ``streamfns`` when the run judged only ``pi``."""
        if level == "streamfns" and self.contract == "pi":
            return None
        return verdict_of(self.results, level)

    @property
    def levels_text(self) -> str:
        """``pi: conformant; streamfns: non-conformant (G1, H1)``."""
        parts: list[str] = []
        for level in LEVELS:
            verdict = self.verdict_at(level)
            if verdict is None:
                parts.append(f"{level}: not judged (--contract pi)")
                continue
            failing = failing_at(self.results, level)
            parts.append(f"{level}: {verdict}" + (f" ({', '.join(failing)})" if failing else ""))
        return "; ".join(parts)

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
        return report_json(self)

    def to_text(self) -> str:
        """A table for a terminal."""
        return report_text(self)

    def to_junit(self) -> str:
        """JUnit XML (one test case per check)."""
        return report_junit(self)


# -- renderings ---------------------------------------------------------------------------------------

_WIDTH = 100
_REPRODUCE_LIMIT = 40
_MARK = {
    "pass": "pass",
    "fail": "FAIL",
    "unsupported": "unsupported",
    "xfail": "xfail",
    "harness-error": "HARNESS-ERROR",
}


def report_json(report: Report) -> dict[str, Any]:
    """The report as a JSON-ready dict."""
    return {
        "harness": "streamfns-conformance",
        "harnessVersion": report.harness_version,
        "adapter": report.adapter,
        "verdict": report.verdict,
        "contract": report.contract,
        "verdicts": {level: report.verdict_at(level) for level in LEVELS},
        "failing": {level: failing_at(report.results, level) for level in LEVELS if report.verdict_at(level)},
        "capabilities": report.capabilities.to_json(),
        "transport": report.transport,
        "recordings": list(report.recordings),
        "features": [source.to_json() for source in report.features],
        "scenarios": report.scenarios,
        "durationS": round(report.duration_s, 3),
        "boundS": round(report.bound_s, 3),
        "interrupted": report.interrupted,
        "results": [result.to_json() for result in report.results],
        "reproduce": reproductions(report),
    }


#: What ``json.dumps(ensure_ascii=False)`` leaves raw but a terminal or a UTF-8 encoder would choke on
#: (C0 controls it escapes itself).
_RAW_IN_JSON = re.compile("[\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ud800-\udfff\ufffe\uffff]")


def report_json_text(report: Report) -> str:
    """The JSON report as text (indented, one trailing newline): readable non-ASCII kept, and every
    character :func:`~conformance.text.printable` would escape written as a JSON ``\\uXXXX`` escape —
    they only ever stand inside JSON strings, so the data reads back unchanged."""
    text = json.dumps(report_json(report), indent=2, ensure_ascii=False)
    return _RAW_IN_JSON.sub(lambda match: f"\\u{ord(match.group()):04x}", text) + "\n"


def reproductions(report: Report) -> dict[str, str]:
    """Scenario key → how to reproduce its bytes, for every scenario a failing check cites."""
    found: dict[str, str] = {}
    for result in report.results:
        if result.status in ("fail", "harness-error"):
            for item in result.evidence:
                if item.reproduce:
                    found.setdefault(item.scenario, item.reproduce)
    return found


def _detail(result: CheckResult) -> str:
    if result.status in ("unsupported", "xfail"):
        return result.reason
    return result.message


def report_text(report: Report) -> str:
    """A fixed-width table: id, status, title, and what went wrong (evidence under failures)."""
    counts: dict[str, int] = {}
    for result in report.results:
        counts[result.status] = counts.get(result.status, 0) + 1
    caps = report.capabilities
    recordings = ", ".join(report.recordings) or "(none)"
    lines = [
        f"streamfns conformance {report.harness_version} — adapter {report.adapter}",
        f"api {caps.api or '(none)'} · http {'yes' if caps.http else 'no'}"
        + (f" · transport {report.transport}" if report.transport else "")
        + f" · recordings: {recordings}",
    ]
    for source in report.features:  # which recording served each feature: a name may not be what it seems
        # Escaped before wrapping: wrap() turns a line break in a cassette's name into a plain space.
        lines.extend(textwrap.wrap(printable(str(source)), _WIDTH, initial_indent="  ", subsequent_indent="      "))
    lines += ["", f"{'ID':<4} {'STATUS':<13} {'LEVEL':<9} {'CHECK':<50} DETAIL"]
    for result in report.results:
        title = textwrap.shorten(result.title, 50, placeholder="…")
        detail = _detail(result)
        if result.status == "fail" and result.status_at("pi") == "pass":
            detail = f"pi: pass · {detail}"  # only stricter promises broken
        detail = textwrap.shorten(printable(detail), 60, placeholder="…") if detail else ""
        line = f"{result.id:<4} {_MARK[result.status]:<13} {result.level:<9} {title:<50} {detail}"
        lines.append(line.rstrip())
        if result.status in ("fail", "harness-error"):
            for item in result.evidence[:3]:
                # Within a pi check, say which problems break only the stricter contract.
                stricter = "[streamfns] " if result.level == "pi" and item.level == "streamfns" else ""
                lines.extend(
                    textwrap.wrap(
                        printable(stricter + str(item)),
                        _WIDTH,
                        initial_indent="       - ",
                        subsequent_indent="         ",
                    )
                )
            if len(result.evidence) > 3:
                lines.append(f"         … and {len(result.evidence) - 3} more")
    reproduce = reproductions(report)
    if reproduce:
        lines += ["", "reproduce the bytes of the failing scenarios:"]
        for key, how in list(reproduce.items())[:_REPRODUCE_LIMIT]:
            lines += [f"  - {key}", *(f"      {part}" for part in how.split("; "))]  # unwrapped: copy and paste
        if len(reproduce) > _REPRODUCE_LIMIT:
            lines.append(f"    … and {len(reproduce) - _REPRODUCE_LIMIT} more (--format json lists them all)")
    if report.interrupted:
        interrupted = printable(f"run interrupted: {report.interrupted}")
        lines += ["", *textwrap.wrap(interrupted, _WIDTH, subsequent_indent="  ")]
    summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    timing = f"{report.scenarios} scenarios in {report.duration_s:.1f} s, bound {report.bound_s:g} s"
    lines += ["", f"verdict: {report.verdict} ({summary}; {timing})", f"  {report.levels_text}"]
    # Escaped once more line by line: the names and reproduction commands quote the adapter too.
    return "\n".join(printable(line) for line in lines) + "\n"


def report_junit(report: Report) -> str:
    """JUnit XML: a ``testsuite`` whose test cases are the checks; ``unsupported`` and ``xfail`` are
    ``skipped``, ``fail`` is ``failure``, ``harness-error`` is ``error``."""
    suite = ET.Element(
        "testsuite",
        {
            "name": "streamfns-conformance",
            "tests": str(len(report.results)),
            "failures": str(len(report.ids("fail"))),
            "errors": str(len(report.ids("harness-error"))),
            "skipped": str(len(report.ids("unsupported", "xfail"))),
            "time": f"{report.duration_s:.3f}",
        },
    )
    properties = ET.SubElement(suite, "properties")
    for name, value in (
        ("harness_version", report.harness_version),
        ("adapter", report.adapter),
        ("api", report.capabilities.api or ""),
        ("transport", report.transport or ""),
        ("verdict", report.verdict),
        ("contract", report.contract),
        *((f"verdict.{level}", report.verdict_at(level) or "not judged") for level in LEVELS),
        *((f"feature.{source.feature}", str(source)) for source in report.features),
    ):
        ET.SubElement(properties, "property", {"name": name, "value": printable(value)})
    for result in report.results:
        case = ET.SubElement(
            suite,
            "testcase",
            {
                "classname": printable(f"conformance.{report.adapter}"),
                "name": f"{result.id} {result.title}",
                "time": f"{result.duration_s:.3f}",
            },
        )
        case_properties = ET.SubElement(case, "properties")
        ET.SubElement(case_properties, "property", {"name": "level", "value": result.level})
        ET.SubElement(case_properties, "property", {"name": "pi_status", "value": result.status_at("pi") or "n/a"})
        body = "\n".join(
            printable(str(item)) + (f"\n  reproduce: {printable(item.reproduce)}" if item.reproduce else "")
            for item in result.evidence
        )
        message = printable(result.message)
        if result.status == "fail":
            ET.SubElement(case, "failure", {"message": message}).text = body or message
        elif result.status == "harness-error":
            ET.SubElement(case, "error", {"message": message}).text = body or message
        elif result.status in ("unsupported", "xfail"):
            ET.SubElement(case, "skipped", {"message": printable(f"{result.status}: {result.reason}")})
    ET.indent(suite)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"
