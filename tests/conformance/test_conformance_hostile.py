"""The harness against adapters that try to hang, fool or crash it (issue 10).

Every run happens in a daemon thread with a generous join timeout, so a regression fails the test
instead of hanging the suite.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

import conformance
from cassettes import library, save
from conformance.cli import main
from tests.conformance._hostile import BLOCK_S, TARGETS

pytestmark = pytest.mark.slow

T = TypeVar("T")

#: Short bounds: every hostile scenario would otherwise wait out the 8 s default deadline.
QUICK = conformance.Limits(scenario_deadline_s=0.3, grace_s=0.1, unwind_s=0.2)
#: Longer than any bound these tests set; the adapters that block do so for BLOCK_S.
GUARD_S = 30.0
ROOT = Path(__file__).resolve().parents[2]


def bounded(fn: Callable[[], T], seconds: float = GUARD_S) -> T:
    """``fn()`` in a daemon thread; fails the test if it has not returned after ``seconds``."""
    outcome: list[T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            outcome.append(fn())
        except BaseException as exc:  # re-raised in the test's thread
            failure.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"still running after {seconds:g} s: the harness hung")
    if failure:
        raise failure[0]
    return outcome[0]


def judge(name: str, **kwargs: Any) -> conformance.Report:
    return bounded(lambda: conformance.run_sync(TARGETS[name], limits=QUICK, **kwargs))


def evidence(report: conformance.Report, check_id: str) -> str:
    result = report.result(check_id)
    return " | ".join([result.message, *(str(item) for item in result.evidence)])


# -- hangs --------------------------------------------------------------------------------------------


def test_a_task_that_ignores_cancellation_cannot_hang_the_run() -> None:
    report = judge("leaves_an_unkillable_task")
    assert report.verdict == "non-conformant", report.to_text()
    assert report.failing == ["L2"], report.to_text()
    assert "_unkillable" in evidence(report, "L2")


def test_a_stream_that_swallows_cancellation_cannot_hang_the_run() -> None:
    report = judge("swallows_cancellation_forever", checks=["G2", "N2"])
    assert report.failing == ["G2", "N2"], report.to_text()
    assert report.ids("harness-error") == [], report.to_text()
    assert "still running" in evidence(report, "N2")


@pytest.mark.parametrize("name", ["blocks_the_loop", "blocks_the_loop_mid_stream"])
def test_a_blocking_call_in_the_adapter_cannot_hang_the_run(name: str) -> None:
    started = time.monotonic()
    report = judge(name)
    took = time.monotonic() - started
    assert took < BLOCK_S, f"the run waited for the blocking call ({took:.1f} s)"
    assert took <= QUICK.bound_s
    assert report.verdict == "non-conformant", report.to_text()
    assert report.ids("harness-error", "pass") == [], report.to_text()
    assert "blocked the event loop" in report.to_text()
    assert "blocked the event loop" in (report.interrupted or "")


def test_a_never_returning_adapter_gets_a_verdict_within_the_stated_bound() -> None:
    assert conformance.Limits().bound_s <= 90, "a default run must end within 90 s"
    limits = conformance.Limits(scenario_deadline_s=0.5, hang_deadline_s=0.2, run_budget_s=1.5, grace_s=0.1)
    started = time.monotonic()
    report = bounded(lambda: conformance.run_sync(TARGETS["never_returns"], limits=limits))
    took = time.monotonic() - started
    assert took <= limits.bound_s, (took, limits.bound_s)
    assert report.verdict == "non-conformant"
    assert f"{limits.bound_s:g} s" in report.to_text()
    not_run = [r for r in report.results if "could not finish" in r.message]
    assert not_run, report.to_text()
    assert all("hung" in evidence(report, r.id) for r in not_run), report.to_text()


# -- exits and interrupts -------------------------------------------------------------------------------


def test_system_exit_from_the_adapter_is_its_failure_not_an_exit() -> None:
    report = judge("exits_zero")
    assert report.verdict == "non-conformant"
    assert "N1" in report.failing
    assert "SystemExit" in evidence(report, "N1")


def test_system_exit_from_the_factory_is_its_failure_not_an_exit() -> None:
    report = judge("exits_in_the_factory", checks=["G1", "N1"])
    assert report.failing == ["G1", "N1"], report.to_text()
    assert "the factory tests.conformance._hostile.exits_in_the_factory raised SystemExit" in evidence(report, "N1")
    assert report.interrupted is not None


def test_keyboard_interrupt_from_the_adapter_is_its_failure_not_an_exit() -> None:
    report = judge("interrupts_while_streaming")
    assert "N2" in report.failing, report.to_text()
    assert "KeyboardInterrupt" in evidence(report, "N2")


def test_system_exit_from_an_adapter_task_is_its_failure() -> None:
    report = judge("exits_from_a_task")
    assert report.verdict == "non-conformant", report.to_text()
    assert "L2" in report.failing, report.to_text()
    assert "SystemExit" in evidence(report, "L2")


@pytest.mark.parametrize(
    ("name", "says"),
    [("exits_zero", "SystemExit"), ("interrupts_while_streaming", "KeyboardInterrupt")],
)
def test_the_cli_reports_and_exits_1_when_the_adapter_exits_or_interrupts(
    name: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status = bounded(lambda: main(["run", f"tests.conformance._hostile:{name}", "--no-http", "--checks", "N1,N2"]))
    assert status == 1
    out = capsys.readouterr().out
    assert "verdict: non-conformant" in out
    assert says in out


def test_the_command_line_exits_even_when_the_adapter_leaves_threads_running() -> None:
    argv = [
        "-m",
        "conformance",
        "run",
        "tests.conformance._hostile:leaves_threads_running",
        "--no-http",
        "--checks",
        "P1",
    ]
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, *argv], capture_output=True, text=True, check=False, cwd=ROOT, timeout=GUARD_S
    )
    assert time.monotonic() - started < GUARD_S
    assert done.returncode == 0, done.stdout + done.stderr
    assert "P1   pass" in done.stdout
    assert "the adapter left threads running (" in done.stderr
    assert "adapter-sleeper" in done.stderr


# -- fooling ------------------------------------------------------------------------------------------------


def test_a_check_that_examined_nothing_is_not_a_pass(capsys: pytest.CaptureFixture[str]) -> None:
    report = judge("returns_42", checks=["G1"])
    assert report.verdict == "non-conformant"
    assert report.result("G1").status == "fail"
    assert "0 cases" in report.result("G1").message
    assert bounded(lambda: main(["run", "tests.conformance._hostile:returns_42", "--no-http", "--checks", "G1"])) == 1
    assert "verdict: non-conformant" in capsys.readouterr().out


def test_a_base_exception_from_result_fails_n2() -> None:
    report = judge("result_raises_a_base_exception", checks=["N2"])
    assert report.failing == ["N2"], report.to_text()
    assert "Detonation" in evidence(report, "N2")


def test_events_that_raise_are_the_adapters_fault_not_a_harness_error() -> None:
    report = judge("yields_booby_trapped_events")
    assert report.ids("harness-error") == [], report.to_text()
    assert "G3" in report.failing, report.to_text()
    assert "_Booby" in evidence(report, "G3")


# -- the command line keeps its exit codes ---------------------------------------------------------------------


def test_bad_cassettes_are_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text("not a cassette\n", encoding="utf-8")
    folder = tmp_path / "folder"
    folder.mkdir()
    save(library.load("llma__text_haiku45"), folder / "good.jsonl")
    (folder / "bad.jsonl").write_text('{"type":"cassette"}\n', encoding="utf-8")
    for bad in (garbage, folder, tmp_path / "missing.jsonl", Path(__file__)):
        argv = ["run", "conformance.targets:anthropic", "--cassettes", str(bad), "--checks", "P1"]
        assert main(argv) == 2, bad
        err = capsys.readouterr().err
        assert err.startswith("conformance: error: "), err
        assert "Traceback" not in err
