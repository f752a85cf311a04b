"""The harness catches each defect of the deliberately broken adapter, and only that defect.

The broken adapter wraps ``streamfns.anthropic.stream_anthropic``. Without any defect (the control
run) the harness flags nothing; each defect must be flagged by exactly its expected check ids.
"""

from __future__ import annotations

import dataclasses

import pytest

import conformance
from streamfns.anthropic import ADAPTER
from tests.conformance._broken import BrokenAdapter, Defects

pytestmark = pytest.mark.slow

#: The Anthropic adapter as its declaration gives it to the harness.
ANTHROPIC = conformance.Target.from_adapter(ADAPTER)

#: Shorter bounds than the defaults: the defects make many scenarios wait for a timeout.
FAST = conformance.Limits(idle_timeout_s=1.0, stall_timeout_s=0.3, grace_s=0.3, scenario_deadline_s=4.0)

#: defect → the checks that must flag it (and why, where it is not obvious).
EXPECTED: dict[str, set[str]] = {
    "raises_on_500": {"N2", "H1"},
    # EOF taken for success: missing marker (M4), cut bodies (T1, with a tool call passed off as
    # complete: G6), an empty 200 (H2) and an EOF after output (R2) all end `done`.
    "done_on_truncation": {"G6", "T1", "M4", "H2", "R2"},
    "leaks_response": {"L1"},
    "ignores_abort": {"A1", "A2"},
    # A1 wants exactly start+error; R1 counts one start across the retry.
    "double_start": {"G1", "A1", "R1"},
    "invents_tool_arguments": {"G6"},
}


def harness(defects: Defects) -> conformance.Report:
    # The harness awaits the adapter's aclose() after the last scenario, in the loop it ran in.
    return conformance.run_sync(BrokenAdapter(defects), capabilities=ANTHROPIC.capabilities, limits=FAST)


@pytest.fixture(scope="module")
def baseline() -> conformance.Report:
    return harness(Defects())


def test_without_defects_the_wrapper_is_conformant(baseline: conformance.Report) -> None:
    assert baseline.failing == [], baseline.to_text()
    assert baseline.ids("unsupported", "harness-error") == [], baseline.to_text()
    assert baseline.verdict == "conformant"


def test_every_defect_is_covered() -> None:
    assert set(EXPECTED) == {field.name for field in dataclasses.fields(Defects)}


@pytest.mark.parametrize("defect", sorted(EXPECTED))
def test_each_defect_is_flagged_by_exactly_its_checks(defect: str, baseline: conformance.Report) -> None:
    report = harness(Defects(**{defect: True}))
    assert baseline.failing == []
    assert report.verdict == "non-conformant"
    assert set(report.failing) == EXPECTED[defect], report.to_text()
    assert report.ids("harness-error") == [], report.to_text()
