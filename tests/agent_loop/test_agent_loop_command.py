"""``python -m examples.agent_loop``: the agent loop from the shell, live, replayed and as the demo.

The command runs in a subprocess where it matters (the module entry point, the offline replay without
any network, the live path's real socket); every mistake is one ``error:`` line and status 2.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cassettes import library
from conformance.loopback import LoopbackServer, ReceivedRequest, Scripted
from examples.agent_loop.cli import PROG, demo, main
from examples.agent_loop.round_trips import ROUND_TRIPS, cassette_path

ROOT = Path(__file__).resolve().parents[2]
ROUND_TRIP = str(cassette_path("anthropic-messages"))


def _run(*args: str, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, sys.executable, "-m", "examples.agent_loop", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _offline_prefix() -> tuple[str, ...]:
    """``unshare -n`` (no network at all) where this machine allows it."""
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-n", "true"], capture_output=True, check=False).returncode == 0:
        return (unshare, "-n")
    return ()


def test_a_replay_prints_the_tool_call_the_result_and_the_answer_with_no_network() -> None:
    done = _run("--replay", ROUND_TRIP, prefix=_offline_prefix())
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "› What is 1234 * 5678?",
        "I'll work that out with the calculator.",
        '→ calculator({"expression": "1234 * 5678"})',
        "← 7006652",
        "1234 × 5678 = 7,006,652.",
        "2 turns · 1 tool call · ended stop · tokens in 1301 out 75 cache 0/0 · $0.001676",
    ]
    assert "\x1b[" not in done.stdout + done.stderr  # not a terminal: no colour, no progress


def test_a_recording_without_a_second_reply_ends_the_run_with_an_error_not_a_traceback() -> None:
    # One interaction holding two tool calls the demo agent does not have: the tools are answered
    # "not found", and the second request finds nothing left to replay.
    done = _run("--replay", "tl__text_and_2_tools_sonnet35", "Weather and time in San Francisco?")
    assert done.returncode == 1
    assert "✗ Tool get_weather not found" in done.stdout
    assert "✗ Tool get_time not found" in done.stdout
    assert "all 1 interactions were already played" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr
    assert done.stderr.splitlines() == [  # the recording stores no prompt: the task cannot be checked
        (
            f"{PROG}: warning: this recording stores no prompt, so nothing checks that it holds this task; "
            "its recorded replies are played back as they are"
        )
    ]


def test_a_replay_refuses_a_task_the_recording_does_not_hold(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--replay", ROUND_TRIP, "another task"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"{PROG}: error: this recording holds the task 'What is 1234 * 5678?', not 'another task': a replay "
        "only plays back the recorded replies (leave the task out, or run it live with --model)\n"
    )
    assert main(["--replay", ROUND_TRIP, "What is 1234 * 5678?"]) == 0  # the recorded task itself is replayed
    assert capsys.readouterr().err == ""


async def test_the_demo_replays_the_round_trip_of_every_api_and_sends_exactly_the_recorded_requests() -> None:
    out = io.StringIO()
    assert await demo(out)  # replayed with match="request": a follow-up that differs is not answered
    text = out.getvalue()
    headers = [line for line in text.splitlines() if line.startswith("== ")]
    assert headers == [
        f"== agent loop on {api}: a tool round trip (examples/agent_loop, replaying {api}.jsonl)"
        for api in sorted(ROUND_TRIPS)
    ]
    assert text.count("← 7006652\n") == len(ROUND_TRIPS)
    assert text.count("2 turns · 1 tool call · ended stop") == len(ROUND_TRIPS)


def _bad_arguments(tmp: Path) -> list[list[str]]:
    not_json = tmp / "notes.jsonl"
    not_json.write_text("this is not a cassette\n", encoding="utf-8")
    unknown_api = tmp / "unknown.jsonl"
    text = library.path("llma__text_haiku45").read_text(encoding="utf-8")
    unknown_api.write_text(text.replace('"api":"anthropic-messages"', '"api":"carrier-pigeon"', 1), encoding="utf-8")
    return [
        [],
        ["--replay", ROUND_TRIP, "--base-url", "http://127.0.0.1:9"],
        ["--model", "anthropic/claude-haiku-4-5"],
        ["--model", "nonsense", "task"],
        ["--model", "anthropic/no-such-model", "task"],
        ["--model", "anthropic/claude-haiku-4-5", "--base-url", "ftp://example.invalid", "task"],
        ["--model", "anthropic/claude-haiku-4-5", "--replay", ROUND_TRIP, "task"],
        ["--demo", "--replay", ROUND_TRIP],
        ["--replay", str(tmp / "missing.jsonl")],
        ["--replay", str(not_json)],
        ["--replay", str(unknown_api), "task"],
        ["--replay", "llma__text_haiku45"],  # a recording that stores no prompt, and no task given
        ["--replay", ROUND_TRIP, "What is 2 + 2?"],  # not the task the recording holds
        ["--max-tokens", "many", "--demo"],
    ]


def test_every_mistake_is_one_error_line_and_status_two(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for argv in _bad_arguments(tmp_path):
        assert main(argv) == 2, argv
        out, err = capsys.readouterr()
        assert "Traceback" not in out + err, argv
        errors = [line for line in err.splitlines() if "error:" in line]
        assert len(errors) == 1, (argv, err)
        assert errors[0].startswith(f"{PROG}: error: "), (argv, err)


def test_help_shows_examples(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert f"examples:\n  {PROG} --model " in capsys.readouterr().out


async def test_the_live_path_runs_against_a_loopback_server_with_the_key_from_the_environment() -> None:
    """``--model`` end to end (catalog, key lookup, real socket), pointed at loopback by --base-url."""
    replies = iter(ROUND_TRIPS["anthropic-messages"].replies)

    def respond(_request: ReceivedRequest) -> Scripted:
        return Scripted(chunks=[(0.0, chunk) for chunk in next(replies, ())])

    async with LoopbackServer(respond) as server:
        env = {**os.environ, "ANTHROPIC_API_KEY": "test-key", "NO_COLOR": "1"}
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "examples.agent_loop",
            "--model",
            "anthropic/claude-haiku-4-5",
            "--base-url",
            server.base_url,
            "What is 1234 * 5678?",
            cwd=ROOT,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=120)
        requests = list(server.requests)
    assert process.returncode == 0, stderr.decode()
    assert stdout.decode().splitlines()[2:5] == [
        '→ calculator({"expression": "1234 * 5678"})',
        "← 7006652",
        "1234 × 5678 = 7,006,652.",
    ]
    assert [request.headers["x-api-key"] for request in requests] == ["test-key", "test-key"]
    second = json.loads(requests[1].body)
    assert second["messages"][-1]["content"][0]["content"] == "7006652"
