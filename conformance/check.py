"""What a check is: a stable id, a one-line title, what it needs, its scenarios and its verdict.

A check is a :class:`Check` subclass (or instance): :meth:`Check.scenarios` names the scenarios it
needs, :meth:`Check.evaluate` reads their observations (and, for checks that look across the
whole run, every other observation) and returns an :class:`Outcome`. The class docstring is the
troubleshooting text shown to adapter authors. The runner first runs the scenarios of every
selected check, then evaluates the checks, so a check that looks across the run sees everything.

Each check belongs to a contract level (:data:`~conformance.report.Level`): ``pi``, the contract pi
states for any StreamFn, or ``streamfns``, what this project adds. A ``pi`` check may find problems
that only the stricter contract forbids (an error that ends as it should but without an ``ErrorInfo``
kind): it flags those with ``level="streamfns"``, so the pi verdict does not count them.

An :class:`Outcome` counts the cases it examined: one that examined none is not a pass (the runner
fails it), so a check can never be satisfied by an adapter that gave it nothing to judge. Evidence
carries the stream's own ``errorMessage`` (the API key redacted): it usually explains the failure.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

from conformance.observe import Observation, Scenario
from conformance.report import Evidence, Level
from conformance.session import API_KEY, Session
from conformance.target import Need
from streamfns.kit import redact

__all__ = ["Check", "Outcome", "error_excerpt"]

#: The longest ``errorMessage`` quoted in evidence.
_MESSAGE_LIMIT = 300


def error_excerpt(obs: Observation) -> str:
    """``errorMessage: …`` of the observation's terminal message (API key redacted, cut short), or ""."""
    message = obs.error_message
    if not message:
        return ""
    text = " ".join(redact(message, [API_KEY]).split())
    if len(text) > _MESSAGE_LIMIT:
        text = text[: _MESSAGE_LIMIT - 1] + "…"
    return f"errorMessage: {text}"


@dataclass(slots=True)
class Outcome:
    """A check's findings: ``problems`` (empty means pass) and how many cases it ``checked``."""

    problems: list[Evidence] = field(default_factory=list[Evidence])
    checked: int = 0

    def flag(
        self,
        obs: Observation,
        detail: str,
        *,
        index: int | None = None,
        excerpt: str = "",
        level: Level | None = None,
    ) -> None:
        """Record a problem seen in ``obs``; the excerpt also quotes the stream's ``errorMessage``.
        ``level``: the contract the problem breaks, when stricter than the check's own (None: the
        check's level, filled in by the runner)."""
        scenario = obs.scenario
        detail = redact(detail, [API_KEY])  # details quote exception texts, which may carry the key
        quoted = error_excerpt(obs)
        if quoted and quoted not in excerpt:
            excerpt = f"{excerpt} · {quoted}" if excerpt else quoted
        self.problems.append(
            Evidence(
                scenario=scenario.key,
                detail=detail,
                recording=scenario.recording,
                mutation=scenario.mutation,
                event_index=index,
                excerpt=excerpt,
                level=level,
            )
        )

    def expect(self, obs: Observation, condition: bool, detail: str, *, level: Level | None = None) -> bool:
        """Count one case; flag ``detail`` (at ``level``, see :meth:`flag`) unless ``condition`` holds.
        Returns ``condition``."""
        self.checked += 1
        if not condition:
            self.flag(obs, detail, level=level)
        return condition


class Check:
    """Base of every check (see the module docstring). Subclasses set ``id``, ``title``, ``needs``."""

    id: str = ""
    title: str = ""
    needs: tuple[Need, ...] = ()
    #: The contract the check belongs to (see the module docstring).
    level: Level = "streamfns"

    def scenarios(self, session: Session) -> list[Scenario]:
        """The scenarios this check needs run (none by default)."""
        del session
        return []

    def unexamined(self, session: Session) -> str | None:
        """Why this run gives the check nothing of its own to judge although the capabilities support
        it (a feature no recording shows), else None (the default). The runner then reports it
        ``unsupported`` with this reason, as a limitation — never a pass."""
        del session
        return None

    async def evaluate(self, session: Session, observed: list[Observation]) -> Outcome:
        """Judge the observations of :meth:`scenarios` (``observed``, same order) and the session."""
        raise NotImplementedError

    @property
    def troubleshooting(self) -> str:
        """What to look at when the check fails (the class docstring)."""
        return inspect.getdoc(type(self)) or ""
