"""The harness never passes on nothing: a selection with no check to run is refused by every front end
(``run``, ``run_sync``, the command line, the pytest base class), and a report with no check that ran
is ``non-conformant``."""

from __future__ import annotations

from collections.abc import Iterable
from importlib.metadata import entry_points

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import conformance
from conformance.checks import CHECK_IDS, CHECKS
from conformance.cli import main
from conformance.report import CheckResult, Report, Status
from normalize import AssistantMessageEventStream, Context, Model, StreamOptions
from tests.conformance._fakes import NO_HTTP, well_behaved

pytest_plugins = ["pytester"]

#: The checks that need an HTTP transport: with ``Capabilities(http=False)`` none of them can run.
HTTP_ONLY = [check.id for check in CHECKS if "http" in check.needs]


class _CountingTarget:
    """A StreamFn that counts its calls: a refused selection must not call the adapter at all."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(
        self, model: Model, context: Context, options: StreamOptions | None = None
    ) -> AssistantMessageEventStream:
        self.calls += 1
        return well_behaved(model, context, options)


def _empty_selections() -> list[Iterable[str]]:
    return [[], (), iter(()), {}.keys(), set[str]()]


@pytest.mark.parametrize("checks", _empty_selections(), ids=["list", "tuple", "iterator", "keys", "set"])
def test_run_sync_refuses_an_empty_selection(checks: Iterable[str]) -> None:
    target = _CountingTarget()
    with pytest.raises(ValueError, match=r"^no checks selected \(checks is empty\): a run of no checks examines"):
        conformance.run_sync(target, capabilities=NO_HTTP, checks=checks)
    assert target.calls == 0


async def test_run_refuses_an_empty_selection() -> None:
    target = _CountingTarget()
    with pytest.raises(ValueError, match=r"^no checks selected \(checks is empty\)"):
        await conformance.run(target, capabilities=NO_HTTP, checks=[])
    assert target.calls == 0


def test_a_string_is_not_read_as_a_selection_of_its_characters() -> None:
    with pytest.raises(TypeError, match=r"^checks must be a collection of check ids such as \['G1'\], not the string"):
        conformance.run_sync(well_behaved, capabilities=NO_HTTP, checks="G1")
    with pytest.raises(TypeError, match=r"not the string ''$"):
        conformance.run_sync(well_behaved, capabilities=NO_HTTP, checks="")


def test_a_selection_whose_every_check_is_unsupported_is_refused() -> None:
    target = _CountingTarget()
    with pytest.raises(ValueError) as raised:
        conformance.run_sync(target, capabilities=NO_HTTP, checks=["H1", "T1"])
    message = str(raised.value)
    assert message.startswith("none of the selected checks can run with these capabilities, so the run would examine")
    assert "T1 needs an HTTP transport (Capabilities.http is False)" in message
    assert "H1 needs an HTTP transport (Capabilities.http is False)" in message
    assert target.calls == 0


def test_every_http_check_alone_is_refused_without_http() -> None:
    assert len(HTTP_ONLY) >= 10, HTTP_ONLY
    with pytest.raises(ValueError, match=r"^none of the selected checks can run"):
        conformance.run_sync(well_behaved, capabilities=NO_HTTP, checks=HTTP_ONLY)


@pytest.mark.slow
def test_one_runnable_check_beside_unsupported_ones_still_runs() -> None:
    report = conformance.run_sync(well_behaved, capabilities=NO_HTTP, checks=["H1", "G1"])
    assert [(result.id, result.status) for result in report.results] == [("G1", "pass"), ("H1", "unsupported")]
    assert report.verdict == "conformant"


# -- the command line -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["--checks", ","],
        ["--checks", " , ", "--checks", ","],
    ],
    ids=["comma", "blanks"],
)
def test_cli_refuses_checks_that_name_no_check(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "tests.conformance._fakes:well_behaved", "--no-http", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("conformance: error: no checks selected (checks is empty)"), captured.err


def test_cli_refuses_a_selection_with_nothing_it_can_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "tests.conformance._fakes:well_behaved", "--no-http", "--checks", "H1"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("conformance: error: none of the selected checks can run"), captured.err
    assert "H1 needs an HTTP transport" in captured.err


# -- the pytest front end ---------------------------------------------------------------------------


def _plugin_args() -> list[str]:
    installed = any(entry.name == "streamfns_conformance" for entry in entry_points(group="pytest11"))
    return ["-p", "no:asyncio", *([] if installed else ["-p", "conformance.pytest_plugin"]), "--tb=line"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("checks", "expected"),
    [("()", "*no checks selected (checks is empty)*"), ('("H1", "T1")', "*none of the selected checks can run*")],
    ids=["empty", "all-unsupported"],
)
def test_a_pytest_class_with_nothing_to_run_errors_every_test(
    pytester: pytest.Pytester, checks: str, expected: str
) -> None:
    """Before the fix every test was skipped ("not selected" / "unsupported"): pytest exited 0."""
    pytester.makepyfile(
        test_adapter=f"""
        from conformance.pytest_support import StreamFnConformance
        from tests.conformance._fakes import TARGETS

        class TestNothing(StreamFnConformance):
            target = TARGETS["well_behaved"]
            checks = {checks}
        """
    )
    result = pytester.runpytest(*_plugin_args())
    result.assert_outcomes(errors=len(CHECK_IDS))
    result.stdout.fnmatch_lines([expected])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


# -- the verdict of a report built by hand ----------------------------------------------------------

_STATUSES: list[Status] = ["pass", "fail", "unsupported", "xfail", "harness-error"]


def _report(results: Iterable[CheckResult]) -> Report:
    return Report(adapter="x.y", harness_version="9.9.9", capabilities=NO_HTTP, results=tuple(results))


def test_a_report_with_no_results_is_not_conformant() -> None:
    report = _report([])
    assert report.verdict == "non-conformant"
    assert report.ok is False


def test_a_report_whose_every_check_is_unsupported_is_not_conformant() -> None:
    transport = CheckResult(id="H1", title="t", status="unsupported", reason="no http", limitation=False)
    feature = CheckResult(id="P2", title="t", status="unsupported", reason="no tools", limitation=True)
    assert _report([transport]).verdict == "non-conformant"
    assert _report([transport, feature]).verdict == "non-conformant"
    assert _report([feature]).verdict == "non-conformant"


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.sampled_from(CHECK_IDS), st.sampled_from(_STATUSES), st.booleans()), max_size=8))
def test_no_report_passes_without_a_check_that_ran(rows: list[tuple[str, Status, bool]]) -> None:
    report = _report(CheckResult(id=i, title="t", status=s, limitation=lim) for i, s, lim in rows)
    if report.ok:
        assert any(result.status in ("pass", "xfail") for result in report.results), report.results
