"""The front ends: the command line (``python -m conformance``) and the pytest base class and plugin."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from conformance.checks import CHECK_IDS
from conformance.cli import main
from conformance.pytest_support import StreamFnConformance
from conformance.targets import faux

pytest_plugins = ["pytester"]


# -- the command line -------------------------------------------------------------------------------


@pytest.mark.slow
def test_cli_run_prints_the_table_and_exits_0_when_conformant(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "conformance.targets:faux", "--checks", "G1,N1", "--checks", "P1"]) == 0
    out = capsys.readouterr().out
    assert "adapter streamfns.faux.FauxProvider" in out
    assert "verdict: conformant" in out


@pytest.mark.slow
def test_cli_exits_1_when_non_conformant_and_writes_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "out" / "report.xml"
    target = "tests.conformance._fakes:starts_twice"
    argv = ["run", target, "--no-http", "--checks", "G1,G2", "--format", "junit", "--report", str(report)]
    assert main(argv) == 1
    assert "G1   FAIL" in capsys.readouterr().out
    suite = ET.fromstring(report.read_text())
    assert suite.get("failures") == "1"
    assert {p.get("name"): p.get("value") for p in suite.iter("property")}["adapter"] == target


@pytest.mark.slow
def test_cli_xfail_with_a_reason_turns_a_failure_into_a_limitation(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["run", "tests.conformance._fakes:starts_twice", "--no-http", "--checks", "G1", "--format", "json"]
    assert main([*argv, "--xfail", "G1=a second start, on purpose"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["verdict"] == "conformant-with-limitations"
    assert (data["results"][0]["status"], data["results"][0]["reason"]) == ("xfail", "a second start, on purpose")


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["run"],
        ["run", "no.such.module:fn"],
        ["run", "conformance.targets:nothing_here"],
        ["run", "conformance.targets:faux", "--xfail", "G1"],
        ["run", "conformance.targets:faux", "--checks", "G1,Q7"],
        ["run", "tests.conformance._fakes:well_behaved"],  # HTTP by default, no recordings
        ["explain", "Q7"],
    ],
)
def test_cli_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert "error" in capsys.readouterr().err


def test_an_unwritable_report_path_is_refused_before_the_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory", encoding="utf-8")
    assert main(["run", "conformance.targets:faux", "--report", str(blocker / "report.json")]) == 2
    out, err = capsys.readouterr()
    assert out == "", "nothing ran"
    assert err.startswith("conformance: error: cannot write the report to ")
    assert "Traceback" not in err


def test_a_run_that_never_happens_leaves_no_report_behind(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    report = tmp_path / "reports" / "conformance.xml"
    assert main(["run", "no.such.module:TARGET", "--report", str(report), "--format", "junit"]) == 2
    assert "error" in capsys.readouterr().err
    assert not (tmp_path / "reports").exists(), "no empty report (or folder) for a CI reader to choke on"


def test_cli_speaks_in_flags_not_python(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "tests.conformance._fakes:well_behaved"]) == 2  # HTTP by default, no recordings
    err = capsys.readouterr().err
    assert "pass --cassettes PATH" in err
    assert "cassettes=" not in err


def test_cli_lists_and_explains_checks(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listed] == list(CHECK_IDS)
    assert main(["explain", "n2"]) == 0
    assert "CancelledError" in capsys.readouterr().out


@pytest.mark.slow
def test_python_dash_m_conformance_runs() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "conformance", "run", "conformance.targets:faux", "--checks", "P1"],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).resolve().parents[2],
        timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    assert "P1   pass" in completed.stdout


# -- pytest ---------------------------------------------------------------------------------------


@pytest.mark.slow
class TestFauxThroughThePytestFrontEnd(StreamFnConformance):
    """One test per check: the HTTP checks skip (unsupported), the others pass."""

    target = faux


@pytest.mark.slow
def test_the_plugin_writes_reports_and_maps_statuses_to_outcomes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_adapter="""
        from conformance.pytest_support import StreamFnConformance
        from tests.conformance._fakes import TARGETS

        class TestStartsTwice(StreamFnConformance):
            target = TARGETS["starts_twice"]
            checks = ("G1", "G2", "A1", "H1")
            xfail = {"G1": "starts twice on purpose"}
        """
    )
    folder = pytester.path / "reports"
    installed = any(entry.name == "streamfns_conformance" for entry in entry_points(group="pytest11"))
    load = [] if installed else ["-p", "conformance.pytest_plugin"]
    result = pytester.runpytest("-p", "no:asyncio", *load, "--conformance-report-dir", str(folder))
    # G1 xfail; G2 passes; A1 fails (start, start, error); H1 unsupported; the rest were not selected.
    result.assert_outcomes(passed=1, failed=1, xfailed=1, skipped=len(CHECK_IDS) - 3)
    result.stdout.fnmatch_lines(["*A1 an abort before the request sends nothing*", "*Troubleshooting:*"])
    written = sorted(path.suffix for path in folder.iterdir())
    assert written == [".json", ".xml"]


@pytest.mark.slow
def test_an_xfail_without_a_reason_errors_every_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_adapter="""
        from conformance.pytest_support import StreamFnConformance
        from tests.conformance._fakes import TARGETS

        class TestNoReason(StreamFnConformance):
            target = TARGETS["starts_twice"]
            xfail = {"G1": ""}
        """
    )
    result = pytester.runpytest("-p", "no:asyncio", "--tb=line")
    result.assert_outcomes(errors=len(CHECK_IDS))
    result.stdout.fnmatch_lines(["*xfail for G1 needs a written reason*"])


def test_a_bound_method_target_is_named_with_what_it_is_bound_to() -> None:
    from conformance.target import adapter_name
    from examples.compatible_chat.adapter import WIRE

    assert adapter_name(WIRE.stream_fn) == "streamfns.kit.wire.WireApi._stream of WireApi('compatible-chat')"

    class Hostile:
        def __repr__(self) -> str:
            raise RuntimeError("no")

        def stream(self) -> None: ...

    assert ".Hostile.stream of <Hostile instance at 0x" in adapter_name(Hostile().stream)
