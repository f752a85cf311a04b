"""The load suite on a few streams for a second: exact event counts through every built-in adapter
and the SDK, nothing leaked, and ``python -m bench load … --json`` passing its arguments through.
No timing is asserted (latency and CPU figures are printed, never checked here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench import load_bench
from streamfns._adapters import builtin_adapters

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
_APIS = set(builtin_adapters())  # every built-in adapter is driven


def test_every_adapter_and_the_sdk_receive_exactly_their_events_and_nothing_leaks() -> None:
    run = load_bench.measure(streams=4, rate=40, seconds=0.5)
    assert {figure.api for figure in run.figures} == _APIS
    assert len(run.figures) == len(_APIS)
    for figure in run.figures:
        assert (figure.stack, figure.streams, figure.expected) == ("ours", 4, 20)
        assert figure.events == 4 * 20, figure.api
        assert len(figure.latencies_ns) == 4 * 20
        assert figure.ok_streams == 4, figure.api
        assert figure.memory_kib_per_stream is not None  # from the tracemalloc pass
    assert run.sdk_tries, "the SDK ran"
    assert run.ours_tries[0] is run.figures[0]  # ours at the full load is the anthropic figure itself
    for tried in [*run.ours_tries, *run.sdk_tries]:  # halved only while a level is not sustained
        assert tried.events == tried.streams * 20
        assert tried.ok_streams == tried.streams
    assert {t.stack for t in run.sdk_tries} == {"sdk"}
    leaks = run.leaks
    assert (leaks.fds, leaks.tasks, leaks.server_connections, leaks.unfinished_responses) == (0, 0, 0, 0)
    assert leaks.failed_streams == 0
    lines = load_bench.report(run)
    assert lines[0].startswith("load: 4 streams × 40 events/s × 0.5 s per adapter")
    assert lines[-1].endswith("   ok")


def test_python_m_bench_load_passes_its_arguments_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    argv = ["load", "--streams", "2", "--rate", "50", "--seconds", "0.2", "--no-sdk", "--json", str(out)]
    done = subprocess.run(
        [sys.executable, "-m", "bench", *argv], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "load: 2 streams × 50 events/s × 0.2 s per adapter" in done.stdout
    document = json.loads(out.read_text(encoding="utf-8"))
    assert document["schema"] == 1
    assert {"date", "git_revision", "cpus", "cpu_model", "python", "rule"} <= set(document)
    (load,) = document["suites"]["load"]["load"]
    assert (load["streams"], load["rate"], load["seconds"]) == (2, 50, 0.2)
    assert {row["api"] for row in load["adapters"]} == _APIS
    assert all(row["events"] == 2 * 10 and row["ok_streams"] == 2 for row in load["adapters"])
    assert load["sdk_tries"] == []
    assert load["ours_tries"] == []
    assert all(row["memory_kib_per_stream"] is not None for row in load["adapters"])
    assert load["leaks"] == {
        "fds": 0,
        "tasks": 0,
        "server_connections": 0,
        "unfinished_responses": 0,
        "failed_streams": 0,
    }
