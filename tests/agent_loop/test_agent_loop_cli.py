"""The ``streamfns`` command: the catalog table, replays, help, and clean failures.

Every sub-command is run with bad arguments: each mistake is one ``error:`` line on stderr and a
non-zero status, never a traceback. The console script itself runs in a subprocess where it matters
(the closed pipe). The agent loop's own command is tested in ``test_agent_loop_command.py``.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import streamfns
from cassettes import library
from examples.agent_loop import Agent, AgentTool, OnUpdate
from examples.agent_loop.render import PROGRESS_WIDTH, TerminalRenderer
from examples.agent_loop.round_trips import cassette_path
from normalize import AbortSignal, Context, ImageContent, TextContent
from streamfns.cli import main
from streamfns.faux import FauxProvider, faux_message, faux_text, faux_tool_call
from streamfns.render import format_summary, one_line, render_stream, use_color

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = str(Path(sys.executable).parent / "streamfns")
ROUND_TRIP = str(cassette_path("anthropic-messages"))


def _run(
    *args: str, env: dict[str, str] | None = None, prefix: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, SCRIPT, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


def test_a_closed_pipe_ends_quietly() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will read: the first write fails with EPIPE
    try:
        done = subprocess.run(
            [SCRIPT, "models"], stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60, check=False
        )
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (0, "")


def test_models_for_an_unknown_provider_is_one_line_from_the_console_script() -> None:
    done = _run("models", "no-such-provider")
    assert done.returncode == 2
    assert done.stderr.startswith("streamfns: error: unknown provider 'no-such-provider'; known providers: ")
    assert done.stderr.count("\n") == 1


def _main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        status = main(list(argv))
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def _bad_arguments(tmp: Path) -> list[list[str]]:
    not_json = _write(tmp / "notes.jsonl", "this is not a cassette\n")
    unknown_api = tmp / "unknown.jsonl"
    text = library.path("llma__text_haiku45").read_text(encoding="utf-8")
    _write(unknown_api, text.replace('"api":"anthropic-messages"', '"api":"carrier-pigeon"', 1))
    return [
        [],
        ["bogus"],
        ["chat"],
        ["chat", "--model", "nonsense", "hi"],
        ["chat", "--model", "anthropic/no-such-model", "hi"],
        ["chat", "--model", "no-such-provider/gpt-5", "hi"],
        ["chat", "--model", "anthropic/claude-haiku-4-5", "--max-tokens", "many", "hi"],
        ["chat", "--model", "anthropic/claude-haiku-4-5", "--base-url", "ftp://example.invalid", "hi"],
        ["agent", "--replay", ROUND_TRIP],  # the agent loop is an example, not a command of the package
        ["models", "no-such-provider"],
        ["models", "--bogus"],
        ["replay"],
        ["replay", str(tmp / "missing.jsonl")],
        ["replay", "no-such-recording"],
        ["replay", not_json],
        ["replay", str(unknown_api)],
        ["replay", "--timing", "slow", ROUND_TRIP],
        ["replay", "--events", "--json", ROUND_TRIP],
        ["demo", "--bogus"],
        ["conformance"],
        ["conformance", "bogus"],
        ["conformance", "run", "no.such.module:TARGET"],
        ["conformance", "run", "conformance.targets:faux", "--report", str(Path(not_json) / "report.json")],
        ["conformance", "run", "conformance.targets:faux", "--format", "xml"],
        ["conformance", "explain", "Z9"],
    ]


def test_every_command_answers_bad_arguments_with_one_line_and_a_failure_status(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for argv in _bad_arguments(tmp_path):
        status, out, err = _main(capsys, *argv)
        assert status != 0, argv
        assert "Traceback" not in out + err, argv
        errors = [line for line in err.splitlines() if "error:" in line]
        assert len(errors) == 1, (argv, err)
        assert errors[0].startswith("streamfns"), (argv, err)  # the harness too names the program typed


def test_a_run_that_fails_reports_it_and_exits_one(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)  # nothing is sent without a key
    status, out, _err = _main(capsys, "chat", "--model", "anthropic/claude-haiku-4-5", "hi")
    assert status == 1
    assert "error       : [auth] no Anthropic API key" in out


@pytest.mark.parametrize(
    "command",
    [
        None,
        "chat",
        "models",
        "replay",
        "demo",
        "conformance",
        "conformance run",
        "conformance list",
        "conformance explain",
    ],
)
def test_help_everywhere_with_examples(capsys: pytest.CaptureFixture[str], command: str | None) -> None:
    status, out, _err = _main(capsys, *(command.split() if command else []), "--help")
    assert status == 0
    assert "examples:\n  streamfns " in out


def test_models_table_lists_the_whole_catalog_with_prices_and_limits(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _err = _main(capsys, "models")
    assert status == 0
    lines = out.splitlines()
    assert lines[0].split() == [
        "model",
        "api",
        "context",
        "max",
        "out",
        "in",
        "$/M",
        "out",
        "$/M",
        "cache",
        "r",
        "$/M",
        "cache",
        "w",
        "$/M",
        "reasoning",
        "input",
        "aliases",
    ]
    models = streamfns.list_models()
    assert len(lines) == 1 + len(models)
    for model, line in zip(models, lines[1:], strict=True):
        cells = line.split()
        assert cells[0] == f"{model.provider}/{model.id}"
        assert cells[1] == model.api
        assert cells[2:4] == [f"{model.context_window:,}", f"{model.max_tokens:,}"]
        assert cells[-3:-1] == ["yes" if model.reasoning else "no", "+".join(model.input)]
        aliases = [] if cells[-1] == "-" else cells[-1].split(",")
        for alias in aliases:  # each one resolves to this very model
            assert streamfns.get_model(model.provider, alias) == model
    sonnet = next(line for line in lines if line.startswith("anthropic/claude-sonnet-4-5-20250929 "))
    assert sonnet.split()[-1] == "claude-sonnet-4-5"


def test_models_json_is_the_catalog(capsys: pytest.CaptureFixture[str]) -> None:
    provider = streamfns.list_models()[0].provider
    status, out, _err = _main(capsys, "models", provider, "--json")
    assert status == 0
    assert json.loads(out) == [model.to_json() for model in streamfns.list_models(provider)]


def test_replay_renders_a_recording_through_its_api_adapter(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _err = _main(capsys, "replay", "tl__text_and_2_tools_sonnet35")
    assert status == 0
    assert '[tool call] get_weather({"location": "San Francisco, CA", "unit": "celsius"})' in out
    assert "stop reason : toolUse (vendor: tool_use)" in out
    assert "usage       : input 506, output 153, cache read 0, cache write 0, total 659, cost $0.003813" in out


def test_replay_json_is_every_event_then_the_final_message(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _err = _main(capsys, "replay", ROUND_TRIP, "--json")
    assert status == 0
    lines = [json.loads(line) for line in out.splitlines()]
    # Per recorded interaction: its events (each with a "type"), then its final message on a line of
    # its own (with "role"), which is the message the terminal event carries.
    finals = [index for index, line in enumerate(lines) if "role" in line]
    assert finals == [10, len(lines) - 1]
    for final in finals:
        assert lines[final - 1]["type"] == "done"
        assert lines[final] == lines[final - 1]["message"]
        assert all("type" in line for line in lines[: finals[0]] + lines[finals[0] + 1 : finals[1]])
    assert [line["type"] for line in lines if "type" in line].count("start") == 2
    assert lines[-1]["role"] == "assistant"
    assert lines[-1]["content"] == [{"type": "text", "text": "1234 × 5678 = 7,006,652."}]


def test_replay_events_lists_one_line_per_event(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _err = _main(capsys, "replay", "llma__text_haiku45", "--events")
    assert status == 0
    assert out.splitlines()[0] == "start"
    assert any(line.startswith('text_delta      [0] "') for line in out.splitlines())
    assert "done        reason=stop" in out


def test_colour_only_on_a_terminal_and_never_with_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_color(Terminal())
    assert not use_color(io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_color(Terminal())
    out = io.StringIO()
    renderer = TerminalRenderer(out, color=True)
    renderer.summary()
    assert TerminalRenderer(io.StringIO(), color=False)._style["red"] == ""  # pyright: ignore[reportPrivateUsage]
    assert renderer._style["red"] == "\x1b[31m"  # pyright: ignore[reportPrivateUsage]


async def test_model_text_cannot_drive_the_terminal() -> None:
    """Control sequences in a reply, a tool name or a tool result are shown escaped, never sent raw."""
    hostile = "\x1b]0;owned\x07\x1b[2J\rgone"
    provider = FauxProvider(token_size=(1, 2))
    provider.set_responses(
        [faux_message([faux_text(hostile), faux_tool_call(hostile, {"x": hostile})], stop_reason="toolUse")] * 2
        + [faux_message(hostile)]
    )
    out = io.StringIO()
    agent = Agent(provider.model(), stream_fn=provider)
    await agent.run(hostile, TerminalRenderer(out, color=False))
    summary = await render_stream(provider(provider.model(), Context()), out, color=False)
    out.write(format_summary(summary))
    text = out.getvalue()
    assert not any(char in text for char in "\x1b\x07\r"), repr(text)
    assert "\\x1b]0;owned\\x07" in text


def test_one_line_flattens_escapes_and_cuts() -> None:
    assert one_line("step 1\n  of\t3") == "step 1 of 3"
    assert one_line("\x1b[2Jgone\r") == "\\x1b[2Jgone"
    assert one_line("x" * 100, 10) == "x" * 9 + "…"
    assert len(one_line("y" * 1000)) == 80
    assert (one_line("exactly", 7), one_line("", 5), one_line("abc", 1)) == ("exactly", "", "…")


def _progress_agent(updates: list[str]) -> Agent:
    async def work(_id: str, _args: dict[str, Any], _signal: AbortSignal, on_update: OnUpdate) -> str:
        for update in updates:
            on_update(update)
        on_update([TextContent(text="with a picture:"), ImageContent(data="eA==", mime_type="image/png")])
        return "done"

    provider = FauxProvider()
    provider.set_responses([faux_message([faux_tool_call("work", {})], stop_reason="toolUse"), faux_message("Ok.")])
    tool = AgentTool(name="work", description="work", parameters={"type": "object"}, execute=work)
    return Agent(provider.model(), tools=[tool], stream_fn=provider)


async def test_tool_progress_is_one_dim_line_per_update_off_a_terminal() -> None:
    out = io.StringIO()
    agent = _progress_agent(["step 1\nof 3", "\x1b]0;owned\x07" + "z" * 200])
    await agent.run("Go", TerminalRenderer(out, color=False))
    lines = out.getvalue().splitlines()
    progress = [line for line in lines if line.startswith("⋯ ")]
    assert progress == [
        "⋯ work: step 1 of 3",
        "⋯ work: \\x1b]0;owned\\x07" + "z" * (PROGRESS_WIDTH - 1 - len("\\x1b]0;owned\\x07")) + "…",
        "⋯ work: with a picture: [image]",
    ]
    assert lines.index("⋯ work: with a picture: [image]") < lines.index("← done")


async def test_tool_progress_replaces_the_status_line_on_a_terminal_and_stays_out_of_the_output() -> None:
    out, status = io.StringIO(), io.StringIO()
    agent = _progress_agent(["step 1", "step 2"])
    await agent.run("Go", TerminalRenderer(out, color=False, progress=status))
    assert "⋯" not in out.getvalue()
    assert "step" not in out.getvalue()
    shown = status.getvalue()
    assert "\r… work: step 1" in shown
    assert "\r\x1b[2K\r… work: step 2" in shown, "each update replaces the line before it"
    assert "\r\x1b[2K\r… work: with a picture: [image]" in shown
    assert shown.endswith("\r\x1b[2K"), "the status is erased once output arrives"
