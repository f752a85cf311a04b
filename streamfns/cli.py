"""The ``streamfns`` command.

    streamfns chat --model anthropic/claude-sonnet-4-5 "Write a haiku"   (live: needs ANTHROPIC_API_KEY)
    streamfns models [provider]                                          (the model catalog)
    streamfns demo                                                       (offline replay demo)
    streamfns conformance run pkg.module:attr [...]                      (the conformance harness)

``chat`` is the only sub-command that calls a real provider, and only when asked to.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import sys
from collections.abc import Sequence

from normalize import THINKING_LEVELS, AbortController, Context, StreamOptions, UserMessage
from streamfns._registry import stream
from streamfns._render import format_summary, render_stream
from streamfns.catalog import get_model, list_models

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="streamfns", description="Normalized LLM streams that never raise.")
    commands = parser.add_subparsers(dest="command", required=True)
    chat = commands.add_parser("chat", help="stream a live response (needs the provider's API key)")
    chat.add_argument("--model", required=True, help="provider/model-id, e.g. anthropic/claude-sonnet-4-5")
    chat.add_argument("--reasoning", choices=THINKING_LEVELS, default=None, help="thinking level")
    chat.add_argument("--max-tokens", type=int, default=None)
    chat.add_argument("--system", default=None, help="a system prompt")
    chat.add_argument("prompt", help="what to ask")
    models = commands.add_parser("models", help="list the model catalog")
    models.add_argument("provider", nargs="?", default=None)
    commands.add_parser("demo", help="replay recorded streams offline")
    conformance = commands.add_parser("conformance", help="run the conformance harness on an adapter")
    conformance.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the harness (try: run --help)")
    return parser


async def _chat(args: argparse.Namespace) -> int:
    provider, _, model_id = str(args.model).partition("/")
    if not model_id:
        print("--model must look like provider/model-id", file=sys.stderr)
        return 2
    try:
        model = get_model(provider, model_id)
    except KeyError as exc:
        print(exc.args[0] if exc.args else exc, file=sys.stderr)
        return 2
    controller = AbortController()
    options = StreamOptions(signal=controller.signal, reasoning=args.reasoning, max_tokens=args.max_tokens)
    context = Context(system_prompt=args.system, messages=[UserMessage(content=args.prompt)])
    try:
        summary = await render_stream(stream(model, context, options), color=sys.stdout.isatty())
    except asyncio.CancelledError:
        controller.abort()
        raise
    print()
    print(format_summary(summary))
    return 0 if summary.message.stop_reason in ("stop", "length", "toolUse") else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = _parser().parse_args(argv)
    if args.command == "chat":
        try:
            return asyncio.run(_chat(args))
        except KeyboardInterrupt:
            return 130
    if args.command == "models":
        for model in list_models(args.provider):
            print(
                f"{model.provider}/{model.id:<34} {model.api:<20} context {model.context_window:>9,}  "
                f"max out {model.max_tokens:>7,}  ${model.cost.input:g}/${model.cost.output:g} per M"
            )
        return 0
    if args.command == "demo":
        importlib.import_module("streamfns.demo").main()
        return 0
    harness = importlib.import_module("conformance.cli")
    return int(harness.main(list(args.args)))


if __name__ == "__main__":
    raise SystemExit(main())
