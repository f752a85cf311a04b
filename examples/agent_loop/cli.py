"""The agent loop from the shell, with the two demo tools (a calculator and a clock).

    python -m examples.agent_loop --model anthropic/claude-haiku-4-5 "What is 17 * 23?"   live
    python -m examples.agent_loop --replay examples/agent_loop/cassettes/anthropic-messages.jsonl
    python -m examples.agent_loop --demo                     every bundled round trip, offline

``--model`` calls the provider (its key from the environment, e.g. ``ANTHROPIC_API_KEY``);
``--replay`` plays a multi-turn recording offline, answering each request the loop sends from it;
``--demo`` replays the recording of every wire api in ``cassettes/`` (what ``make demo`` shows after
``streamfns demo``). It runs from a clone of the repository: the examples are not part of the
installed package. A mistake in the arguments is one ``error:`` line on stderr and exit status 2 —
among them a task given to ``--replay`` that is not the one the recording holds (a replay can only play
back the recorded replies; a recording that stores no prompt is replayed with a ``warning:`` line); a
run whose last reply ended in an error exits 1; an interrupt exits 130.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from typing import TextIO

from cassettes import CassetteError, load
from examples.agent_loop.demo_tools import DEMO_SYSTEM_PROMPT, DEMO_TOOLS
from examples.agent_loop.loop import Agent
from examples.agent_loop.render import TerminalRenderer
from examples.agent_loop.round_trips import PROMPT, ROUND_TRIPS, cassette_path
from normalize import THINKING_LEVELS, Model, StreamOptions
from streamfns.catalog import model_from_spec
from streamfns.demo import load_cassette, model_for_cassette, replay_client
from streamfns.render import is_terminal, use_color

__all__ = ["PROG", "demo", "main"]

#: How the command is typed (and how its error lines begin).
PROG = "python -m examples.agent_loop"
_FAILED = ("error", "aborted")


class UsageError(Exception):
    """A mistake in how the command was called: one line, exit status 2."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Run the example agent loop with a calculator and a clock tool: live with --model, "
        "offline with --replay or --demo.",
        epilog="examples:\n"
        f'  {PROG} --model anthropic/claude-haiku-4-5 "What is 1234 * 5678, and what time is it in Tokyo?"\n'
        f"  {PROG} --replay examples/agent_loop/cassettes/anthropic-messages.jsonl\n"
        f"  {PROG} --demo",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--model", help="provider/model-id to run live, e.g. anthropic/claude-haiku-4-5")
    source.add_argument("--replay", metavar="CASSETTE", help="a multi-turn recording to replay offline")
    source.add_argument("--demo", action="store_true", help="replay every bundled round trip, offline")
    parser.add_argument("--base-url", default=None, help="send requests here instead of the catalog's; with --model")
    parser.add_argument("--reasoning", choices=THINKING_LEVELS, default=None, help="thinking level")
    parser.add_argument("--max-tokens", type=int, default=None, help="output token limit per reply")
    parser.add_argument(
        "task", nargs="?", help="what to do (with --replay: the recorded prompt, the only task a replay can answer)"
    )
    return parser


def _progress() -> TextIO | None:
    """Where to show what the agent waits for: stderr, when it is a terminal."""
    return sys.stderr if is_terminal(sys.stderr) else None


def _live_model(spec: str, base_url: str | None) -> Model:
    try:
        return model_from_spec(spec, base_url=base_url)
    except ValueError as exc:  # the catalog's message names the close ids
        raise UsageError(str(exc)) from None


async def _run(agent: Agent, task: str, renderer: TerminalRenderer) -> None:
    try:
        await agent.run(task, renderer)
    except asyncio.CancelledError:  # Ctrl-C: the reply in flight ends aborted, not abandoned
        agent.abort()
        raise


async def _agent(args: argparse.Namespace) -> int:
    options = StreamOptions(reasoning=args.reasoning, max_tokens=args.max_tokens)
    renderer = TerminalRenderer(sys.stdout, color=use_color(sys.stdout), progress=_progress())
    if args.model is not None:
        model = _live_model(args.model, args.base_url)
        if not args.task:
            raise UsageError(f'say what the agent should do: {PROG} --model provider/id "task"')
        agent = Agent(model, tools=DEMO_TOOLS, system_prompt=DEMO_SYSTEM_PROMPT, options=options)
        await _run(agent, args.task, renderer)
    else:
        if args.base_url is not None:
            raise UsageError("--base-url goes with --model; a replay sends nothing anywhere")
        try:
            cassette = load_cassette(args.replay)
            model = model_for_cassette(cassette)
        except (CassetteError, OSError) as exc:
            raise UsageError(str(exc).splitlines()[0] if str(exc) else repr(exc)) from None
        recorded = cassette.extra.get("prompt")
        recorded_prompt = recorded if isinstance(recorded, str) else None
        task = args.task or recorded_prompt
        if not task:
            raise UsageError("this recording stores no prompt: give the task after the cassette")
        # A replay answers with the recorded replies whatever it is asked: a different task would get
        # the recorded conversation and look answered.
        if recorded_prompt is not None and task != recorded_prompt:
            raise UsageError(
                f"this recording holds the task {recorded_prompt!r}, not {task!r}: a replay only plays back "
                "the recorded replies (leave the task out, or run it live with --model)"
            )
        if recorded_prompt is None:
            sys.stderr.write(
                f"{PROG}: warning: this recording stores no prompt, so nothing checks that it holds this task; "
                "its recorded replies are played back as they are\n"
            )
        async with replay_client(cassette) as client:
            options.http_client, options.api_key, options.max_retries = client, "offline-replay", 0
            agent = Agent(model, tools=DEMO_TOOLS, system_prompt=DEMO_SYSTEM_PROMPT, options=options)
            await _run(agent, task, renderer)
    print(renderer.summary())
    last = renderer.last
    return 1 if last is None or last.stop_reason in _FAILED else 0


async def demo(out: TextIO | None = None) -> bool:
    """Replay the round trip of every wire api in ``cassettes/`` — a tool call, the tool's result sent
    back, the final answer — rendered to ``out`` (default: stdout) at half the recorded pace. True when
    every run ended without an error."""
    sink = out if out is not None else sys.stdout
    color = use_color(sink)
    succeeded = True
    for api in sorted(ROUND_TRIPS):
        path = cassette_path(api)
        cassette = load(path)
        sink.write(f"== agent loop on {api}: a tool round trip (examples/agent_loop, replaying {path.name})\n")
        # match="request": the loop must send exactly the recorded follow-up request to be answered.
        async with replay_client(cassette, match="request", timing=0.5) as client:
            options = StreamOptions(api_key="offline-demo", http_client=client, max_retries=0)
            agent = Agent(
                model_for_cassette(cassette), tools=DEMO_TOOLS, system_prompt=DEMO_SYSTEM_PROMPT, options=options
            )
            renderer = TerminalRenderer(sink, color=color)
            await _run(agent, PROMPT, renderer)
        sink.write(renderer.summary() + "\n\n")
        succeeded = succeeded and renderer.last is not None and renderer.last.stop_reason not in _FAILED
    return succeeded


def _fail(message: str, status: int) -> int:
    sys.stderr.write(f"{PROG}: error: {message}\n")  # begun as argparse begins its own error lines
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status (see the module docstring)."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # argparse reports its usage errors by exiting with status 2
        return int(exc.code or 0)
    try:
        status = (0 if asyncio.run(demo()) else 1) if args.demo else asyncio.run(_agent(args))
        sys.stdout.flush()
        return status
    except UsageError as exc:
        return _fail(str(exc), 2)
    except KeyboardInterrupt:
        sys.stderr.write("\n")
        return 130
    except Exception as exc:
        if os.environ.get("STREAMFNS_DEBUG"):
            raise
        return _fail(f"{type(exc).__name__}: {exc} (STREAMFNS_DEBUG=1 shows the traceback)", 1)
