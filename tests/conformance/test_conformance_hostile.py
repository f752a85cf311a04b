"""The harness against adapters that try to hang, fool or crash it (issue 10).

Every run happens in a daemon thread with a generous join timeout, so a regression fails the test
instead of hanging the suite.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

import conformance
import conformance.cli
from cassettes import library, save
from conformance.cli import main
from conformance.report import report_json_text
from tests.conformance._hostile import BLOCK_S, CONTROL_TEXT, FLOODED, IMPORT_FAILURES, TARGETS, hangs_at_import

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


def test_no_object_of_the_adapters_reaches_the_callers_thread() -> None:
    # Its message's text and token count go off when compared outside the worker thread; the checks
    # must only ever see the harness's own copies, so the run ends, and the stream is judged fine.
    report = judge("leaves_traps_for_the_caller", checks=["G1", "G2", "G3", "G4", "G5", "G6", "G7"])
    assert report.ids("pass") == ["G1", "G2", "G3", "G4", "G5", "G6", "G7"], report.to_text()


def test_giving_up_on_a_blocked_worker_reads_nothing_of_the_adapters() -> None:
    started = time.monotonic()
    report = judge("blocks_when_its_message_is_read", checks=["G2"])
    took = time.monotonic() - started
    assert took < BLOCK_S, f"the harness read the adapter's message itself ({took:.1f} s)"
    assert took <= QUICK.bound_s
    assert report.failing == ["G2"], report.to_text()
    assert "blocked the event loop" in (report.interrupted or "")


def test_a_flood_of_events_is_cut_off_at_the_cap() -> None:
    limits = dataclasses.replace(QUICK, max_events=2_000)
    report = bounded(lambda: conformance.run_sync(TARGETS["floods_without_awaiting"], limits=limits, checks=["G2"]))
    assert report.failing == ["G2"], report.to_text()
    assert "no terminal within 2000 events (the harness's cap, Limits.max_events)" in evidence(report, "G2")
    sized = dataclasses.replace(QUICK, max_stream_size=50_000)
    report = bounded(lambda: conformance.run_sync(TARGETS["floods_without_awaiting"], limits=sized, checks=["G2"]))
    assert "Limits.max_stream_size" in evidence(report, "G2"), report.to_text()


def test_giving_up_on_a_flooding_worker_stops_its_reading() -> None:
    # No cap in reach: the watchdog gives up on the worker, whose consumer must then stop reading
    # (it would go on filling memory behind the report).
    limits = dataclasses.replace(QUICK, max_events=10**9, max_stream_size=10**12)
    report = bounded(lambda: conformance.run_sync(TARGETS["floods_without_awaiting"], limits=limits, checks=["G2"]))
    assert "blocked the event loop" in (report.interrupted or ""), report.to_text()
    time.sleep(0.2)
    after_the_run = FLOODED[0]
    time.sleep(0.3)
    assert FLOODED[0] == after_the_run, "the worker kept reading the flood after the run ended"


def test_an_adapter_that_returns_no_stream_passes_no_check_of_its_streams() -> None:
    report = judge("returns_42", checks=["S1", "L2"])
    assert report.failing == ["L2", "S1"], report.to_text()
    assert all("0 cases" in report.result(check_id).message for check_id in ("S1", "L2"))


def test_a_key_leaked_in_any_spelling_fails_s1() -> None:
    report = judge("leaks_the_key_in_base64", checks=["S1"])
    assert report.failing == ["S1"], report.to_text()
    assert "an event contains the API key" in evidence(report, "S1")
    assert "[redacted]" in evidence(report, "S1")


def test_n1_does_not_count_streams_that_never_ended() -> None:
    report = judge("never_returns", checks=["N1"])
    assert report.failing == ["N1"], report.to_text()
    assert "0 cases examined" in report.result("N1").message


def test_n2_does_not_count_streams_that_never_ended() -> None:
    # Only the cancelled consumer is a case: every other stream hung, so its iteration was never seen.
    report = judge("never_returns", checks=["N2"])
    checked = int(report.result("N2").message.split()[0])
    assert 1 <= checked <= 2, report.to_text()


def test_the_adapters_control_characters_never_reach_a_report_raw() -> None:
    report = judge("raises_with_control_characters", checks=["N1"])
    assert report.failing == ["N1"]
    text = report.to_text()
    assert "boom\\x1b]0;owned\\x07\\x1b[2J\\x00 \\x9b31m \\u202eevil \\ud800 end" in " ".join(text.split())
    assert not any(ch in text for ch in "\x1b\x07\x00\x9b\u202e\ud800")
    text.encode("utf-8")  # a lone surrogate would not encode
    suite = ET.fromstring(report.to_junit())
    assert "RuntimeError: boom\\x1b" in "".join(suite.itertext())
    rendered = report_json_text(report)
    assert not any(ch in rendered for ch in "\x1b\x07\x00\x9b\u202e\ud800")
    rendered.encode("utf-8")
    data = json.loads(rendered)
    assert CONTROL_TEXT in data["results"][0]["evidence"][0]["detail"]  # the data itself is unchanged


# -- the command line keeps its exit codes ---------------------------------------------------------------------


def importable_from(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", [str(folder), *sys.path])
    importlib.invalidate_caches()


@pytest.mark.parametrize("module", sorted(IMPORT_FAILURES))
def test_any_failure_to_import_the_target_is_a_one_line_usage_error(
    module: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / f"{module}.py").write_text(IMPORT_FAILURES[module], encoding="utf-8")
    importable_from(tmp_path, monkeypatch)
    assert main(["run", f"{module}:stream_fn", "--no-http"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"conformance: error: cannot import '{module}': "), captured.err
    assert captured.err.count("\n") == 1, captured.err
    assert not any(ch in captured.err for ch in "\x1b\x07\x00\x9b\u202e\ud800"), captured.err


def test_an_import_that_hangs_is_given_up_on_within_the_stated_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "conformance_hangs_at_import.py").write_text(hangs_at_import(5.0), encoding="utf-8")
    importable_from(tmp_path, monkeypatch)
    monkeypatch.setattr(conformance.cli, "IMPORT_BOUND_S", 0.5)
    started = time.monotonic()
    status = bounded(lambda: main(["run", "conformance_hangs_at_import:stream_fn", "--no-http"]))
    assert time.monotonic() - started < 2.0
    assert status == 2
    err = capsys.readouterr().err
    assert err == "conformance: error: importing 'conformance_hangs_at_import' did not finish within 0.5 s\n"


def test_a_reader_that_goes_away_ends_the_command_quietly() -> None:
    read, write = os.pipe()
    os.close(read)  # `| head -0`: nobody will read a byte
    try:
        done = subprocess.run(
            [sys.executable, "-m", "conformance", "list"],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
            cwd=ROOT,
            timeout=GUARD_S,
        )
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (0, "")


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
