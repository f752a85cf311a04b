"""Where a run's structured results go: ``python -m bench --json PATH`` collects them here.

Suites report through :func:`record` (``bench._wire.compare`` and ``judge_cost`` do it for them), under
the suite that ``bench.__main__`` says is running; when nothing collects, recording costs nothing.
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["collecting", "machine_info", "record", "results", "start", "suite"]

_results: dict[str, dict[str, list[dict[str, Any]]]] | None = None
_suite = "other"


def start() -> None:
    """Begin collecting (a run asked for ``--json``)."""
    global _results
    _results = {}


def collecting() -> bool:
    """Whether this run collects results."""
    return _results is not None


def suite(name: str) -> None:
    """Name the suite whose results follow."""
    global _suite
    _suite = name


def record(section: str, entry: dict[str, Any]) -> None:
    """Add ``entry`` to ``section`` (``comparisons``, ``ratios``, ``load``…) of the running suite."""
    if _results is not None:
        _results.setdefault(_suite, {}).setdefault(section, []).append(entry)


def results() -> dict[str, dict[str, list[dict[str, Any]]]]:
    """What was collected, per suite."""
    return dict(_results or {})


def _git_revision() -> str:
    root = Path(__file__).resolve().parents[1]
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], cwd=root, capture_output=True, text=True, check=False
        )
    except OSError:
        return "unknown"
    return done.stdout.strip() or "unknown"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_info() -> dict[str, Any]:
    """The machine, interpreter, date and revision a result was measured on."""
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "git_revision": _git_revision(),
        "cpus": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
    }
