"""``Limits``: the time bounds the harness uses, short on purpose so a run takes seconds."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Limits"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """Timeouts and bounds, in seconds.

    - ``idle_timeout_s``: ``StreamOptions.timeout`` in ordinary scenarios (long enough never to fire);
    - ``stall_timeout_s``: ``StreamOptions.timeout`` in the stall scenarios (C3), which must end
      ``timeout`` within that plus ``timeout_slack_s``;
    - ``abort_bound_s``: an abort mid-stream must end the stream this soon (A2);
    - ``abort_delay_s``: how long after the first content event the abort (or cancellation) lands, so
      the adapter is blocked on a silent socket;
    - ``retry_after_s``: the ``retry-after`` the R1 scenario sends; ``max_retry_delay_s`` is passed as
      ``StreamOptions.max_retry_delay_s``;
    - ``scenario_deadline_s``: a scenario still running after this is cancelled and reported as a hang;
    - ``grace_s``: how long to wait for connections to close and tasks to finish after a terminal.
    """

    idle_timeout_s: float = 2.0
    stall_timeout_s: float = 0.5
    timeout_slack_s: float = 1.0
    abort_bound_s: float = 0.2
    abort_delay_s: float = 0.05
    retry_after_s: float = 0.2
    max_retry_delay_s: float = 2.0
    scenario_deadline_s: float = 8.0
    grace_s: float = 0.5
