"""The check registry: every check, in report order, with a stable id.

========  ======================================================================================
G1–G7     the event grammar (``normalize.validate_events``) on every stream of the run
N1        calling the StreamFn never raises (bad inputs come back as error streams)
N2        iterating never raises; a cancelled consumer gets ``CancelledError``
A1        an abort before the request sends nothing and ends ``aborted``
A2        an abort mid-stream ends ``aborted`` within the bound, partial content kept
P1        every successful recording replays to ``done`` with content
P2        the tool-call recording ends ``toolUse`` with its tool calls (needs ``tool_calls``)
P3        the parallel tool-call recording yields several tool calls (needs ``parallel_tool_calls``)
P4        the thinking recording yields a thinking block (needs ``thinking``)
U1        successful streams report input and output usage (needs ``usage_in_stream``)
I1        a user image is sent and the reply streams normally (needs ``images``, HTTP)
D1        two replays of the same recording give identical events
T1        a body cut before the terminal marker ends in a retryable error, never ``done`` (HTTP)
M1        re-chunking the bytes never changes the events (HTTP)
M3        malformed JSON in an event ends in a ``protocol`` error (HTTP)
M4        a missing terminal marker ends in a ``truncated`` error (HTTP, known api)
H1        HTTP error statuses map to the right kind, ``retryable`` and ``status`` (HTTP)
H2        a 200 that is not an event stream ends in a ``protocol`` error (HTTP)
C1        a reset connection ends in a retryable ``network`` error, partial content kept (HTTP)
C2        a refused connection ends in a retryable ``network`` error (HTTP)
C3        a silent server ends in a ``timeout`` error after the idle timeout (HTTP)
R1        a 429 before output is retried after ``retry-after`` (or reported as ``rate_limit``) (HTTP)
R2        a failure after output is never retried (HTTP)
L1        every HTTP connection is closed once its stream ends (HTTP)
L2        no task started by the adapter outlives its stream
S1        the API key never appears in events or error messages
========  ======================================================================================

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

__all__ = ["CHECKS", "CHECK_IDS", "get_check"]

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
