"""Contract levels: each check and each piece of evidence says whether it breaks the contract pi
states for any StreamFn (``pi``) or only streamfns' stricter one (``streamfns``); reports give a
verdict at each level, and ``contract="pi"`` (``--contract pi``) judges only the first.

Two real adapters, each reshaped the way a pi-style adapter differs from ours, run against the real
checks: one keeps every promise of pi's contract but none of streamfns' additions (no ``start``
first, no ``ErrorInfo``), one breaks a promise of pi's own (success from a broken stream).
"""

from __future__ import annotations

import dataclasses
import json
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator
from typing import Any

import pytest

import conformance
from conformance import Capabilities, Target
from conformance.cli import main
from conformance.report import CheckResult, Evidence, report_json_text, verdict_of
from normalize import AssistantMessage, Context, DoneEvent, ErrorEvent, Model, StartEvent, StreamOptions
from streamfns.anthropic import stream_anthropic

pytestmark = pytest.mark.slow

ANTHROPIC = Capabilities.every_feature("anthropic-messages")


class _Reshaped:
    """``stream_anthropic``'s events, reshaped by ``reshape`` (a pi-style adapter's habits)."""

    def __init__(self, events: AsyncIterator[Any], reshape: Any) -> None:
        self._events = events
        self._reshape = reshape
        self._last: AssistantMessage | None = None

    async def __aiter__(self) -> AsyncIterator[Any]:
        async for event in self._events:
            for out in self._reshape(event):
                if isinstance(out, DoneEvent):
                    self._last = out.message
                elif isinstance(out, ErrorEvent):
                    self._last = out.error
                yield out

    async def result(self) -> AssistantMessage:
        assert self._last is not None
        return self._last


def _pi_style(event: Any) -> list[Any]:
    """No start event, and errors without ErrorInfo: what pi promises, and nothing more."""
    if isinstance(event, StartEvent):
        return []
    if isinstance(event, ErrorEvent):
        return [ErrorEvent(event.reason, dataclasses.replace(event.error, error_info=None))]
    return [event]


def _success_from_failure(event: Any) -> list[Any]:
    """Every error ends as done(stop) with what had arrived: success from a broken stream."""
    if isinstance(event, ErrorEvent) and event.reason == "error":
        message = dataclasses.replace(event.error, stop_reason="stop", error_message=None, error_info=None)
        return [DoneEvent("stop", message)]
    return [event]


def pi_style(model: Model, context: Context, options: StreamOptions | None = None) -> _Reshaped:
    """A StreamFn keeping pi's contract only."""
    return _Reshaped(aiter(stream_anthropic(model, context, options)), _pi_style)


def succeeds_on_failure(model: Model, context: Context, options: StreamOptions | None = None) -> _Reshaped:
    """A StreamFn breaking pi's own contract."""
    return _Reshaped(aiter(stream_anthropic(model, context, options)), _success_from_failure)


def no_idle_timeout(model: Model, context: Context, options: StreamOptions | None = None) -> Any:
    """A StreamFn without an idle timeout (as pi-ai has none once the headers arrive)."""
    if options is not None:
        options = dataclasses.replace(options, timeout=60.0, connect_timeout=60.0, progress_timeout=None)
    return stream_anthropic(model, context, options)


PI_STYLE = Target(pi_style, ANTHROPIC)
SUCCEEDS_ON_FAILURE = Target(succeeds_on_failure, ANTHROPIC)
CHECKS = ["G1", "G2", "G5", "H1", "T1", "S1"]


async def test_an_adapter_keeping_only_pis_contract_is_pi_conformant_and_told_what_streamfns_adds() -> None:
    report = await conformance.run(PI_STYLE, checks=CHECKS)
    assert report.verdict_at("pi") == "conformant", report.to_text()
    assert report.verdict_at("streamfns") == "non-conformant"
    assert report.levels_text == "pi: conformant; streamfns: non-conformant (G1, G5, T1, H1)"
    assert report.verdict == "non-conformant"  # the default contract is the whole one
    # G5 and H1 are pi checks; what they found here is only the stricter part of them.
    for check_id in ("G5", "H1", "T1"):
        result = report.result(check_id)
        assert (result.level, result.status, result.status_at("pi")) == ("pi", "fail", "pass"), check_id
        assert {item.level for item in result.evidence} == {"streamfns"}
    assert report.result("G1").level == "streamfns"
    assert "no errorInfo" in str(report.result("G5").evidence[0])
    text = report.to_text()
    assert "  pi: conformant; streamfns: non-conformant (G1, G5, T1, H1)" in text
    assert "H1   FAIL          pi        " in text
    assert "pi: pass · " in text  # the table says a pi check failed only on stricter promises
    assert "- [streamfns] expected an error" in text


async def test_success_from_a_broken_stream_breaks_pis_own_contract() -> None:
    report = await conformance.run(SUCCEEDS_ON_FAILURE, checks=["H1", "T1", "S1"])
    assert report.levels_text == "pi: non-conformant (T1, H1); streamfns: non-conformant (T1, H1)"
    evidence = report.result("T1").evidence
    assert evidence
    assert all(item.level == "pi" for item in evidence)
    assert "got done(stop)" in str(evidence[0])


async def test_a_hang_on_a_silent_server_breaks_only_the_idle_timeout_promise() -> None:
    # G2 sees the hang of C3's silent-server scenarios; pi promises no idle timeout, so at pi level
    # that hang is not counted, and --contract pi (which runs no C3 scenario) agrees.
    quick = conformance.Limits(scenario_deadline_s=1.0, hang_deadline_s=1.0)
    report = await conformance.run(Target(no_idle_timeout, ANTHROPIC), checks=["G2", "C3", "P1"], limits=quick)
    g2 = report.result("G2")
    assert g2.status == "fail"
    assert {item.level for item in g2.evidence} == {"streamfns"}
    assert all("hang" in item.detail for item in g2.evidence)
    assert report.levels_text == "pi: conformant; streamfns: non-conformant (G2, C3)"


async def test_contract_pi_runs_only_pi_checks_and_judges_only_pi_evidence() -> None:
    report = await conformance.run(PI_STYLE, checks=CHECKS, contract="pi")
    assert report.contract == "pi"
    assert [result.id for result in report.results] == ["G2", "G5", "T1", "H1", "S1"]  # G1 is streamfns'
    assert report.ids("pass") == ["G2", "G5", "T1", "H1", "S1"]
    assert report.verdict == "conformant"
    assert report.verdict_at("streamfns") is None
    assert report.levels_text == "pi: conformant; streamfns: not judged (--contract pi)"
    data = report.to_json()
    assert (data["contract"], data["verdicts"]) == ("pi", {"pi": "conformant", "streamfns": None})
    assert data["failing"] == {"pi": []}
    suite = ET.fromstring(report.to_junit())
    properties = {item.get("name"): item.get("value") for item in suite.find("properties") or []}
    assert (properties["contract"], properties["verdict.pi"], properties["verdict.streamfns"]) == (
        "pi",
        "conformant",
        "not judged",
    )


async def test_contract_pi_still_fails_what_breaks_pis_contract() -> None:
    report = await conformance.run(SUCCEEDS_ON_FAILURE, checks=["H1", "T1"], contract="pi")
    assert report.verdict == "non-conformant"
    assert report.failing == ["T1", "H1"]


async def test_the_json_and_junit_reports_carry_both_levels() -> None:
    report = await conformance.run(PI_STYLE, checks=["G1", "H1"])
    data = json.loads(report_json_text(report))
    assert data["verdicts"] == {"pi": "conformant", "streamfns": "non-conformant"}
    assert data["failing"] == {"pi": [], "streamfns": ["G1", "H1"]}
    h1 = next(result for result in data["results"] if result["id"] == "H1")
    assert (h1["level"], h1["status"], h1["piStatus"]) == ("pi", "fail", "pass")
    assert {item["level"] for item in h1["evidence"]} == {"streamfns"}
    g1 = next(result for result in data["results"] if result["id"] == "G1")
    assert (g1["level"], g1["piStatus"]) == ("streamfns", None)
    suite = ET.fromstring(report.to_junit())
    cases = {case.get("name", "").split()[0]: case for case in suite.iter("testcase")}
    levels = {key: {p.get("name"): p.get("value") for p in case.iter("property")} for key, case in cases.items()}
    assert levels["H1"] == {"level": "pi", "pi_status": "pass"}
    assert levels["G1"] == {"level": "streamfns", "pi_status": "n/a"}


def test_a_pi_verdict_needs_a_pi_check_examined() -> None:
    # A report that holds only streamfns checks has judged nothing of pi's contract: not a pass.
    result = CheckResult(id="G1", title="t", status="pass", level="streamfns")
    assert verdict_of((result,), "pi") == "non-conformant"
    failing = CheckResult(
        id="H1", title="t", status="fail", level="pi", evidence=(Evidence(scenario="s", detail="d", level="pi"),)
    )
    assert verdict_of((failing,), "pi") == "non-conformant"
    stricter = dataclasses.replace(failing, evidence=(Evidence(scenario="s", detail="d", level="streamfns"),))
    assert verdict_of((stricter,), "pi") == "conformant"
    assert verdict_of((stricter,), "streamfns") == "non-conformant"


async def test_contract_pi_refuses_a_selection_of_streamfns_checks_only() -> None:
    with pytest.raises(ValueError, match=r"none of the selected checks \(G1, C3\) belongs to the pi contract"):
        await conformance.run(PI_STYLE, checks=["G1", "C3"], contract="pi")
    with pytest.raises(ValueError, match="contract must be 'pi' or 'streamfns'"):
        await conformance.run(PI_STYLE, checks=["G1"], contract="strict")  # pyright: ignore[reportArgumentType]


def test_the_exit_status_follows_the_contract_judged(capsys: pytest.CaptureFixture[str]) -> None:
    target = "tests.conformance.test_conformance_levels:PI_STYLE"
    assert main(["run", target, "--checks", "G1", "H1"]) == 1
    assert "  pi: conformant; streamfns: non-conformant (G1, H1)" in capsys.readouterr().out
    assert main(["run", target, "--checks", "G1", "H1", "--contract", "pi"]) == 0
    out = capsys.readouterr().out
    assert "verdict: conformant" in out
    assert "streamfns: not judged (--contract pi)" in out


def test_every_check_states_its_level_in_the_listing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    rows = [line.split()[:2] for line in capsys.readouterr().out.splitlines()]
    levels = dict(rows)
    assert {levels[key] for key in ("G2", "N1", "A2", "T1", "H2", "C1", "S1", "X1")} == {"pi"}
    assert {levels[key] for key in ("G1", "G7", "C3", "R1", "L1", "L2", "D1", "X2")} == {"streamfns"}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "pkg:attr", "--exec", "node a.mjs", "--api", "x"], "either a target"),
        (["run", "--exec", "node a.mjs"], "--exec needs --api API"),
        (["run"], "give a target"),
        (["run", "--exec", "", "--api", "x"], "the adapter command is empty"),
        (["run", "--exec", "node a.mjs", "--api", "x", "--pool", "0"], "--pool must be from 1 to 32"),
    ],
)
def test_exec_usage_errors_are_told_in_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    assert len(err.strip().splitlines()) == 1
