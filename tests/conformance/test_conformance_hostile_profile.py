"""A target's wire profile is the adapter's code: what it raises, returns wrongly, or hangs on is
reported as the adapter's failure, within the run's bound — never a crash, never a harness error."""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any

import pytest

import conformance
from conformance.watchdog import Limits
from normalize.wire import Ending, FrameView
from tests.conformance._framed import ndjson_target

pytestmark = pytest.mark.slow

_FORGOTTEN = threading.Event()


def _target(**fields: Any) -> conformance.Target:
    target = ndjson_target()
    assert target.profile is not None
    return dataclasses.replace(target, profile=dataclasses.replace(target.profile, **fields))


def _raises(exc: BaseException) -> Ending:
    def strip(frame: FrameView) -> None:
        raise exc

    return Ending('"done": true', strip)


@pytest.mark.parametrize("exc", [ZeroDivisionError("its own bug"), SystemExit(3), KeyboardInterrupt()])
async def test_a_strip_function_that_raises_fails_the_checks_that_needed_it(exc: BaseException) -> None:
    report = await conformance.run(_target(ending=_raises(exc)), checks=["P1", "T1", "M4", "C1", "R2"])
    statuses = {result.id: result.status for result in report.results}
    assert statuses == {"P1": "pass", "T1": "fail", "M4": "fail", "C1": "fail", "R2": "fail"}, report.to_text()
    [m4] = [result for result in report.results if result.id == "M4"]
    assert f"the wire profile of api 'ndjson-chat': ending.strip raised {type(exc).__name__}" in (m4.message or "")
    assert report.verdict == "non-conformant"


async def test_a_function_that_returns_the_wrong_type_is_named() -> None:
    def wrong(status: int, message: str) -> Any:
        return b'{"error": "raw bytes, not an ErrorSample"}'

    def text_instead_of_bytes(frame: FrameView) -> Any:
        return "a str" if frame.fields().get("done") else None

    report = await conformance.run(
        _target(error_body=wrong, ending=Ending("done", text_instead_of_bytes)), checks=["H1", "M4"]
    )
    messages = {result.id: result.message or "" for result in report.results}
    assert "error_body returned a bytes, not an ErrorSample" in messages["H1"]
    assert "ending.strip returned a str, not None, DROP or bytes" in messages["M4"]
    assert {result.status for result in report.results} == {"fail"}


async def test_a_profile_that_hangs_is_bounded_like_the_adapter() -> None:
    def stuck(frame: FrameView) -> None:
        _FORGOTTEN.wait(60)  # blocks the worker (without holding the interpreter) until the session ends

    limits = Limits(scenario_deadline_s=0.5, run_budget_s=2.0)
    started = time.monotonic()
    report = await conformance.run(_target(ending=Ending("done", stuck)), checks=["P1", "M4"], limits=limits)
    took = time.monotonic() - started
    assert took < limits.bound_s, f"the run took {took:.1f} s, over its bound of {limits.bound_s:g} s"
    assert report.interrupted is not None
    assert "planning the scenarios with the wire profile" in report.interrupted
    assert {result.id: result.status for result in report.results} == {"P1": "fail", "M4": "fail"}


def test_a_profile_of_the_wrong_shape_or_for_another_api_is_refused_before_the_run() -> None:
    with pytest.raises(TypeError, match=r"ending is a object, not a normalize\.wire\.Ending"):
        conformance.run_sync(_target(ending=object()))
    with pytest.raises(TypeError, match="recordings must map features"):
        conformance.run_sync(_target(recordings={"everything": "text"}))
    with pytest.raises(
        ValueError, match="the wire profile is for api 'other', but the capabilities declare api 'ndjson-chat'"
    ):
        conformance.run_sync(_target(api="other"))
