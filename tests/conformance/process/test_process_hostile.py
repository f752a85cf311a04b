"""Adapter processes that break the protocol, each in one way: every misdeed is judged (X1 or X2,
and the contract checks it breaks), no run hangs, and no process is left behind — not even one that
left the process group.

The children are ``hostile_child.py`` (standard library only, scripted streams, no HTTP unless a
mode needs a connection), run through the real launcher with real pipes and signals.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
import uuid
from pathlib import Path

import pytest

import conformance
from conformance import Capabilities, Limits, Report
from conformance.process import process_target
from tests.conformance.process._procs import processes_with

CHILD = str(Path(__file__).with_name("hostile_child.py"))
#: A scripted adapter without HTTP: only the checks that need none run.
SCRIPTED = Capabilities(api=None, http=False)
#: Bounds generous enough that a loaded machine cannot make a good child fail them.
ROOMY = Limits(abort_bound_s=2.0, scenario_deadline_s=8.0, hang_deadline_s=3.0, grace_s=1.0)


async def _run(mode: str, checks: list[str], **options: object) -> tuple[Report, str]:
    token = f"hostile-{uuid.uuid4().hex}"
    limits = options.pop("limits", ROOMY)
    target = process_target([sys.executable, CHILD, mode, token], capabilities=SCRIPTED, **options)  # pyright: ignore[reportArgumentType]
    started = time.monotonic()
    report = await conformance.run(target, checks=checks, limits=limits)  # pyright: ignore[reportArgumentType]
    assert time.monotonic() - started < report.bound_s + 10, "the run outlived its own bound"
    for _ in range(100):  # up to 5 s: the last kill may still be landing
        if not processes_with(token):
            break
        await asyncio.sleep(0.05)
    assert processes_with(token) == [], f"{mode}: processes left behind"
    return report, token


def _evidence(report: Report, check_id: str) -> str:
    return " | ".join(str(item) for item in report.result(check_id).evidence)


async def test_a_well_behaved_child_is_conformant_at_both_levels() -> None:
    report, _ = await _run("good", ["G1", "G2", "P1", "A2", "X1", "X2"])
    assert report.verdict == "conformant", report.to_text()
    assert report.levels_text == "pi: conformant; streamfns: conformant"
    assert report.result("X1").message.endswith("case(s) checked")


async def test_a_child_that_answers_the_abort_of_a_reader_that_left_and_waits_for_eof_is_well_behaved() -> None:
    # The consumer cancels mid-stream: the harness sends the abort and closes stdin; the child writes
    # its aborted terminal (which nobody reads) and exits at the end of stdin. Nothing is wrong.
    report, _ = await _run("waits-for-eof", ["N2", "P1", "X1", "X2"])
    assert report.verdict == "conformant", report.to_text()


async def test_a_line_that_is_not_an_event_fails_x1_and_is_left_out_of_the_stream() -> None:
    report, _ = await _run("bad-line", ["G3", "P1", "X1", "X2"])
    assert report.result("X1").status == "fail"
    assert "stdout line 2 is not an event: it is not JSON" in _evidence(report, "X1")
    assert "'debug: got the request'" in _evidence(report, "X1")
    # The rest of the stream was the process's own and is judged as such: it replays to done.
    assert report.result("P1").status == "pass"
    assert report.verdict_at("pi") == "non-conformant"


async def test_an_event_of_an_unknown_type_is_a_line_that_is_not_an_event() -> None:
    report, _ = await _run("unknown-event", ["X1"])
    assert "no event has the type 'text_chunk'" in _evidence(report, "X1")


async def test_a_crash_mid_stream_leaves_the_stream_without_a_terminal_and_is_reported_with_stderr() -> None:
    report, _ = await _run("crash", ["G2", "X1", "X2"])
    assert report.result("G2").status == "fail"  # nothing was papered over: no terminal
    x1 = _evidence(report, "X1")
    assert "closed its stdout (exit status 1) before its terminal event" in x1
    assert "RuntimeError: the adapter crashed mid-stream" in _evidence(report, "X2")  # the traceback's end
    assert report.levels_text.startswith("pi: non-conformant (G2, X1)")


@pytest.mark.parametrize(("mode", "exit_text"), [("exit-quietly", "exit status 0"), ("segfault", "killed by SIGSEGV")])
async def test_an_exit_before_the_terminal_is_a_protocol_failure(mode: str, exit_text: str) -> None:
    report, _ = await _run(mode, ["X1"])
    assert f"closed its stdout ({exit_text}) before its terminal event" in _evidence(report, "X1")


async def test_stderr_noise_fails_only_the_stricter_contract() -> None:
    report, _ = await _run("stderr-noise", ["G2", "P1", "X1", "X2"])
    assert report.result("X2").status == "fail"
    assert "wrote to stderr: 'DeprecationWarning: something the library says\\n'" in _evidence(report, "X2")
    assert report.verdict_at("pi") == "conformant"
    assert report.verdict_at("streamfns") == "non-conformant"
    assert report.levels_text == "pi: conformant; streamfns: non-conformant (X2)"


async def test_a_child_that_ignores_the_abort_is_killed_and_judged() -> None:
    report, _ = await _run("ignore-abort", ["A2", "X1"], abort_grace_s=1.0)
    assert report.result("A2").status == "fail"
    assert "did not end its stream within 1 s of the abort; killed" in _evidence(report, "X1")


async def test_a_child_that_ignores_a_signal_abort_is_killed_too() -> None:
    report, _ = await _run("ignore-abort", ["A2", "X1"], abort="signal", abort_grace_s=1.0)
    assert report.result("A2").status == "fail"
    assert "did not end its stream within 1 s of the abort; killed" in _evidence(report, "X1")


async def test_a_silent_child_that_ignores_sigterm_is_a_hang_and_is_killed() -> None:
    report, _ = await _run("hang", ["G2", "X1"], limits=Limits(scenario_deadline_s=1.0, grace_s=0.5))
    assert report.result("G2").status == "fail"
    assert "hang" in _evidence(report, "G2")


async def test_a_child_that_never_says_ready_is_given_up_on_without_hanging_the_run() -> None:
    report, _ = await _run("never-ready", ["G2", "X1"], start_timeout_s=0.5)
    x1 = _evidence(report, "X1")
    assert "did not say ready within 0.5 s" in x1
    assert report.verdict_at("pi") == "non-conformant"


async def test_a_child_that_writes_something_else_than_ready_is_told_what_was_expected() -> None:
    report, _ = await _run("bad-ready", ["X1"], start_timeout_s=2.0)
    assert """wrote 'loading…' where {"type": "ready"} was expected""" in _evidence(report, "X1")


async def test_a_line_without_end_is_cut_off_at_the_limit_and_the_child_killed() -> None:
    report, _ = await _run("flood-line", ["X1"])
    assert "wrote a line longer than 8388608 bytes; killed" in _evidence(report, "X1")


async def test_output_after_the_terminal_and_a_bad_exit_status_fail_x2() -> None:
    report, _ = await _run("after-terminal", ["G2", "X2"])
    assert report.result("G2").status == "pass"  # the stream ended at its terminal
    assert "wrote after its terminal event" in _evidence(report, "X2")
    report, _ = await _run("exit-status", ["X2"])
    assert "ended with exit status 3 after its terminal event" in _evidence(report, "X2")


async def test_a_child_that_lingers_after_its_terminal_is_killed() -> None:
    report, _ = await _run("linger", ["G2", "P1", "X2"])
    assert "still running 1 s after its terminal event; killed" in _evidence(report, "X2")
    assert report.levels_text == "pi: conformant; streamfns: non-conformant (X2)"


@pytest.mark.parametrize("namespace", ["1", "0"], ids=["pid-namespace", "subreaper-fallback"])
async def test_a_grandchild_that_left_the_process_group_is_found_and_killed(tmp_path: Path, namespace: str) -> None:
    # Its command line carries the token: _run finds none left (in the namespace, or swept by the
    # launcher as a subreaper where namespaces are not allowed).
    env = {
        **os.environ,
        "HOSTILE_PID_FILE": str(tmp_path / "grandchild.pid"),
        "STREAMFNS_LAUNCHER_NAMESPACE": namespace,
    }
    report, _ = await _run("daemon", ["X2"], env=env)
    assert (tmp_path / "grandchild.pid").exists()
    assert "left 1 process(es) running when it exited, killed" in _evidence(report, "X2")


@pytest.mark.parametrize("mode", ["crash", "linger", "ignore-abort"])
async def test_the_fallback_without_a_pid_namespace_leaves_nothing_either(mode: str) -> None:
    env = {**os.environ, "STREAMFNS_LAUNCHER_NAMESPACE": "0"}
    report, _ = await _run(mode, ["A2", "G2", "X1", "X2"], env=env, abort_grace_s=1.0)
    assert report.verdict == "non-conformant"


async def test_a_connection_left_open_after_the_terminal_is_what_l1_sees() -> None:
    token = f"hostile-{uuid.uuid4().hex}"
    target = process_target(
        [sys.executable, CHILD, "linger-socket", token], capabilities=Capabilities(api="anthropic-messages")
    )
    report = await conformance.run(target, checks=["L1", "X2"], limits=ROOMY)
    assert report.result("L1").status == "fail"
    assert "still open" in _evidence(report, "L1")
    # (after the first leak the harness gives later scenarios only a short grace)
    assert "s after its terminal event; killed" in _evidence(report, "X2")
    assert processes_with(token) == []


async def test_a_command_that_does_not_exist_is_reported_not_raised() -> None:
    report = await conformance.run(
        process_target(["/nonexistent/adapter-binary"], capabilities=SCRIPTED), checks=["X1"], limits=ROOMY
    )
    assert "could not be started: FileNotFoundError" in _evidence(report, "X1")
