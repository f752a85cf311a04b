"""The adapter-process examples, judged out of process exactly as a user runs them:
``streamfns conformance run --exec COMMAND --api anthropic-messages``.

The Python child always runs. The Node adapter runs where ``node`` is installed (skipped, saying so,
where it is not). pi-ai's own stream function runs only where an install of pi-ai 0.73.1 is named by
``STREAMFNS_PI_AI_NODE_PATH`` (installing it would mean the npm registry, and tests send to loopback
only): it checks that the pi-level verdict names exactly the promises pi-ai breaks.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import conformance

ROOT = Path(__file__).resolve().parents[2]
STREAMFNS = str(Path(sys.executable).parent / "streamfns")
NODE = shutil.which("node")
PI_AI = os.environ.get("STREAMFNS_PI_AI_NODE_PATH")

pytestmark = pytest.mark.slow


def _judge(command: str, api: str, tmp_path: Path, *extra: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    report_file = tmp_path / "report.json"
    argv = [STREAMFNS, "conformance", "run", "--exec", command, "--api", api, "--format", "json"]
    done = subprocess.run(
        [*argv, "--report", str(report_file), *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env=env,
    )
    assert done.returncode in (0, 1), done.stdout + done.stderr
    report: dict[str, Any] = json.loads(report_file.read_text(encoding="utf-8"))
    report["stdout"] = done.stdout
    report["returncode"] = done.returncode
    return report


def _plainly_conformant(report: dict[str, Any]) -> None:
    statuses = {result["id"]: result["status"] for result in report["results"]}
    assert set(statuses) == set(conformance.CHECK_IDS), "every check, X1 and X2 included"
    assert set(statuses.values()) == {"pass"}, report["stdout"]
    assert report["verdicts"] == {"pi": "conformant", "streamfns": "conformant"}
    assert "  pi: conformant; streamfns: conformant" in report["stdout"]
    assert report["returncode"] == 0


def test_the_python_child_is_conformant_out_of_process(tmp_path: Path) -> None:
    command = f"{sys.executable} examples/process_adapter/python_adapter.py"
    _plainly_conformant(_judge(command, "anthropic-messages", tmp_path))


@pytest.mark.skipif(NODE is None, reason="node is not installed: the Node example adapter is not run")
def test_the_node_example_adapter_is_conformant(tmp_path: Path) -> None:
    _plainly_conformant(
        _judge("node examples/process_adapter/node/anthropic_adapter.mjs", "anthropic-messages", tmp_path)
    )


@pytest.mark.skipif(NODE is None, reason="node is not installed: the Node example adapter is not run")
def test_the_node_example_adapter_takes_the_abort_as_a_signal_too(tmp_path: Path) -> None:
    command = "node examples/process_adapter/node/anthropic_adapter.mjs"
    report = _judge(command, "anthropic-messages", tmp_path, "--abort", "signal", "--checks", "A1", "A2", "N2", "X1")
    assert {result["id"]: result["status"] for result in report["results"]} == dict.fromkeys(
        ("A1", "A2", "N2", "X1"), "pass"
    ), report["stdout"]


#: What pi-ai 0.73.1 does against its own contract (pi level), per api: success from a 200 that is
#: not a stream (H2) and from a reset (C1), the key quoted back in errorMessage (S1); on chat
#: completions also success from a body cut before [DONE] (T1, M4, and R2 where output had started)
#: and a cut tool call reaching stop with repaired arguments (G6).
PI_AI_BREAKS = {
    "anthropic-messages": ["H2", "C1", "S1"],
    "openai-completions": ["G6", "T1", "M4", "H2", "C1", "R2", "S1"],
}


@pytest.mark.skipif(PI_AI is None, reason="set STREAMFNS_PI_AI_NODE_PATH to an install of pi-ai 0.73.1 to run this")
@pytest.mark.skipif(NODE is None, reason="node is not installed")
@pytest.mark.parametrize("api", sorted(PI_AI_BREAKS))
def test_pi_ai_gets_a_pi_verdict_naming_exactly_the_promises_it_breaks(api: str, tmp_path: Path) -> None:
    env = {**os.environ, "NODE_PATH": str(PI_AI)}
    command = "node examples/process_adapter/pi_ai/adapter.mjs"
    full = _judge(command, api, tmp_path, env=env)
    assert full["failing"]["pi"] == PI_AI_BREAKS[api], full["stdout"]
    pi_only = _judge(command, api, tmp_path, "--contract", "pi", env=env)
    assert pi_only["failing"] == {"pi": PI_AI_BREAKS[api]}, pi_only["stdout"]
    assert pi_only["verdicts"]["streamfns"] is None
