"""The pytest front end: subclass :class:`StreamFnConformance` and get one test per check.

    from conformance.pytest_support import StreamFnConformance
    from my_adapter import ADAPTER                        # its streamfns.kit.Adapter declaration

    class TestMyAdapter(StreamFnConformance):
        target = ADAPTER                                  # its StreamFn, profile and recordings, every feature

    from conformance import Capabilities

    class TestMyStreamFn(StreamFnConformance):
        target = staticmethod(make_my_stream_fn)          # a StreamFn or a zero-argument factory
        capabilities = Capabilities(api="my-api", tool_calls=True)
        cassettes = "tests/cassettes/my_adapter"          # optional: your own recordings
        xfail = {"C3": "the SDK we wrap has no idle timeout yet"}   # optional, reasons required

The harness runs once per class (a class-scoped fixture); each ``test_check[ID]`` then reports its
check: ``pass`` passes, ``fail``/``harness-error`` fail with the evidence and the troubleshooting text,
``unsupported`` skips, ``xfail`` becomes ``pytest.xfail(reason)``. With the ``streamfns_conformance``
plugin loaded, ``--conformance-report-dir DIR`` also writes each class's JSON and JUnit reports there.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest

from conformance.checks import CHECK_IDS
from conformance.report import Level, Report
from conformance.runner import run_sync
from conformance.target import Capabilities, CassetteSource, Target
from conformance.text import printable
from conformance.watchdog import Limits
from streamfns.kit import Adapter

__all__ = ["StreamFnConformance"]


def _explain(report: Report, check_id: str) -> str:
    result = report.result(check_id)
    lines = [f"{check_id} {result.title}: {printable(result.message)}"]
    lines += [f"  - {printable(str(item))}" for item in result.evidence[:10]]
    if len(result.evidence) > 10:
        lines.append(f"  … and {len(result.evidence) - 10} more")
    lines += ["", "Troubleshooting: " + " ".join(result.troubleshooting.split())]
    return "\n".join(lines)


class StreamFnConformance:
    """Base class for a conformance test class (see the module docstring).

    Class attributes: ``target`` (required; wrap a plain function in ``staticmethod``),
    ``capabilities`` (required unless ``target`` is a :class:`~conformance.Target` or an adapter's
    :class:`~streamfns.kit.Adapter` declaration, which carry theirs), ``cassettes``,
    ``xfail`` (check id → written reason), ``checks`` (ids to run; default all) and ``limits``.
    """

    target: ClassVar[Callable[..., Any] | Target | Adapter]
    capabilities: ClassVar[Capabilities | None] = None
    cassettes: ClassVar[CassetteSource | None] = None
    xfail: ClassVar[Mapping[str, str]] = {}
    checks: ClassVar[tuple[str, ...] | None] = None
    limits: ClassVar[Limits | None] = None
    #: The contract judged: ``"streamfns"`` (every check) or ``"pi"`` (only the shared one).
    contract: ClassVar[Level] = "streamfns"

    @pytest.fixture(scope="class")
    @classmethod
    def conformance_report(cls, request: pytest.FixtureRequest) -> Report:
        """Run the harness once for this class."""
        report = run_sync(
            cls.target,
            capabilities=cls.capabilities,
            cassettes=cls.cassettes,
            checks=cls.checks,
            xfail=dict(cls.xfail),
            limits=cls.limits,
            contract=cls.contract,
        )
        folder: str | None = request.config.getoption("conformance_report_dir", default=None)
        if folder:
            out = Path(folder)
            out.mkdir(parents=True, exist_ok=True)
            stem = f"{request.node.nodeid.replace('/', '.').replace('::', '.')}"
            (out / f"{stem}.json").write_text(json.dumps(report.to_json(), indent=2), encoding="utf-8")
            (out / f"{stem}.xml").write_text(report.to_junit(), encoding="utf-8")
        return report

    @pytest.mark.parametrize("check_id", CHECK_IDS)
    def test_check(self, check_id: str, conformance_report: Report) -> None:
        """One conformance check (its id is the test parameter)."""
        if check_id not in conformance_report.ids("pass", "fail", "unsupported", "xfail", "harness-error"):
            pytest.skip(f"{check_id} was not run (not selected with checks=..., or it judges only adapter processes)")
        result = conformance_report.result(check_id)
        if result.status == "pass":
            return
        if result.status == "unsupported":
            pytest.skip(f"unsupported: {result.reason}")
        if result.status == "xfail":
            pytest.xfail(result.reason)
        pytest.fail(_explain(conformance_report, check_id), pytrace=False)
