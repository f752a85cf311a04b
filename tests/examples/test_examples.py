"""The examples are part of the product: each runs here exactly as a user would run it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import conformance
from conformance.checks import PROCESS_ONLY

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.parametrize(
    "spec",
    [
        "examples.compatible_chat.conformance:TARGET",  # a target: it borrows the chat-completions profile
        "examples.ndjson_chat:ADAPTER",  # the declaration alone: its profile and its own recordings
    ],
)
def test_the_example_adapter_passes_every_check_from_the_command_line(spec: str, tmp_path: Path) -> None:
    """The third-party adapters written on the public kit (server-sent events; JSON lines), through
    ``streamfns conformance run``: a plain verdict, nothing unsupported."""
    report_file = tmp_path / "report.json"
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "streamfns"),
            "conformance",
            "run",
            spec,
            "--format",
            "json",
            "--report",
            str(report_file),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "verdict: conformant (33 pass" in done.stdout, done.stdout
    report = json.loads(report_file.read_text(encoding="utf-8"))
    statuses = {result["id"]: result["status"] for result in report["results"]}
    assert set(statuses) == set(conformance.CHECK_IDS) - PROCESS_ONLY  # X1, X2: only for adapter processes
    assert set(statuses.values()) == {"pass"}, statuses


@pytest.mark.parametrize("example", ["compatible_chat", "ndjson_chat"])
def test_the_example_adapter_uses_only_the_public_kit_and_stays_small(example: str) -> None:
    source = (ROOT / "examples" / example / "adapter.py").read_text(encoding="utf-8")
    imports = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
    ours = [line for line in imports if "streamfns" in line or "normalize" in line]
    assert ours == ["import normalize as nz", "from streamfns import kit"], ours
    assert len(source.splitlines()) <= 110, "an adapter on the kit stays about a hundred lines"
