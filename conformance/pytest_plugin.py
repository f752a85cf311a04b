"""The ``streamfns_conformance`` pytest plugin (loaded through the ``pytest11`` entry point).

It is inert unless used: it imports nothing of the harness and only adds one option,
``--conformance-report-dir DIR``, which makes every
:class:`~conformance.pytest_support.StreamFnConformance` test class also write its JSON and JUnit
reports to DIR (for CI artefacts). The tests themselves come from subclassing that base class.
"""

from __future__ import annotations

import pytest

__all__ = ["pytest_addoption"]


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register ``--conformance-report-dir``."""
    group = parser.getgroup("streamfns-conformance")
    group.addoption(
        "--conformance-report-dir",
        dest="conformance_report_dir",
        default=None,
        metavar="DIR",
        help="write each StreamFnConformance class's JSON and JUnit conformance reports to DIR",
    )
