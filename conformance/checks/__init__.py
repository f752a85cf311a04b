"""The check registry: every check, in report order, with a stable id.

This tuple is the one list of checks: each check's ``title`` (for G1–G7, ``normalize.RULES``) is what
``conformance list`` prints and what the table of checks in docs/conformance.md shows — that table is
:func:`markdown_table`'s output (``python -m conformance list --markdown``), and a test keeps the two
equal. The class docstrings are the troubleshooting texts (``conformance explain ID``).

Ids are stable: a check keeps its id and meaning across harness versions; new checks get new ids. The
id (``N1``, ``L1``, …) is a check's public name — in reports, ``conformance list``, the table, check
filters and xfail entries; the class is named for what it checks (``ClosesEveryConnection`` has
``id = "L1"``), so code reads without the table at hand.

Ids come from the harness's original plan and skip where a planned check was left to other tests;
they are never renumbered to close a gap (that would change what a published id means). There is no
M2: it was to replay framing variants (CR, LF or CRLF line endings, comments, a byte-order mark),
which are properties of one framing and are tested on its framer (``normalize.wire``) instead; CR and
LF split across reads are part of M1.
"""

from __future__ import annotations

from conformance.check import Check
from conformance.checks.calls import (
    AbortBeforeTheRequest,
    AbortMidStream,
    CallNeverRaises,
    IterationNeverRaises,
    ReplaysAreDeterministic,
)
from conformance.checks.faults import (
    CutBodyIsAnError,
    MalformedJsonIsAProtocolError,
    MissingTerminalMarkerIsTruncated,
    RechunkingChangesNothing,
)
from conformance.checks.grammar import GRAMMAR_CHECKS
from conformance.checks.hygiene import ClosesEveryConnection, LeavesNoTasksBehind, NeverLeaksTheKey
from conformance.checks.process import ProcessIsWellBehaved, ProcessKeepsTheProtocol
from conformance.checks.replays import (
    ParallelToolCallsReplay,
    RecordingsReplayToDone,
    ReportsUsage,
    SendsImages,
    ThinkingReplays,
    ToolCallsEndToolUse,
)
from conformance.checks.retries import NoRetryAfterOutput, RetriesHonourRetryAfter
from conformance.checks.transport import (
    ErrorStatusesMapToKinds,
    NonStreamBodiesAreErrors,
    RefusedIsANetworkError,
    ResetIsANetworkError,
    SilenceTimesOut,
)
from conformance.checks.vendor import VendorErrorsKeepTheirKind

__all__ = ["CHECKS", "CHECK_IDS", "PROCESS_ONLY", "get_check", "markdown_table"]

#: Every check, in report order.
CHECKS: tuple[Check, ...] = (
    *GRAMMAR_CHECKS,
    CallNeverRaises(),
    IterationNeverRaises(),
    AbortBeforeTheRequest(),
    AbortMidStream(),
    RecordingsReplayToDone(),
    ToolCallsEndToolUse(),
    ParallelToolCallsReplay(),
    ThinkingReplays(),
    ReportsUsage(),
    SendsImages(),
    ReplaysAreDeterministic(),
    CutBodyIsAnError(),
    RechunkingChangesNothing(),
    MalformedJsonIsAProtocolError(),
    MissingTerminalMarkerIsTruncated(),
    VendorErrorsKeepTheirKind(),
    ErrorStatusesMapToKinds(),
    NonStreamBodiesAreErrors(),
    ResetIsANetworkError(),
    RefusedIsANetworkError(),
    SilenceTimesOut(),
    RetriesHonourRetryAfter(),
    NoRetryAfterOutput(),
    ClosesEveryConnection(),
    LeavesNoTasksBehind(),
    NeverLeaksTheKey(),
    ProcessKeepsTheProtocol(),
    ProcessIsWellBehaved(),
)

#: Every check id, in report order.
CHECK_IDS: tuple[str, ...] = tuple(check.id for check in CHECKS)
#: The checks that judge only an adapter run as a process (left out of any other target's report
#: unless selected by name).
PROCESS_ONLY: frozenset[str] = frozenset(check.id for check in CHECKS if "process" in check.needs)


def get_check(check_id: str) -> Check:
    """The check with ``check_id``; ``KeyError`` for an unknown id."""
    for check in CHECKS:
        if check.id == check_id:
            return check
    raise KeyError(check_id)


#: How a need reads in the table.
_NEEDS: dict[str, str] = {
    "http": "HTTP",
    "terminal": "a declared terminal marker",
    "stream_error": "a declared in-stream error",
    "process": "an adapter run as a process (`--exec`)",
}


def markdown_table() -> str:
    """The checks as a Markdown table: id, contract level, what must hold (the title), and what the
    check needs."""
    lines = ["| id | level | what must hold | needs |", "|---|---|---|---|"]
    for check in CHECKS:
        needs = ", ".join(_NEEDS.get(need, f"`{need}`") for need in check.needs)
        lines.append(f"| {check.id} | {check.level} | {check.title} | {needs} |")
    return "\n".join(lines) + "\n"
