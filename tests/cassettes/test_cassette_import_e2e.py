"""`cassettes import` end to end: the imported cassette replays with `streamfns replay`, serves the
conformance harness (its loopback server: not clock-blind, so not run beside other tests), and the
command reads a body from standard input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cassettes import library, load
from cassettes.cli import main
from conformance.cli import main as conformance_main
from streamfns.cli import main as streamfns_main

pytestmark = pytest.mark.slow  # the harness's loopback runs and a subprocess

ROOT = Path(__file__).resolve().parents[2]
TEXT = "llma__text_haiku45"
LINES = "langchaingo__TestClient_GenerateChatStream_gemma3-1b"  # ollama-chat: JSON lines


def _body(name: str) -> bytes:
    return library.load(name).interactions[0].response.body


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_an_imported_body_replays_with_streamfns_replay_and_serves_the_conformance_harness(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = tmp_path / "reply.sse"
    body.write_bytes(_body(TEXT))
    recordings = tmp_path / "recordings"
    status, out, err = _cli(
        capsys, "import", str(body), "--api", "anthropic-messages", "-o", str(recordings / "text.jsonl")
    )
    assert (status, err) == (0, "")
    assert "api=anthropic-messages model=claude-haiku-4-5-20251001 status=200, 7 chunks (event)" in out
    assert streamfns_main(["replay", str(recordings / "text.jsonl")]) == 0
    assert "stop reason : stop" in capsys.readouterr().out
    argv = ["run", "streamfns.anthropic:ADAPTER", "--cassettes", str(recordings), "--checks", "P1", "D1", "T1", "M1"]
    assert conformance_main(argv, program=False) == 0
    report = capsys.readouterr().out
    assert "recordings: text\n  text: text, by its file name text.jsonl" in report, report
    assert "verdict: conformant (4 pass" in report, report


def test_an_imported_json_lines_body_serves_the_harness_cut_at_its_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = tmp_path / "reply.ndjson"
    body.write_bytes(_body(LINES))
    recordings = tmp_path / "recordings"
    argv = ["import", str(body), "--api", "ollama-chat", "-o", str(recordings / "text.jsonl")]
    assert _cli(capsys, *argv)[0] == 0
    argv = ["run", "streamfns.ollama:ADAPTER", "--cassettes", str(recordings), "--checks", "P1", "T1", "M1"]
    assert conformance_main(argv, program=False) == 0
    report = capsys.readouterr().out
    assert "recordings: text" in report, report
    assert "verdict: conformant (3 pass" in report, report


def test_python_dash_m_cassettes_imports_a_body_from_standard_input(tmp_path: Path) -> None:
    out = tmp_path / "from_stdin.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "cassettes", "import", "-", "--api", "anthropic-messages", "-o", str(out)],
        input=_body(TEXT),
        capture_output=True,
        cwd=ROOT,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert load(out).interactions[0].response.body == _body(TEXT)
