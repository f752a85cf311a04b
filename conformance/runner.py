"""``run``: the plain-function core of the harness (no pytest, no CLI).

A run resolves the target, loads the recordings, runs the scenarios every selected check needs
(each distinct scenario once, one after another, each against its own loopback server), then
evaluates the checks in report order and builds a :class:`~conformance.report.Report`. ``run`` never
raises for anything the adapter does; it raises ``ValueError``/``TypeError`` for bad arguments.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from conformance._version import __version__
from conformance.capabilities import Capabilities, Need
from conformance.checks import CHECK_IDS, CHECKS
from conformance.declared import Target
from conformance.limits import Limits
from conformance.observe import Scenario, describe_exception
from conformance.recordings import CassetteSource, library_recordings, load_recordings
from conformance.registry import Check
from conformance.report import CheckResult, Report, Status
from conformance.session import Session
from conformance.target import adapter_name, resolve_target

__all__ = ["run", "run_sync", "validate_selection"]

_NEED_TEXT: dict[str, str] = {
    "http": "needs an HTTP transport (Capabilities.http is False)",
    "api": "needs a known wire api (Capabilities.api) to know its terminal marker",
}


def validate_selection(
    checks: Iterable[str] | None, xfail: Mapping[str, str] | None
) -> tuple[list[str], dict[str, str]]:
    """Check ids and xfail reasons, validated: ``ValueError`` for an unknown id or an empty reason."""
    selected = list(CHECK_IDS) if checks is None else list(dict.fromkeys(checks))
    unknown = [item for item in [*selected, *(xfail or {})] if item not in CHECK_IDS]
    if unknown:
        raise ValueError(f"unknown check id(s) {', '.join(sorted(set(unknown)))}; known: {', '.join(CHECK_IDS)}")
    reasons: dict[str, str] = {}
    for check_id, reason in (xfail or {}).items():
        if not isinstance(reason, str) or not reason.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(f"xfail for {check_id} needs a written reason (why does the adapter fail it?)")
        reasons[check_id] = reason.strip()
    return selected, reasons


def _missing(check: Check, capabilities: Capabilities) -> list[Need]:
    return [need for need in check.needs if capabilities.lacks(need)]


def _unsupported(check: Check, missing: list[Need]) -> CheckResult:
    reason = "; ".join(_NEED_TEXT.get(need, f"needs Capabilities.{need}=True") for need in missing)
    return _result(check, "unsupported", reason=reason, limitation="http" not in missing)


def _result(check: Check, status: Status, **fields: Any) -> CheckResult:
    return CheckResult(id=check.id, title=check.title, status=status, troubleshooting=check.troubleshooting, **fields)


async def _judge(
    check: Check, session: Session, scenarios: list[Scenario], xfail_reason: str | None, spent: float
) -> CheckResult:
    started = time.perf_counter()
    try:
        outcome = await check.evaluate(session, session.observations_of(scenarios))
    except Exception as exc:  # a harness bug must be reported, not crash the run
        return _result(check, "harness-error", message=describe_exception(exc), duration_s=spent)
    spent += time.perf_counter() - started
    problems = list(outcome.problems)
    if not problems:
        if xfail_reason is not None:
            message = f"passed, but xfail says: {xfail_reason!r}; remove the xfail entry"
            return _result(check, "fail", message=message, reason=xfail_reason, duration_s=spent)
        return _result(check, "pass", message=f"{outcome.checked} case(s) checked", duration_s=spent)
    more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
    message = f"{problems[0]}{more}"
    evidence = tuple(problems)
    if xfail_reason is not None:
        return _result(
            check, "xfail", message=message, reason=xfail_reason, evidence=evidence, limitation=True, duration_s=spent
        )
    return _result(check, "fail", message=message, evidence=evidence, duration_s=spent)


async def run(
    target: Callable[..., Any] | Target,
    *,
    capabilities: Capabilities | None = None,
    cassettes: CassetteSource | None = None,
    checks: Iterable[str] | None = None,
    xfail: Mapping[str, str] | None = None,
    limits: Limits | None = None,
    name: str | None = None,
) -> Report:
    """Run the conformance checks against ``target`` and return the report.

    ``target``: a StreamFn or a zero-argument factory returning one (see :mod:`conformance.target`), or
    a :class:`~conformance.declared.Target` carrying its capabilities (``capabilities`` then defaults
    to the target's). Raises ``TypeError`` when no capabilities are given at all.
    ``cassettes``: the author's recordings (a directory, a file, or a list of files/cassettes); when
    None, the target's own (:attr:`Target.cassettes`), else, when ``capabilities.api`` is known, the
    bundled library's picks for that api. ``checks``:
    the ids to run (default: all). ``xfail``: check id → the written reason it is expected to fail
    (a listed check that passes is reported as ``fail``: remove the entry). ``limits``: the time
    bounds (:class:`~conformance.limits.Limits`). ``name`` labels the adapter in the report (default:
    the target's ``module.qualname``).
    """
    selected, reasons = validate_selection(checks, xfail)
    if isinstance(target, Target):
        capabilities = capabilities or target.capabilities
        name = name or target.name
        cassettes = cassettes if cassettes is not None else target.cassettes
        target = target.stream_fn
    if capabilities is None:
        raise TypeError("run() needs capabilities=Capabilities(...) (or a conformance.Target that carries them)")
    fn = await resolve_target(target)
    if capabilities.http:
        recordings = load_recordings(cassettes) if cassettes is not None else library_recordings(capabilities)
        if not recordings:
            raise ValueError(
                "no recordings to replay: pass cassettes=<dir or files> (or set capabilities.api to a known api)"
            )
    else:
        recordings = []
    session = Session(fn, capabilities, recordings, limits or Limits())
    started = time.perf_counter()
    chosen = [check for check in CHECKS if check.id in selected]
    planned: dict[str, list[Scenario]] = {}
    broken: dict[str, str] = {}
    spent: dict[str, float] = {}
    results: list[CheckResult] = []
    try:
        for check in chosen:
            if _missing(check, capabilities):
                continue
            try:
                planned[check.id] = check.scenarios(session)
            except Exception as exc:  # a harness bug must be reported, not crash the run
                broken[check.id] = f"building its scenarios failed: {describe_exception(exc)}"
        for check_id, scenarios in planned.items():
            clock = time.perf_counter()
            try:
                await session.observe_all(scenarios)
            except Exception as exc:  # a harness bug must be reported, not crash the run
                broken[check_id] = f"running its scenarios failed: {describe_exception(exc)}"
            spent[check_id] = time.perf_counter() - clock
        await session.settle()
        for check in chosen:
            missing = _missing(check, capabilities)
            if missing:
                results.append(_unsupported(check, missing))
            elif check.id in broken:
                results.append(_result(check, "harness-error", message=broken[check.id]))
            else:
                results.append(
                    await _judge(check, session, planned[check.id], reasons.get(check.id), spent.get(check.id, 0.0))
                )
    finally:
        await session.close()
    return Report(
        adapter=name or adapter_name(target),
        harness_version=__version__,
        capabilities=capabilities,
        results=tuple(results),
        recordings=tuple(r.name for r in recordings),
        scenarios=len(session.observations),
        duration_s=time.perf_counter() - started,
    )


def run_sync(target: Callable[..., Any] | Target, **kwargs: Any) -> Report:
    """:func:`run` in a fresh event loop (for scripts and the CLI); same arguments."""
    return asyncio.run(run(target, **kwargs))
