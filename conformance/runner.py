"""``run``: the plain-function core of the harness (no pytest, no CLI).

A run loads the recordings, asks every selected check for its scenarios, runs them (each distinct
scenario once, one after another, each against its own loopback server) in a watched worker thread
(:mod:`conformance.watchdog`), then evaluates the checks in report order and builds a
:class:`~conformance.report.Report`. ``run`` never raises for anything the adapter does — hangs,
blocking calls, exits and interrupts are the adapter's failures, reported — and always returns within
``Limits.bound_s``; it raises ``ValueError``/``TypeError`` for bad arguments (unknown check ids, an
xfail without a reason, missing capabilities, unusable cassettes, a selection with nothing to run).
The one thing it cannot outlast is the adapter ending the process itself (``os._exit``, a crash of
the interpreter): the adapter runs in this process (see :mod:`conformance.watchdog`). Everything the
checks read is the harness's own copy of what the adapter produced, made in the worker thread
(:mod:`conformance.reading`).

A run never passes on nothing. It refuses (``ValueError``, before the adapter is called) an empty
selection and a selection none of whose checks the declared capabilities support — either would be
reported ``conformant`` with nothing examined. A check fails — never passes — when it examined no
case at all, or when some of its scenarios could not be run (the run's budget was spent on hangs,
the event loop was blocked, the factory failed); the evidence then names what hung. A supported check
with nothing of its own to judge (:meth:`Check.unexamined`: P2–P4 when no recording shows their
feature) is ``unsupported`` with the reason, a limitation; the report says which recording served
each declared feature, or why none did (:func:`~conformance.recordings.feature_sources`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from conformance._version import __version__
from conformance.check import Check
from conformance.checks import CHECK_IDS, CHECKS
from conformance.observe import Scenario
from conformance.process import ProcessAdapter, ProcessFactory
from conformance.profile_guard import ProfileFailure, check_profile
from conformance.recordings import (
    CassetteSource,
    NoRecordings,
    feature_sources,
    library_recordings,
    load_recordings,
)
from conformance.report import CheckResult, Evidence, Level, Report, Status
from conformance.session import Session
from conformance.target import Capabilities, Need, Target, is_adapter, is_target
from conformance.text import describe_exception
from conformance.watchdog import Limits, Worker
from normalize.wire import WireProfile, profile_for
from streamfns.kit import Adapter, default_transport

__all__ = ["run", "run_sync", "validate_selection"]

_NEED_TEXT: dict[str, str] = {
    "http": "needs an HTTP transport (Capabilities.http is False)",
    "terminal": "needs the api's wire profile to say how its stream ends and how to take that marker out "
    "(an Ending with a strip function; Target.profile, or an installed adapter declaring Capabilities.api)",
    "stream_error": "needs the api's wire profile to say what an in-stream error frame looks like "
    "(WireApi(stream_error=...); Target.profile, or an installed adapter declaring Capabilities.api)",
    "process": "judges an adapter run as a process (conformance run --exec)",
}
_CONTRACTS: tuple[Level, ...] = ("pi", "streamfns")
#: The default run budget for an adapter run as a process (seconds; Limits.run_budget_s).
PROCESS_RUN_BUDGET_S = 240.0


def validate_selection(
    checks: Iterable[str] | None, xfail: Mapping[str, str] | None
) -> tuple[list[str], dict[str, str]]:
    """Check ids and xfail reasons, validated: ``ValueError`` for an unknown id, an empty reason, or a
    selection that names no check (``checks=[]``); ``TypeError`` for ``checks`` given as one string.

    ``None`` selects every check. An empty selection is refused rather than run: a run of no checks
    would report ``conformant`` having examined nothing.
    """
    if isinstance(checks, str | bytes):
        # A string is an iterable of characters: "G1" would be read as the ids "G" and "1".
        raise TypeError(f"checks must be a collection of check ids such as ['G1'], not the string {checks!r}")
    selected = list(CHECK_IDS) if checks is None else list(dict.fromkeys(checks))
    if not selected:
        raise ValueError(
            "no checks selected (checks is empty): a run of no checks examines nothing and cannot vouch for "
            "the adapter; pass checks=None for every check, or name the ids to run"
        )
    unknown = [item for item in [*selected, *(xfail or {})] if item not in CHECK_IDS]
    if unknown:
        raise ValueError(f"unknown check id(s) {', '.join(sorted(set(unknown)))}; known: {', '.join(CHECK_IDS)}")
    reasons: dict[str, str] = {}
    for check_id, reason in (xfail or {}).items():
        if not isinstance(reason, str) or not reason.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(f"xfail for {check_id} needs a written reason (why does the adapter fail it?)")
        reasons[check_id] = reason.strip()
    return selected, reasons


def _missing(check: Check, session: Session) -> list[Need]:
    return [need for need in check.needs if session.lacks(need)]


def _unsupported(check: Check, missing: list[Need]) -> CheckResult:
    reason = "; ".join(_NEED_TEXT.get(need, f"needs Capabilities.{need}=True") for need in missing)
    return _result(check, "unsupported", reason=reason, limitation="http" not in missing)


def _nothing_runs(chosen: list[Check], session: Session) -> str:
    """Why a selection is refused when none of its checks can run with the declared capabilities."""
    why = "; ".join(
        f"{check.id} " + " and ".join(_NEED_TEXT.get(need, f"needs Capabilities.{need}=True") for need in missing)
        for check in chosen
        for missing in [_missing(check, session)]
    )
    return (
        f"none of the selected checks can run with these capabilities, so the run would examine nothing: {why}; "
        "select checks the adapter supports (checks=None: every check), or declare what the adapter does"
    )


def _result(check: Check, status: Status, **fields: Any) -> CheckResult:
    return CheckResult(
        id=check.id,
        title=check.title,
        status=status,
        troubleshooting=check.troubleshooting,
        level=check.level,
        **fields,
    )


def _failed(check: Check, problems: list[Evidence], xfail_reason: str | None, spent: float) -> CheckResult:
    more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
    message = f"{problems[0]}{more}"
    evidence = tuple(problems)
    if xfail_reason is not None:
        return _result(
            check, "xfail", message=message, reason=xfail_reason, evidence=evidence, limitation=True, duration_s=spent
        )
    return _result(check, "fail", message=message, evidence=evidence, duration_s=spent)


def _unfinished_scenario(session: Session, scenario: Scenario) -> bool:
    """True when ``scenario`` did not run, or the watchdog gave up on it (its observation is partial)."""
    obs = session.observed(scenario)
    return obs is None or obs.blocked is not None


def _unfinished(session: Session, missing: list[Scenario], total: int) -> list[Evidence]:
    """Evidence for a check whose scenarios did not all run to the end: why, and what hung."""
    why = session.target_failure or session.interrupted or "the run stopped early"
    detail = f"could not finish: {len(missing)} of its {total} scenario(s) did not run to the end — {why}"
    found = [Evidence(scenario=missing[0].key, detail=detail, recording=missing[0].recording)]
    for obs in session.hung()[:5]:
        what = obs.blocked or f"hung: no terminal within {obs.deadline_s:g} s"
        found.append(
            Evidence(
                scenario=obs.scenario.key, detail=what, recording=obs.scenario.recording, mutation=obs.scenario.mutation
            )
        )
    return found


def _nothing_examined(session: Session, scenarios: list[Scenario]) -> Evidence:
    seen = [session.observed(scenario) for scenario in scenarios[:4]]
    outcomes = "; ".join(f"{obs.scenario.key} → {obs.outcome()}" for obs in seen if obs is not None)
    detail = "0 cases examined: no scenario gave it a stream it could judge"
    return Evidence(
        scenario=scenarios[0].key if scenarios else "-", detail=f"{detail} ({outcomes})" if outcomes else detail
    )


async def _judge(
    check: Check,
    session: Session,
    scenarios: list[Scenario],
    xfail_reason: str | None,
    spent: float,
    *,
    contract: Level = "streamfns",
) -> CheckResult:
    missing = [scenario for scenario in scenarios if _unfinished_scenario(session, scenario)]
    if missing and session.harness_failure is not None:
        return _result(check, "harness-error", message=session.harness_failure, duration_s=spent)
    if missing:
        return _failed(check, _unfinished(session, missing, len(scenarios)), xfail_reason, spent)
    started = time.perf_counter()
    try:
        outcome = await check.evaluate(session, session.observations_of(scenarios))
    except asyncio.CancelledError:  # the caller cancelled the run
        raise
    except BaseException as exc:  # a harness bug (even an exit or interrupt) is reported, never crashes the run
        return _result(check, "harness-error", message=describe_exception(exc), duration_s=spent)
    spent += time.perf_counter() - started
    # Each problem at the level of the promise it shows broken (the check's own unless it said).
    problems = [dataclasses.replace(item, level=item.level or check.level) for item in outcome.problems]
    if contract == "pi":
        problems = [item for item in problems if item.level == "pi"]  # the stricter contract is not judged
    if not problems and outcome.checked == 0:
        problems = [_nothing_examined(session, scenarios)]
    if not problems:
        if xfail_reason is not None:
            message = f"passed, but xfail says: {xfail_reason!r}; remove the xfail entry"
            return _result(check, "fail", message=message, reason=xfail_reason, duration_s=spent)
        return _result(check, "pass", message=f"{outcome.checked} case(s) checked", duration_s=spent)
    return _failed(check, problems, xfail_reason, spent)


def _with_reproduction(result: CheckResult, session: Session) -> CheckResult:
    """The result, its evidence saying how to reproduce each failing scenario's bytes."""
    if result.status not in ("fail", "harness-error", "xfail") or not result.evidence:
        return result
    scenarios = {obs.scenario.key: obs.scenario for obs in session.observations}
    evidence = tuple(
        dataclasses.replace(item, reproduce=session.reproduce(scenarios[item.scenario]))
        if item.scenario in scenarios and session.http
        else item
        for item in result.evidence
    )
    return dataclasses.replace(result, evidence=evidence)


async def run(
    target: Callable[..., Any] | Target | Adapter,
    *,
    capabilities: Capabilities | None = None,
    cassettes: CassetteSource | None = None,
    checks: Iterable[str] | None = None,
    xfail: Mapping[str, str] | None = None,
    limits: Limits | None = None,
    name: str | None = None,
    profile: WireProfile | None = None,
    contract: Level = "streamfns",
) -> Report:
    """Run the conformance checks against ``target`` and return the report.

    ``target``: a StreamFn or a zero-argument factory returning one (see :mod:`conformance.target`), or
    a :class:`~conformance.target.Target` carrying its capabilities (``capabilities`` then defaults
    to the target's), or an adapter's :class:`~streamfns.kit.Adapter` declaration (run as the target
    :meth:`Target.from_adapter` gives). Raises ``TypeError`` when no capabilities are given at all.
    ``cassettes``: the author's recordings (a directory, a file, or a list of files/cassettes); when
    None, the target's own (:attr:`Target.cassettes`), else the bundled recordings the api's wire
    profile names. ``profile``: the api's :class:`~normalize.wire.WireProfile` (default: the target's,
    else the one an installed adapter declares for ``capabilities.api``). ``checks``:
    the ids to run (default: all). ``xfail``: check id → the written reason it is expected to fail
    (a listed check that passes is reported as ``fail``: remove the entry). ``limits``: the time
    bounds (:class:`~conformance.watchdog.Limits`); the run ends within ``limits.bound_s``. ``name``
    labels the adapter in the report (default: the target's ``module.qualname``). ``contract``:
    ``"streamfns"`` (default) judges every check and gives a verdict at both levels; ``"pi"`` runs only
    the checks of the shared contract and judges only the problems that break it (see
    :mod:`conformance.report`). A target run as a process (:func:`conformance.process.process_target`)
    is also judged by X1 and X2, left out for any other target. The report names the
    kit's process-wide HTTP transport (:func:`streamfns.kit.default_transport`) when the adapter sends
    HTTP: choose it with :func:`streamfns.kit.set_default_transport` before the run.

    Fails closed: ``checks=[]`` and a selection none of whose checks the capabilities support raise
    ``ValueError`` before the adapter is called (the command line exits 2 on them), so a returned
    report always holds at least one check the capabilities support.

    The adapter runs in a worker thread on its own event loop: it must not share objects bound to
    the caller's loop (create clients inside the StreamFn or the factory). A StreamFn object with an
    ``aclose()`` method (one that owns a client) has it awaited once after the last scenario, in
    that loop.
    """
    if contract not in _CONTRACTS:
        raise ValueError(f"contract must be 'pi' or 'streamfns', not {contract!r}")
    explicit = checks is not None
    selected, reasons = validate_selection(checks, xfail)
    if is_adapter(target):
        target = Target.from_adapter(target)
    if is_target(target):
        capabilities = capabilities or target.capabilities
        name = name or target.name
        cassettes = cassettes if cassettes is not None else target.cassettes
        profile = profile or target.profile
        target = target.stream_fn
    if capabilities is None:
        raise TypeError("run() needs capabilities=Capabilities(...) (or a conformance.Target that carries them)")
    if not callable(target):
        raise TypeError(f"the target must be a StreamFn or a factory, not {type(target).__name__}")
    process = isinstance(target, ProcessFactory | ProcessAdapter)
    # A process adapter's run waits for processes to start (not counted in any scenario, but it
    # takes time): a wider budget by default.
    limits = limits or (Limits(run_budget_s=PROCESS_RUN_BUDGET_S) if process else Limits())
    started = time.perf_counter()
    if profile is None:
        profile = profile_for(capabilities.api)
    if profile is not None:
        check_profile(profile)
        if capabilities.api is not None and profile.api != capabilities.api:
            raise ValueError(
                f"the wire profile is for api {profile.api!r}, but the capabilities declare api {capabilities.api!r}"
            )
    if capabilities.http:
        recordings = (
            load_recordings(cassettes, profile) if cassettes is not None else library_recordings(capabilities, profile)
        )
        if not recordings:
            raise NoRecordings(
                "no recordings to replay: give the adapter's cassettes (a directory or cassette files), "
                "or an api whose wire profile names bundled recordings"
            )
    else:
        recordings = []
    # Read once, before the adapter runs: the transport the kit's clients are made on during the run.
    transport = default_transport() if capabilities.http else None
    session = Session(capabilities, recordings, limits, profile, process=process)
    chosen = [check for check in CHECKS if check.id in selected]
    if not process and not explicit:
        chosen = [check for check in chosen if "process" not in check.needs]  # nothing of theirs to judge
    if contract == "pi":
        stricter = [check.id for check in chosen if check.level != "pi"]
        chosen = [check for check in chosen if check.level == "pi"]
        if not chosen:
            raise ValueError(
                f"none of the selected checks ({', '.join(stricter)}) belongs to the pi contract: "
                "--contract pi judges only pi-level checks (see `conformance list`)"
            )
    runnable = [check for check in chosen if not _missing(check, session)]
    if not runnable:
        # Every selected check would be ``unsupported``: the verdict would rest on nothing examined.
        raise ValueError(_nothing_runs(chosen, session))
    plan = _Plan(runnable)
    await _observe(session, target, plan, limits)
    results: list[CheckResult] = []
    for check in chosen:
        missing = _missing(check, session)
        if missing:
            results.append(_unsupported(check, missing))
        elif (unexamined := check.unexamined(session)) is not None:
            # Supported, but nothing of its own to judge (a feature no recording shows): a limitation.
            results.append(_result(check, "unsupported", reason=unexamined, limitation=True))
        elif check.id in plan.profile_failures:
            problem = Evidence(scenario="-", detail=plan.profile_failures[check.id])
            results.append(_failed(check, [problem], reasons.get(check.id), 0.0))
        elif check.id in plan.broken:
            results.append(_result(check, "harness-error", message=plan.broken[check.id]))
        elif check.id not in plan.planned:
            why = session.target_failure or session.interrupted or "the run stopped early"
            unplanned = Evidence(scenario="-", detail=f"could not plan its scenarios — {why}")
            results.append(_failed(check, [unplanned], reasons.get(check.id), 0.0))
        else:
            judged = await _judge(check, session, plan.planned[check.id], reasons.get(check.id), 0.0, contract=contract)
            results.append(_with_reproduction(judged, session))
    return Report(
        adapter=name or session.adapter or "(the adapter did not give its name in time)",
        harness_version=__version__,
        capabilities=capabilities,
        results=tuple(results),
        recordings=tuple(r.name for r in recordings),
        features=feature_sources(recordings, capabilities, profile),
        scenarios=len(session.observations),
        duration_s=time.perf_counter() - started,
        bound_s=limits.bound_s,
        interrupted=session.target_failure or session.interrupted,
        transport=transport,
        contract=contract,
    )


class _Plan:
    """The checks to plan, and what planning each gave: its scenarios, or the adapter's wire profile
    failing (the adapter's failure), or the harness failing (a harness error)."""

    def __init__(self, checks: list[Check]) -> None:
        self.checks = checks
        self.planned: dict[str, list[Scenario]] = {}
        self.profile_failures: dict[str, str] = {}
        self.broken: dict[str, str] = {}

    def run(self, session: Session) -> list[Scenario]:
        """Plan every check (the wire profile's functions run here); the distinct scenarios, in order."""
        for check in self.checks:
            try:
                self.planned[check.id] = check.scenarios(session)
            except ProfileFailure as exc:
                self.profile_failures[check.id] = str(exc)
            except Exception as exc:  # a harness bug must be reported, not crash the run
                self.broken[check.id] = f"building its scenarios failed: {describe_exception(exc)}"
        scenarios = [scenario for planned in self.planned.values() for scenario in planned]
        return list({scenario.key: scenario for scenario in scenarios}.values())


async def _observe(session: Session, target: Callable[..., Any], plan: _Plan, limits: Limits) -> None:
    """Plan and run the scenarios in a watched worker thread (see :mod:`conformance.watchdog`): the
    wire profile's functions are the adapter's code, so a profile that hangs is bounded like a stream."""
    worker = Worker(limits=limits, on_escape=session.on_escape)
    session.attach(worker.step)

    async def work() -> None:
        worker.step("planning the scenarios with the wire profile", limits.scenario_bound_s(limits.scenario_deadline_s))
        order = plan.run(session)
        if await session.start(target):
            await session.observe_all(order)
        await session.finish()
        await session.dispose()

    worker.start(work, session.close)
    try:
        reason = await worker.wait(limits.bound_s)
    except asyncio.CancelledError:
        session.abandon("the run was cancelled")
        raise
    if reason is not None:
        session.abandon(reason)
    elif worker.failure is not None:
        session.harness_failure = f"the harness failed while running the scenarios: {worker.failure}"


def run_sync(target: Callable[..., Any] | Target | Adapter, **kwargs: Any) -> Report:
    """:func:`run` in a fresh event loop (for scripts and the CLI); same arguments."""
    return asyncio.run(run(target, **kwargs))
