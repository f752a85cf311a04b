"""The check registry: every check, in report order, with a stable id.

This tuple is the one list of checks: each check's ``title`` (for G1–G7, ``normalize.RULES``) is what
``conformance list`` prints and what the table of checks in docs/conformance.md shows — that table is
:func:`markdown_table`'s output (``python -m conformance list --markdown``), and a test keeps the two
equal. The class docstrings are the troubleshooting texts (``conformance explain ID``).

Ids are stable: a check keeps its id and meaning across harness versions; new checks get new ids.
"""

from __future__ import annotations

from conformance.check import Check
from conformance.checks.calls import A1, A2, D1, N1, N2
from conformance.checks.faults import M1, M3, M4, T1
from conformance.checks.grammar import GRAMMAR_CHECKS
from conformance.checks.hygiene import L1, L2, S1
from conformance.checks.replays import I1, P1, P2, P3, P4, U1
from conformance.checks.retries import R1, R2
from conformance.checks.transport import C1, C2, C3, H1, H2
from conformance.checks.vendor import V1

__all__ = ["CHECKS", "CHECK_IDS", "get_check", "markdown_table"]

#: Every check, in report order.
CHECKS: tuple[Check, ...] = (
    *GRAMMAR_CHECKS,
    N1(),
    N2(),
    A1(),
    A2(),
    P1(),
    P2(),
    P3(),
    P4(),
    U1(),
    I1(),
    D1(),
    T1(),
    M1(),
    M3(),
    M4(),
    V1(),
    H1(),
    H2(),
    C1(),
    C2(),
    C3(),
    R1(),
    R2(),
    L1(),
    L2(),
    S1(),
)

#: Every check id, in report order.
CHECK_IDS: tuple[str, ...] = tuple(check.id for check in CHECKS)


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
}


def markdown_table() -> str:
    """The checks as a Markdown table: id, what must hold (the title), and what the check needs."""
    lines = ["| id | what must hold | needs |", "|---|---|---|"]
    for check in CHECKS:
        needs = ", ".join(_NEEDS.get(need, f"`{need}`") for need in check.needs)
        lines.append(f"| {check.id} | {check.title} | {needs} |")
    return "\n".join(lines) + "\n"
