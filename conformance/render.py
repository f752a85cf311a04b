"""Rendering a :class:`~conformance.report.Report` as text, JSON or JUnit XML."""

from __future__ import annotations

import textwrap
import xml.etree.ElementTree as ET
from typing import Any

from conformance.report import CheckResult, Report

__all__ = ["report_json", "report_junit", "report_text"]

_WIDTH = 100
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
        "capabilities": report.capabilities.to_json(),
        "recordings": list(report.recordings),
        "scenarios": report.scenarios,
        "durationS": round(report.duration_s, 3),
        "results": [result.to_json() for result in report.results],
    }


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
        f"api {caps.api or '(none)'} · http {'yes' if caps.http else 'no'} · recordings: {recordings}",
        "",
        f"{'ID':<4} {'STATUS':<13} {'CHECK':<58} DETAIL",
    ]
    for result in report.results:
        title = textwrap.shorten(result.title, 58, placeholder="…")
        detail = textwrap.shorten(_detail(result), 60, placeholder="…") if _detail(result) else ""
        lines.append(f"{result.id:<4} {_MARK[result.status]:<13} {title:<58} {detail}".rstrip())
        if result.status in ("fail", "harness-error"):
            for item in result.evidence[:3]:
                lines.extend(
                    textwrap.wrap(str(item), _WIDTH, initial_indent="       - ", subsequent_indent="         ")
                )
            if len(result.evidence) > 3:
                lines.append(f"         … and {len(result.evidence) - 3} more")
    summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    lines += ["", f"verdict: {report.verdict} ({summary}; {report.scenarios} scenarios in {report.duration_s:.1f} s)"]
    return "\n".join(lines) + "\n"


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
        ("verdict", report.verdict),
    ):
        ET.SubElement(properties, "property", {"name": name, "value": value})
    for result in report.results:
        case = ET.SubElement(
            suite,
            "testcase",
            {
                "classname": f"conformance.{report.adapter}",
                "name": f"{result.id} {result.title}",
                "time": f"{result.duration_s:.3f}",
            },
        )
        body = "\n".join(str(item) for item in result.evidence)
        if result.status == "fail":
            ET.SubElement(case, "failure", {"message": result.message}).text = body or result.message
        elif result.status == "harness-error":
            ET.SubElement(case, "error", {"message": result.message}).text = body or result.message
        elif result.status in ("unsupported", "xfail"):
            ET.SubElement(case, "skipped", {"message": f"{result.status}: {result.reason}"})
    ET.indent(suite)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"
