"""Attacks on the harness's process bridge (conformance.process): what a hostile adapter process can
do to the harness itself — its memory, its file descriptors, its processes, its bounds, its verdicts.

The promises under attack (docs/process-protocol.md): whatever the process does wrong is judged, not
papered over; a hostile process can neither hang the harness nor leave a process behind; the
harness's memory stays bounded; a cancelled run kills every process; no fd leaks; a run ends within
its ``bound_s``. The first tests were holes once (each fixed: a child that kills or stops its
launcher, a dead launcher's pipes held open, a flood of bad lines, leftovers under-counted, a signal
abort through a shell, an abort while the request is written, memory kept after a cut-off line); the
others are attacks the bridge withstood from the start, kept so it keeps withstanding them.

The children are ``attack_child.py`` (and ``hostile_child.py`` for its modes), run through the real
launcher with real pipes and signals. Every process that may outlive a run writes its pid to a file
the test reads, so that a test kills what the harness left, whatever the harness did.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import sys
import time
import tracemalloc
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import conformance
from conformance import Capabilities, Limits, Report
from conformance.process import ProcessAdapter, process_target
from normalize import AbortController, Context, Model, StreamOptions, UserMessage
from tests.conformance.process._procs import processes_with

HERE = Path(__file__).parent
ATTACK = str(HERE / "attack_child.py")
HOSTILE = str(HERE / "hostile_child.py")
#: A scripted adapter without HTTP: only the checks that need none run.
SCRIPTED = Capabilities(api=None, http=False)
#: Bounds generous enough that a loaded machine cannot make a good child fail them.
ROOMY = Limits(abort_bound_s=2.0, scenario_deadline_s=8.0, hang_deadline_s=3.0, grace_s=1.0)
#: For the attacks that leave something behind on purpose: a short grace, so the test stays short.
BRIEF = Limits(abort_bound_s=2.0, scenario_deadline_s=8.0, hang_deadline_s=3.0, grace_s=0.3)


async def _gone(token: str, seconds: float = 5.0) -> list[int]:
    """Wait (up to ``seconds``) for the processes carrying ``token`` to end; those still running."""
    for _ in range(round(seconds / 0.05)):
        if not processes_with(token):
            break
        await asyncio.sleep(0.05)
    return processes_with(token)


def _fds() -> int:
    gc.collect()
    return len(os.listdir("/proc/self/fd"))


def _kill_listed(path: Path) -> None:
    """SIGKILL every pid listed in ``path`` (the processes that escaped the harness)."""
    if path.exists():
        for word in path.read_text().split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(word), signal.SIGKILL)


def _written(path: Path) -> bool:
    return path.exists() and bool(path.read_text())


@pytest.fixture
def pid_file(tmp_path: Path) -> Iterator[Path]:
    """Where an escaping child writes its pid; whatever is listed there is killed after the test."""
    path = tmp_path / "escaped.pids"
    yield path
    _kill_listed(path)
    # The harness's transports of an escaped child are collected now, in this test, not in a later one.
    time.sleep(0.1)
    gc.collect()


def _target(mode: str, token: str, *args: str, child: str = ATTACK, **options: Any) -> conformance.Target:
    return process_target([sys.executable, child, mode, token, *args], capabilities=SCRIPTED, **options)


async def _run(mode: str, checks: list[str], *args: str, limits: Limits = ROOMY, **options: Any) -> tuple[Report, str]:
    """Run ``mode`` under ``checks``: the run must end within its bound and leave no process behind."""
    token = f"attack-{uuid.uuid4().hex}"
    started = time.monotonic()
    report = await conformance.run(_target(mode, token, *args, **options), checks=checks, limits=limits)
    assert time.monotonic() - started < report.bound_s + 10, "the run outlived its own bound"
    assert await _gone(token) == [], f"{mode}: processes left behind"
    return report, token


def _evidence(report: Report, check_id: str) -> list[str]:
    return [str(item) for item in report.result(check_id).evidence]


# -- open holes ---------------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("mode", ["kill-launcher", "stop-launcher"])
async def test_a_child_that_kills_or_stops_its_launcher_is_not_left_running(mode: str, pid_file: Path) -> None:
    token = f"attack-{uuid.uuid4().hex}"
    target = _target(mode, token, env={**os.environ, "ATTACK_PID_FILE": str(pid_file)})
    report = await conformance.run(target, checks=["X2"], limits=BRIEF)
    assert report.result("X2").status == "fail"
    assert await _gone(token, 3.0) == []


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_a_killed_launcher_costs_the_harness_no_file_descriptor(pid_file: Path) -> None:
    token = f"attack-{uuid.uuid4().hex}"
    target = _target("kill-launcher", token, env={**os.environ, "ATTACK_PID_FILE": str(pid_file)})
    before = _fds()
    report = await conformance.run(target, checks=["X2"], limits=BRIEF)
    _kill_listed(pid_file)  # the escaped child, killed: its pipes close now
    await asyncio.sleep(0.5)
    assert _fds() <= before  # (earlier tests' leftovers may be collected meanwhile: never more)
    assert not any("did not end even when killed" in item for item in _evidence(report, "X2"))


async def test_a_flood_of_lines_that_are_not_events_is_judged_in_bounded_evidence() -> None:
    report, _ = await _run("bad-lines", ["X1"], "3000")
    evidence = _evidence(report, "X1")
    assert "stdout line 1 is not an event: it is not JSON" in evidence[0]
    assert len(evidence) <= 50


async def test_the_count_of_processes_left_running_is_the_true_count() -> None:
    report, _ = await _run("fork-burst", ["X2"], "30")
    assert any("left 30 process(es) running" in item for item in _evidence(report, "X2")), _evidence(report, "X2")


async def test_a_signal_abort_reaches_an_adapter_started_by_a_shell() -> None:
    token = f"attack-{uuid.uuid4().hex}"
    # "; exit $?" keeps the shell from exec-ing the adapter: it waits for it, as wrappers do.
    command = ["sh", "-c", f'"{sys.executable}" "{ATTACK}" signal-abort {token}; exit $?']
    target = process_target(command, capabilities=SCRIPTED, abort="signal", abort_grace_s=1.0)
    report = await conformance.run(target, checks=["A2"], limits=ROOMY)
    assert await _gone(token) == []
    assert report.result("A2").status == "pass", _evidence(report, "A2")


async def test_an_abort_ends_the_stream_even_while_the_request_is_still_being_written() -> None:
    adapter = ProcessAdapter([sys.executable, ATTACK, "deaf", "t"], pool_size=1, abort_grace_s=0.5)
    model = Model(id="m", api="x", provider="p", base_url="http://127.0.0.1:9")
    context = Context(messages=[UserMessage(content="x" * 1_000_000, timestamp=0)])  # > a pipe's buffer
    controller = AbortController()
    try:
        await adapter.prepare()
        stream = adapter(model, context, StreamOptions(signal=controller.signal))
        asyncio.get_running_loop().call_later(0.2, controller.abort)
        ended = False
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(5.0):  # the grace is 0.5 s: ten times that is no luck
                async for _event in stream:
                    pass
                ended = True
        assert ended, "the stream did not end 5 s after the abort"
    finally:
        await adapter.aclose()


async def test_a_line_cut_off_at_the_limit_is_not_kept_after_its_call() -> None:
    adapter = ProcessAdapter([sys.executable, HOSTILE, "flood-line", "t"], pool_size=1)
    model = Model(id="m", api="x", provider="p", base_url="http://127.0.0.1:9")
    context = Context(messages=[UserMessage(content="hi", timestamp=0)])
    tracemalloc.start()
    try:
        for _ in range(4):
            await adapter.prepare()
            async for _event in adapter(model, context, None):
                pass
            waits = adapter.settle_waits()
            if waits:
                await asyncio.wait(waits, timeout=5.0)
            await adapter.collect(0.5)
        gc.collect()
        kept, _peak = tracemalloc.get_traced_memory()
        # Each call read a 9 MiB line: keeping at most about one of them is bounded; four is not.
        assert kept < 20 * 2**20, f"{kept // 2**20} MiB kept after four calls"
    finally:
        tracemalloc.stop()
        await adapter.aclose()


# -- holes that held ----------------------------------------------------------------------------------


async def test_a_line_that_is_not_utf8_is_a_protocol_failure() -> None:
    report, _ = await _run("bad-utf8", ["X1"])
    assert "stdout line 2 is not an event: it is not UTF-8 (invalid start byte" in _evidence(report, "X1")[0]


async def test_crlf_line_endings_are_json_whitespace_and_accepted() -> None:
    # JSON allows whitespace after a value, and a Windows runtime may write "\r\n": no fault.
    report, _ = await _run("crlf", ["G1", "G2", "G3", "X1", "X2"])
    assert report.verdict == "conformant", report.to_text()


async def test_a_second_ready_line_is_a_line_that_is_not_an_event() -> None:
    report, _ = await _run("ready-twice", ["X1"])
    assert "stdout line 1 is not an event: no event has the type 'ready'" in _evidence(report, "X1")[0]


async def test_an_integer_too_long_to_read_is_a_protocol_failure_not_a_harness_error() -> None:
    report, _ = await _run("huge-int", ["G2", "X1"])
    assert report.result("X1").status == "fail"
    assert "stdout line 2 is not an event: Exceeds the limit (4300 digits)" in _evidence(report, "X1")[0]
    assert report.result("G2").status == "pass"  # the rest of the stream was judged as written


async def test_json_nested_deeper_than_the_interpreter_recurses_is_a_protocol_failure() -> None:
    report, _ = await _run("nested", ["G1", "G2", "G3", "G7", "X1"], "100000")
    assert "is not an event: it is not JSON this harness reads (nested too deep)" in _evidence(report, "X1")[0]
    assert all(result.status in ("pass", "fail") for result in report.results), report.to_text()


async def test_absurd_numbers_in_a_terminal_are_judged_not_a_harness_error() -> None:
    report, _ = await _run("absurd-values", ["G1", "G2", "G5", "G7", "N1", "X1", "X2"])
    assert all(result.status in ("pass", "fail") for result in report.results), report.to_text()
    assert report.result("X1").status == "pass"  # NaN, 10**300 and a huge timestamp are JSON


async def test_a_hundred_megabytes_of_stderr_are_drained_counted_and_quoted_briefly() -> None:
    report, _ = await _run("stderr-flood", ["G2", "X2"], str(100 * 2**20))
    assert report.result("G2").status == "pass"  # a full stderr pipe never blocked the stream
    x2 = _evidence(report, "X2")[0]
    assert f"({100 * 2**20} bytes in all)" in x2
    assert len(x2) < 1500


async def test_a_flood_of_valid_events_is_cut_off_and_the_process_killed() -> None:
    report, _ = await _run("event-flood", ["G2", "X1"])
    assert "no terminal within 100000 events" in _evidence(report, "G2")[0]
    assert report.result("X1").status == "fail"


async def test_lines_just_under_the_limit_are_events_until_the_stream_size_cap() -> None:
    report, _ = await _run("big-lines", ["G2", "X1"], "6")
    assert "no terminal before the events' JSON reached a size of 32000000" in _evidence(report, "G2")[0]
    assert report.result("X1").status == "pass"  # every line was one event, under the line limit


async def test_a_flood_after_the_terminal_is_noted_once_and_the_process_killed() -> None:
    report, _ = await _run("terminal-then-flood", ["G2", "X2"])
    assert report.result("G2").status == "pass"
    x2 = _evidence(report, "X2")
    # One note per process however much it wrote, and each one was killed after the grace.
    noted = sum("wrote after its terminal event" in item for item in x2)
    assert noted >= 1
    assert noted == sum("still running 1 s after its terminal event; killed" in item for item in x2)


async def test_stdout_closed_with_a_connection_kept_is_judged_by_x1_and_l1() -> None:
    token = f"attack-{uuid.uuid4().hex}"
    target = process_target(
        [sys.executable, ATTACK, "close-stdout-keep-socket", token],
        capabilities=Capabilities(api="anthropic-messages"),
    )
    report = await conformance.run(target, checks=["G2", "L1", "X1"], limits=ROOMY)
    assert await _gone(token) == []
    assert "closed its stdout (still running) before its terminal event" in _evidence(report, "X1")[0]
    assert report.result("L1").status == "fail"
    assert report.result("G2").status == "fail"


async def test_a_burst_of_forked_children_is_killed() -> None:
    report, _ = await _run("fork-burst", ["X2"], "30")
    assert "process(es) running when it exited, killed" in _evidence(report, "X2")[0]


async def test_a_child_that_closes_its_stdin_after_the_request_is_well_behaved() -> None:
    report, _ = await _run("close-stdin", ["G2", "X1", "X2"])
    assert report.verdict == "conformant", report.to_text()


async def test_an_exit_right_after_ready_is_judged() -> None:
    report, _ = await _run("ready-then-exit", ["X1"])
    assert any("before its terminal event" in item for item in _evidence(report, "X1"))


async def test_a_start_timeout_no_child_can_meet_ends_the_run_with_x1() -> None:
    report, _ = await _run("good", ["X1"], start_timeout_s=0.001)
    assert "did not say ready within 0.001 s" in _evidence(report, "X1")[0]


async def test_a_signal_abort_reaches_an_adapter_run_directly() -> None:
    # The control for the shell-wrapped test above: the same child, exec-ed by the launcher itself.
    report, _ = await _run("signal-abort", ["A2"], abort="signal", abort_grace_s=1.0)
    assert report.result("A2").status == "pass", _evidence(report, "A2")


async def test_a_cancelled_run_kills_every_process_also_a_grandchild_that_left_the_group(tmp_path: Path) -> None:
    token = f"attack-{uuid.uuid4().hex}"
    grandchild = tmp_path / "grandchild.pid"
    target = process_target(
        [sys.executable, HOSTILE, "daemon", token],
        capabilities=SCRIPTED,
        env={**os.environ, "HOSTILE_PID_FILE": str(grandchild)},
    )
    task = asyncio.ensure_future(conformance.run(target, checks=["X2"], limits=ROOMY))
    for _ in range(200):  # up to 10 s for the grandchild to exist
        if _written(grandchild):
            break
        await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _gone(token, 8.0) == []


async def test_hostile_runs_leak_no_file_descriptor() -> None:
    before = _fds()
    for mode, child in [
        ("good", ATTACK),
        ("crash", HOSTILE),
        ("hang", HOSTILE),
        ("ignore-abort", HOSTILE),
        ("flood-line", HOSTILE),
        ("linger", HOSTILE),
        ("fork-burst", ATTACK),
    ]:
        token = f"attack-{uuid.uuid4().hex}"
        await conformance.run(
            _target(mode, token, "5", child=child, abort_grace_s=0.5),
            checks=["X1"],
            limits=Limits(scenario_deadline_s=2.0, hang_deadline_s=1.0, grace_s=0.3),
        )
        assert await _gone(token) == [], mode
    await asyncio.sleep(0.2)
    assert _fds() <= before  # (earlier tests' leftovers may be collected meanwhile: never more)
