"""The ``streamfns`` command.

    streamfns chat --model anthropic/claude-sonnet-4-5 "Write a haiku"    stream one live reply
    streamfns chat --trace ...                                            ... and print its span (OpenTelemetry)
    streamfns chat --transport aiohttp ...                                ... its HTTP on aiohttp
    streamfns models [provider] [--json]                                  the model catalog
    streamfns replay CASSETTE [--events | --json]                         any recording through its adapter
    streamfns demo                                                        offline replay demo
    streamfns conformance run pkg.module:attr [...]                       the conformance harness
    streamfns login NAME [--store PATH]                                   log in to a subscription (device code)
    streamfns logout NAME [--store PATH]                                  forget a subscription login
    streamfns auth status [--json] [--store PATH]                         who is logged in, until when

Only ``chat`` calls a real provider, and only when asked to; ``login`` talks to the subscription's
OAuth server (ChatGPT's, GitHub's) and stores what it answers in the credential store
(:class:`streamfns.auth.CredentialStore`). No command ever prints a token, nor part of one. The agent
loop is an example of the repository, not of this package: ``python -m examples.agent_loop`` runs it
from a clone. Every error is one line on stderr and a non-zero exit status (2 for a usage mistake, 1
for a run that failed, 130 when interrupted); a closed output pipe (``streamfns models | head``) ends
quietly. ``STREAMFNS_DEBUG=1`` shows the traceback of an unexpected error. The commands run their event
loop on uvloop when it is installed (the ``uvloop`` extra), else on asyncio's own.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TextIO

from normalize import (
    THINKING_LEVELS,
    AbortController,
    AbortSignal,
    Context,
    Model,
    ModelCost,
    StreamOptions,
    UserMessage,
)
from normalize.suggest import close_names, did_you_mean
from streamfns._loop import run_async
from streamfns._registry import adapter_problems, stream
from streamfns.catalog import CatalogError, list_models, list_providers, model_from_spec, model_names
from streamfns.kit.compat import CompatError
from streamfns.kit.transports import TRANSPORT_ENV, TRANSPORTS
from streamfns.render import format_summary, is_terminal, one_line, price_cells, render_stream, use_color

if TYPE_CHECKING:
    from cassettes import Cassette
    from streamfns.auth import CredentialStore, LoginStatus, OAuthProvider

__all__ = ["main"]

_FAILED = ("error", "aborted")


class UsageError(Exception):
    """A mistake in how the command was called: one line, exit status 2."""


class CommandFailed(Exception):
    """A run that could not do its work, said in one line: exit status 1 (no traceback)."""


def _examples(*lines: str) -> str:
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


def _command(
    add: Callable[..., argparse.ArgumentParser], name: str, summary: str, *examples: str
) -> argparse.ArgumentParser:
    return add(
        name,
        help=summary,
        description=summary[0].upper() + summary[1:] + ".",
        epilog=_examples(*examples),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="streamfns",
        description="Normalized LLM streams that never raise: chat, list models, replay recordings, check adapters.",
        epilog=_examples(
            "streamfns models anthropic",
            "streamfns replay llma__thinking_sonnet45",
            "streamfns conformance run streamfns.anthropic:ADAPTER",
            'streamfns chat --model anthropic/claude-haiku-4-5 "Name a pelican"   # live: needs ANTHROPIC_API_KEY',
            "streamfns login github-copilot                                       # a subscription instead of a key",
            "streamfns <command> --help",
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="<command>")

    chat = _command(
        commands.add_parser,
        "chat",
        "stream one live reply (needs the provider's API key, e.g. ANTHROPIC_API_KEY)",
        'streamfns chat --model anthropic/claude-haiku-4-5 "Write a haiku about pelicans"',
        'streamfns chat --model anthropic/claude-sonnet-4-5 --reasoning low --system "Be brief." "Why is it blue?"',
        'streamfns chat --model openai/gpt-4o-mini --transport aiohttp "Name a pelican"',
    )
    _model_options(chat)
    chat.add_argument("--system", default=None, help="a system prompt")
    chat.add_argument(
        "--transport",
        choices=sorted(TRANSPORTS),
        default=None,
        help=f"the HTTP library the request is sent with (default: ${TRANSPORT_ENV}, else httpx); aiohttp "
        "needs the streamfns[aiohttp] extra",
    )
    chat.add_argument(
        "--trace",
        action="store_true",
        help="print the request's OpenTelemetry span (GenAI conventions) to stderr when the reply ends; "
        "needs the OpenTelemetry SDK",
    )
    chat.add_argument("prompt", help="what to ask")

    models = _command(
        commands.add_parser,
        "models",
        "list the model catalog: context window, max output, prices per million tokens (free for a local model, "
        "plan for one paid by a subscription, unknown where nobody published one), reasoning, inputs, and the "
        "aliases --model also accepts",
        "streamfns models",
        "streamfns models anthropic",
        "streamfns models --json | python -m json.tool",
    )
    models.add_argument("provider", nargs="?", default=None, help="only this provider's models")
    models.add_argument("--json", action="store_true", help="print the models as JSON (pi's field names)")

    replay = _command(
        commands.add_parser,
        "replay",
        "render a recorded stream (a cassette file or a bundled recording name) through its api's adapter",
        "streamfns replay llma__thinking_sonnet45",
        "streamfns replay my_cassette.jsonl --events",
        "streamfns replay tl__text_and_2_tools_sonnet35 --json",
    )
    replay.add_argument("cassette", metavar="CASSETTE", help="a .jsonl cassette file or a bundled recording name")
    shown = replay.add_mutually_exclusive_group()
    shown.add_argument("--events", action="store_true", help="one line per event instead of the rendered text")
    shown.add_argument(
        "--json",
        action="store_true",
        help="JSON lines: each event (with its 'type'), then the final message (with 'role': 'assistant', as "
        "result() returns it), for each recorded interaction",
    )
    replay.add_argument("--timing", choices=("instant", "recorded"), default="instant", help="chunk pacing")

    _command(
        commands.add_parser,
        "demo",
        "replay recorded streams through each adapter, then a scripted one, offline",
        "streamfns demo",
    )

    conformance = _command(
        commands.add_parser,
        "conformance",
        "run the conformance harness on an adapter",
        "streamfns conformance run streamfns.anthropic:ADAPTER",
        "streamfns conformance list",
        "streamfns conformance run --help",
    )
    conformance.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the harness (try: run --help)")

    login = _command(
        commands.add_parser,
        "login",
        "log in to a subscription with a device code (open a page, type the code shown) and store the "
        "credential: openai-codex (a ChatGPT plan) or github-copilot (a GitHub Copilot plan)",
        "streamfns login github-copilot",
        "streamfns login openai-codex",
        "streamfns login openai-codex --store ./ci-auth.json",
    )
    login.add_argument("name", metavar="NAME", help=_LOGIN_NAME_HELP)
    _store_option(login)

    logout = _command(
        commands.add_parser,
        "logout",
        "forget a subscription login: its tokens are deleted from the credential store (revoke them at the "
        "vendor too: see docs/subscriptions.md)",
        "streamfns logout github-copilot",
        "streamfns logout openai-codex --store ./ci-auth.json",
    )
    logout.add_argument("name", metavar="NAME", help=_LOGIN_NAME_HELP)
    _store_option(logout)

    auth = _command(
        commands.add_parser,
        "auth",
        "the subscription logins in the credential store",
        "streamfns auth status",
        "streamfns auth status --json",
    )
    auth_commands = auth.add_subparsers(dest="auth_command", required=True, metavar="<subcommand>")
    status = _command(
        auth_commands.add_parser,
        "status",
        "who is logged in to each subscription, until when its token is valid (local time), and whether it "
        "renews itself; never a token",
        "streamfns auth status",
        "streamfns auth status --json | python -m json.tool",
        "STREAMFNS_AUTH_FILE=./ci-auth.json streamfns auth status",
    )
    status.add_argument("--json", action="store_true", help="print the logins as JSON")
    _store_option(status)
    return parser


_LOGIN_NAME_HELP = "the subscription: openai-codex or github-copilot (or one a plugin registered)"


def _store_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store",
        metavar="PATH",
        default=None,
        help="the credential file to use (default: $STREAMFNS_AUTH_FILE, else $XDG_CONFIG_HOME/streamfns/auth.json, "
        "else ~/.config/streamfns/auth.json)",
    )


_BASE_URL_HELP = "send requests here instead of the catalog's endpoint (a proxy, a compatible server)"


def _model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="provider/model-id, e.g. anthropic/claude-sonnet-4-5")
    parser.add_argument("--base-url", default=None, help=_BASE_URL_HELP)
    parser.add_argument("--reasoning", choices=THINKING_LEVELS, default=None, help="thinking level")
    parser.add_argument("--max-tokens", type=int, default=None, help="output token limit")


def _model(spec: str, base_url: str | None = None) -> Model:
    try:
        return model_from_spec(spec, base_url=base_url)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _progress() -> TextIO | None:
    """Where to show progress: stderr, when it is a terminal."""
    return sys.stderr if is_terminal(sys.stderr) else None


# -- chat ---------------------------------------------------------------------------------------


def _check_transport(name: str | None) -> None:
    """A ``UsageError`` when ``--transport`` names a transport this installation lacks (the name itself
    argparse has checked): said before the request, not as the reply's error."""
    if name == "aiohttp":
        try:
            import aiohttp  # noqa: F401, PLC0415 # pyright: ignore[reportUnusedImport] - an optional extra
        except ImportError:
            raise UsageError("--transport aiohttp needs the aiohttp extra: pip install 'streamfns[aiohttp]'") from None


def _chat_traced(args: argparse.Namespace) -> int:
    """``chat --trace``: the kit's spans go to the terminal (stderr) for this one reply."""
    _check_transport(args.transport)
    if not args.trace:
        return run_async(_chat(args))
    try:
        from opentelemetry.sdk.trace import TracerProvider  # noqa: PLC0415 - only with --trace
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor  # noqa: PLC0415
    except ImportError:
        raise UsageError(
            "--trace needs the OpenTelemetry SDK: pip install 'streamfns[otel]' opentelemetry-sdk"
        ) from None
    from streamfns.kit import telemetry  # noqa: PLC0415

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
    telemetry.instrument(tracer_provider=provider)
    try:
        return run_async(_chat(args))
    finally:
        telemetry.uninstrument()
        provider.shutdown()


async def _chat(args: argparse.Namespace) -> int:
    model = _model(args.model, args.base_url)
    controller = AbortController()
    options = StreamOptions(
        signal=controller.signal, reasoning=args.reasoning, max_tokens=args.max_tokens, transport=args.transport
    )
    context = Context(system_prompt=args.system, messages=[UserMessage(content=args.prompt)])
    try:
        summary = await render_stream(
            stream(model, context, options), color=use_color(sys.stdout), progress=_progress()
        )
    except asyncio.CancelledError:
        controller.abort()
        raise
    print()
    print(format_summary(summary))
    return 1 if summary.message.stop_reason in _FAILED else 0


# -- recordings ----------------------------------------------------------------------------------


def _load(name_or_path: str) -> Cassette:
    from cassettes import CassetteError, command_line_text  # noqa: PLC0415 - only the replaying commands need cassettes
    from streamfns.demo import load_cassette  # noqa: PLC0415

    _check_cassette_argument(name_or_path)
    try:
        return load_cassette(name_or_path)
    except (CassetteError, OSError) as exc:
        text = command_line_text(exc)
        raise UsageError(text.splitlines()[0] if text else repr(exc)) from None


def _check_cassette_argument(name_or_path: str) -> None:
    """A ``UsageError`` for a directory (naming the cassettes in it), and for a name that is neither a
    file nor a bundled recording (naming the close ones, as ``models`` does for an unknown id)."""
    from cassettes import library  # noqa: PLC0415

    path = Path(name_or_path)
    if path.is_dir():
        inside = sorted(item.name for item in path.glob("*.jsonl"))
        shown = ", ".join(inside[:5]) + (", …" if len(inside) > 5 else "")
        what = f"name one of its cassettes: {shown}" if inside else "it holds no cassette (*.jsonl)"
        raise UsageError(f"{name_or_path} is a directory; {what}")
    if path.exists() or name_or_path in library.names():
        return
    # Close names among the cassettes beside the path (by file name, spelled with the folder as typed)
    # and, for what looks like a name rather than a path, among the bundled recordings.
    folder = path.parent
    beside = [item.stem for item in folder.glob("*.jsonl")] if folder.is_dir() else []
    close = [str(folder / f"{stem}.jsonl") for stem in close_names(path.stem, beside, limit=3)]
    if path.suffix == ".jsonl" or len(path.parts) > 1:
        problem, otherwise = "no such file", ""
    else:
        close += close_names(name_or_path, library.names(), limit=3)
        problem, otherwise = "no such file, nor a bundled recording name", "; `cassettes library --names` lists those"
    raise UsageError(f"{name_or_path}: {problem}" + (f"; did you mean: {', '.join(close)}?" if close else otherwise))


def _recorded_model(cassette: Cassette) -> Model:
    from cassettes import CassetteError  # noqa: PLC0415
    from streamfns.demo import model_for_cassette  # noqa: PLC0415

    try:
        return model_for_cassette(cassette)
    except CassetteError as exc:
        raise UsageError(str(exc)) from None


# -- models -------------------------------------------------------------------------------------


def _prices(cost: ModelCost) -> tuple[str, str, str, str]:
    """The four price cells: the metered rates ($/M; ``-`` for a part that is not charged), else the
    basis in each (``free``, ``plan``, ``unknown``: :data:`streamfns.render.PRICE_WORDS`)."""
    return price_cells(cost, lambda rate: f"{rate:g}" if rate else "-")


def _models(args: argparse.Namespace) -> int:
    if args.provider is not None and args.provider not in list_providers():
        raise UsageError(
            f"unknown provider {args.provider!r}; {did_you_mean(args.provider, list_providers(), what='providers')}"
        )
    found = list_models(args.provider)
    if args.provider == "ollama":
        # Local model names are the user's own: list what the server has pulled when one answers.
        from streamfns.ollama.request import host_from_env  # noqa: PLC0415 - only this listing reaches a server
        from streamfns.ollama.server import pulled_models  # noqa: PLC0415

        try:
            host_from_env()
        except CompatError as exc:  # an address that could send the request elsewhere: nothing is asked
            sys.stderr.write(f"streamfns: {exc}; no server was asked — these are the catalog's:\n")
            pulled = found
        else:
            pulled = pulled_models()
        if pulled is None:
            sys.stderr.write(
                "streamfns: no Ollama server answered (OLLAMA_HOST or http://localhost:11434); any pulled model "
                "works as ollama/<name> — these are the catalog's:\n"
            )
        else:
            found = pulled
    for problem in adapter_problems():  # a plugin's skipped entries are named, the listing goes on
        sys.stderr.write(f"streamfns: warning: {problem}\n")
    if args.json:
        print(json.dumps([model.to_json() for model in found], indent=2))
        return 0
    header = (
        "model",
        "api",
        "context",
        "max out",
        "in $/M",
        "out $/M",
        "cache r $/M",
        "cache w $/M",
        "reasoning",
        "input",
        "aliases",
    )
    rows = [
        (
            f"{model.provider}/{model.id}",
            model.api,
            f"{model.context_window:,}",
            f"{model.max_tokens:,}",
            *_prices(model.cost),
            "yes" if model.reasoning else "no",
            "+".join(model.input),
            # An alias resolves silently in `--model`: it must be findable here.
            ",".join(model_names(model.provider, model.id)[1:]) or "-",
        )
        for model in found
    ]
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    numeric = {2, 3, 4, 5, 6, 7}
    for row in (header, *rows):
        cells = [cell.rjust(widths[i]) if i in numeric else cell.ljust(widths[i]) for i, cell in enumerate(row)]
        print("  ".join(cells).rstrip())
    return 0


# -- replay -------------------------------------------------------------------------------------


async def _replay(args: argparse.Namespace) -> int:
    from normalize import event_to_json  # noqa: PLC0415
    from streamfns.demo import replay_client  # noqa: PLC0415

    cassette = _load(args.cassette)
    model = _recorded_model(cassette)
    failed = False
    total = len(cassette.interactions)
    if total == 0:
        raise UsageError(f"{args.cassette}: the cassette holds no interaction")
    async with replay_client(cassette, timing=args.timing) as client:
        for index in range(total):
            options = StreamOptions(api_key="offline-replay", http_client=client, max_retries=0)
            events = stream(model, Context(messages=[UserMessage(content="(replayed)")]), options)
            if args.json:
                async for event in events:
                    print(json.dumps(event_to_json(event), ensure_ascii=False))
                message = await events.result()
                # One shape whatever the ending (a `done` event carries `message`, an `error` event
                # `error`): a script reads the last line.
                print(json.dumps(message.to_json(), ensure_ascii=False))
            else:
                if total > 1:
                    print(f"== interaction {index + 1} of {total}")
                summary = await render_stream(events, color=use_color(sys.stdout), events=args.events)
                message = summary.message
                print(("" if args.events else "\n") + format_summary(summary))
            failed = failed or message.stop_reason in _FAILED
    return 1 if failed else 0


# -- login, logout, auth status -----------------------------------------------------------------------
#
# Every value shown comes from a store or an OAuth server: it passes through `one_line` (control
# characters escaped) so a hostile answer can not drive the terminal. No token is ever shown: only the
# provider's name and title, the account (an email or a GitHub login) and the expiry.


def _oauth_provider(name: str) -> OAuthProvider:
    """The registered login ``name``, else a `UsageError` naming the close ones (or all of them)."""
    from streamfns.auth import oauth_providers  # noqa: PLC0415 - only the login commands load streamfns.auth

    known = oauth_providers()
    found = known.get(name)
    if found is None:
        raise UsageError(f"unknown login {name!r}; {did_you_mean(name, known, what='logins')}")
    return found


def _store(path: str | None) -> CredentialStore:
    from streamfns.auth import CredentialStore  # noqa: PLC0415

    return CredentialStore(path)


def _relative(seconds: float) -> str:
    """``in 29 min`` / ``3 h ago``: how far ``seconds`` (from now; negative: past) is, roughly."""
    span = abs(seconds)
    if span < 90:
        amount = f"{span:.0f} s"
    elif span < 90 * 60:
        amount = f"{span / 60:.0f} min"
    elif span < 48 * 3600:
        amount = f"{span / 3600:.0f} h"
    else:
        amount = f"{span / 86400:.0f} days"
    return f"in {amount}" if seconds >= 0 else f"{amount} ago"


def _local_time(epoch: float) -> str:
    """``epoch`` in the local time zone, to the minute, with the zone's name."""
    return datetime.fromtimestamp(epoch).astimezone().strftime("%Y-%m-%d %H:%M %Z")


def _until(expires: float, now: float) -> str:
    """When a token stops working: local time and how far from ``now``; ``no expiry`` when never."""
    if expires == float("inf"):
        return "no expiry"
    return f"{_local_time(expires)} ({_relative(expires - now)})"


class _TerminalLogin:
    """The device-code UI on a terminal (a :class:`streamfns.auth.LoginInteraction`): the page and the
    code on stdout, where the user reads them; progress lines on stderr."""

    def __init__(self, title: str, signal: AbortSignal) -> None:
        self.title = title
        self.signal: AbortSignal | None = signal
        self._bold = use_color(sys.stdout)

    def show_code(self, verification_uri: str, user_code: str, expires_in_s: float) -> None:
        code = one_line(user_code, 64)
        shown = f"\x1b[1m{code}\x1b[0m" if self._bold else code
        sys.stdout.write(
            f"To log in to {one_line(self.title)}, open this page in a browser:\n\n"
            f"    {one_line(verification_uri, 200)}\n\n"
            f"and enter the code:\n\n"
            f"    {shown}\n\n"
            f"The code expires {_relative(expires_in_s)}; Ctrl-C cancels.\n"
        )
        sys.stdout.flush()

    def progress(self, message: str) -> None:
        sys.stderr.write(f"streamfns: {one_line(message, 200)}\n")
        sys.stderr.flush()


def _store_failed(error: Exception) -> CommandFailed:
    """A :class:`streamfns.auth.StoreError` as one line (its message names the file and the fix)."""
    return CommandFailed(one_line(str(error), 400))


async def _login(args: argparse.Namespace) -> int:
    from streamfns import auth  # noqa: PLC0415

    provider = _oauth_provider(args.name)
    store = _store(args.store)
    controller = AbortController()
    interaction = _TerminalLogin(provider.title, controller.signal)
    interaction.progress(f"logging in to {provider.title}; the credential goes to {store.path}")
    try:
        credential = await auth.login(provider.name, interaction, store=store)
    except asyncio.CancelledError:  # Ctrl-C: the flow stops where it is, nothing is stored
        controller.abort("interrupted")
        sys.stderr.write("\nstreamfns: login cancelled; nothing was stored\n")
        raise
    except auth.StoreError as exc:
        raise _store_failed(exc) from None
    except auth.LoginFailed as exc:
        raise CommandFailed(one_line(f"{provider.name}: {exc}", 400)) from None
    who = f" as {one_line(credential.account, 100)}" if credential.account else ""
    print(f"Logged in to {one_line(provider.title)}{who}.")
    print(f"The token is valid until {_until(credential.expires, time.time())}", end="")
    print("; it renews itself while the login lasts." if credential.refresh else ".")
    print(f"Stored in {store.path}; `streamfns logout {provider.name}` forgets it.")
    return 0


def _logout(args: argparse.Namespace) -> int:
    from streamfns import auth  # noqa: PLC0415

    provider = _oauth_provider(args.name)
    store = _store(args.store)
    try:
        removed = auth.logout(provider.name, store=store)
    except auth.StoreError as exc:
        raise _store_failed(exc) from None
    if removed:
        print(f"Logged out of {one_line(provider.title)}: its tokens are deleted from {store.path}.")
        where = _REVOKE_AT.get(provider.name, 'see "Revoking a login" in docs/subscriptions.md')
        print(f"They stay valid at the vendor until they expire or are revoked there: {where}.")
    else:
        print(f"Not logged in to {one_line(provider.title)} in {store.path}: nothing to forget.")
    return 0


#: Where each built-in login is revoked at its vendor (docs/subscriptions.md, "Revoking a login").
_REVOKE_AT = {
    "github-copilot": "on GitHub, Settings → Applications → Authorized GitHub Apps → GitHub Copilot Plugin → Revoke",
    "openai-codex": "in ChatGPT, Settings → Security → Log out of all devices",
}


def _status_json(row: LoginStatus | None, provider: str, title: str, command: str, now: float) -> dict[str, object]:
    """One login as JSON: no token, only who and until when (``null`` where not logged in)."""
    limited = row is not None and row.expires != float("inf")
    return {
        "provider": provider,
        "title": title,
        "logged_in": row is not None,
        "account": (row.account or None) if row is not None else None,
        "expires": row.expires if row is not None and limited else None,
        "expires_local": datetime.fromtimestamp(row.expires).astimezone().isoformat(timespec="seconds")
        if row is not None and limited
        else None,
        "expires_in_s": round(row.expires - now, 3) if row is not None and limited else None,
        "expired": row.expired if row is not None else None,
        "refreshable": row.refreshable if row is not None else None,
        "login_command": command,
    }


def _status_line(row: LoginStatus, command: str, now: float) -> str:
    until = _until(row.expires, now)
    if not row.expired:
        state = f"token valid until {until}"
        return state + ("; renews itself" if row.refreshable else f"; then log in again: {command}")
    if row.refreshable:
        return f"token expired {until}; renews itself on the next request"
    return f"token expired {until}; log in again: {command}"


def _auth_status(args: argparse.Namespace) -> int:
    from streamfns import auth  # noqa: PLC0415

    store = _store(args.store)
    now = time.time()
    try:
        rows = {row.provider: row for row in auth.status(store=store, now=now)}
    except auth.StoreError as exc:
        raise _store_failed(exc) from None
    providers = auth.oauth_providers()
    names = sorted(set(providers) | set(rows))
    entries: list[tuple[str, str, str, LoginStatus | None]] = []
    for name in names:
        provider = providers.get(name)
        command = provider.login_command if provider is not None else f"streamfns login {name}"
        title = rows[name].title if name in rows else provider.title if provider is not None else name
        entries.append((name, title, command, rows.get(name)))
    if args.json:
        logins = [_status_json(row, name, title, command, now) for name, title, command, row in entries]
        print(json.dumps({"store": str(store.path), "logins": logins}, indent=2, ensure_ascii=False))
        return 0
    for name, title, command, row in entries:
        head = f"{one_line(name)} ({one_line(title)})"
        if row is None:
            print(f"{head}: not logged in — {command}")
            continue
        who = f"logged in as {one_line(row.account, 100)}" if row.account else "logged in"
        print(f"{head}: {who}")
        print(f"  {_status_line(row, command, now)}")
    print(f"credential store: {store.path}")
    return 0


# -- main ---------------------------------------------------------------------------------------


def _conformance(args: argparse.Namespace) -> int:
    from conformance import cli as harness  # noqa: PLC0415 - the harness loads only when asked for

    return int(harness.main(list(args.args), prog="streamfns conformance"))


def _demo(_args: argparse.Namespace) -> int:
    from streamfns import demo  # noqa: PLC0415

    demo.main()
    return 0


_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "chat": _chat_traced,
    "models": _models,
    "replay": lambda args: run_async(_replay(args)),
    "demo": _demo,
    "conformance": _conformance,
    "login": lambda args: run_async(_login(args)),
    "logout": _logout,
    "auth": _auth_status,  # `auth status`, its one subcommand
}


def _fail(message: str, status: int) -> NoReturn:
    sys.stderr.write(f"streamfns: error: {message}\n")
    raise SystemExit(status)


def _quiet_broken_pipe() -> int:
    # The reader went away (``| head``): send what is still buffered nowhere, so the interpreter's
    # final flush does not report a second BrokenPipeError, and end quietly.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (see the module docstring)."""
    try:
        args = _parser().parse_args(argv)
        status = _COMMANDS[args.command](args)
        sys.stdout.flush()  # inside the try: a reader that went away is noticed here, not at exit
        return status
    except UsageError as exc:
        _fail(str(exc), 2)
    except CommandFailed as exc:
        _fail(str(exc), 1)
    except CatalogError as exc:
        _fail(f"the model catalog is broken: {exc}", 1)
    except KeyboardInterrupt:
        sys.stderr.write("\n")
        return 130
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except Exception as exc:
        if os.environ.get("STREAMFNS_DEBUG"):
            raise
        _fail(f"{type(exc).__name__}: {exc} (STREAMFNS_DEBUG=1 shows the traceback)", 1)


if __name__ == "__main__":
    raise SystemExit(main())
