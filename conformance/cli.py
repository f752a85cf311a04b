"""The command line: ``conformance run pkg.module:attr [options]`` (also ``python -m conformance``).

Exit status: 0 — conformant or conformant with limitations; 1 — non-conformant (also when the
adapter raised ``SystemExit`` or ``KeyboardInterrupt``, hung, or blocked the event loop: that is its
failure, reported); 2 — usage error, told in one line on stderr (bad arguments; a target that
cannot be imported — whatever its module raises at import, ``SystemExit`` included — or whose
import does not finish within :data:`IMPORT_BOUND_S`; cassettes that do not exist or do not load; no
recordings to replay). A run always ends with a report within the bound it states
(``Limits.bound_s``) — unless the adapter ends the process itself (``os._exit``, a crash): the
adapter runs in this process, so nothing is left to write the report (see
:mod:`conformance.watchdog`).

Text from the adapter (exception messages, names) is shown with its control characters escaped,
in the report and in error lines alike. When the reader of stdout goes away (``| head``), the
command ends quietly — ``run`` with its verdict's status.

``--transport httpx|aiohttp|native`` chooses the HTTP library of every client the kit makes during the run
(:func:`streamfns.kit.set_default_transport`, process-wide: every built-in adapter, and any adapter
built on the kit, sends its requests on it; the report says which ran). Without it the kit's own
choice applies (the ``STREAMFNS_TRANSPORT`` environment variable, else httpx). An unknown name, or
aiohttp without the ``streamfns[aiohttp]`` extra, is a usage error (exit 2). The command's own event
loop is uvloop's when uvloop is installed (:func:`streamfns._loop.run_async`).

``--exec 'COMMAND'`` (instead of a target) judges an adapter written in any language, run as a process
that speaks the adapter process protocol (docs/process-protocol.md; :mod:`conformance.process`): with
``--api`` and no capability flags it is declared to have every feature of the api; ``--pool``,
``--start-timeout``, ``--abort`` and ``--abort-grace`` tune how its processes are run. ``--contract pi``
judges only the shared contract (the exit status then follows the pi verdict); by default every
report gives a verdict at both levels.

``conformance list`` prints the check ids and titles (``--markdown``: the table the conformance guide shows);
``conformance explain ID`` prints a check's troubleshooting text.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
import textwrap
import threading
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

from cassettes import command_line_text
from conformance.checks import CHECKS, get_check, markdown_table
from conformance.process import process_target
from conformance.process.adapter import MAX_POOL
from conformance.recordings import NoRecordings
from conformance.report import Report, report_json_text
from conformance.runner import run as run_checks
from conformance.target import Capabilities, import_target, is_target
from conformance.text import printable
from conformance.watchdog import Limits
from normalize.wire import known_profiles
from streamfns._loop import run_async
from streamfns.kit import TRANSPORT_ENV, default_transport, set_default_transport
from streamfns.kit.transports import DEFAULT_TRANSPORT, TRANSPORTS

__all__ = ["main"]

_FLAGS: dict[str, str] = {
    "tools": "tool_calls",
    "parallel_tools": "parallel_tool_calls",
    "thinking": "thinking",
    "usage": "usage_in_stream",
    "images": "images",
    "retries": "retries",
}


#: How long the process waits for threads that are finishing anyway before it exits without them.
_EXIT_WAIT_S = 1.0
#: How long importing the target may take (seconds): its module's code runs then, outside any run.
IMPORT_BOUND_S = 20.0
#: Threads the command already explained in its error line (an import that did not finish).
_explained: set[str] = set()


class _UsageError(Exception):
    pass


def _examples(*lines: str) -> str:
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description="Check a StreamFn against the streamfns contract.")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser(
        "run",
        help="run the checks against an adapter",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_examples(
            f"{prog} run streamfns.anthropic:ADAPTER",
            f"{prog} run mypkg:ADAPTER",
            f"{prog} run mypkg.adapter:stream_mine --api my-api --cassettes tests/cassettes --tools --usage",
            f"{prog} run mypkg.adapter:TARGET --cassettes tests/cassettes --format json --report report.json",
            f"{prog} run mypkg.adapter:TARGET --checks T1 H2 --xfail 'U3=server sends no usage'",
            f"{prog} run streamfns.anthropic:ADAPTER --transport aiohttp",
            f"{prog} run --exec 'node my_adapter.mjs' --api my-api",
            f"{prog} run --exec 'node my_adapter.mjs' --api my-api --contract pi",
        ),
        description="TARGET is 'pkg.module:attr': an adapter's streamfns.kit.Adapter declaration, a StreamFn, "
        "a zero-argument factory returning one, or a conformance.Target (a declaration and a Target carry their "
        "capabilities, so no capability flags are needed). Importing "
        f"it may take {IMPORT_BOUND_S:g} s at most; then, whatever the adapter does, the run ends with a report "
        f"within {Limits().bound_s:g} s (unless the adapter ends the process itself, with os._exit).",
    )
    run.add_argument("target", nargs="?", help="pkg.module:attr (or --exec COMMAND instead)")
    run.add_argument(
        "--exec",
        dest="exec_command",
        metavar="COMMAND",
        help="judge an adapter written in any language: COMMAND starts a process that speaks the adapter "
        "process protocol (docs/process-protocol.md), one per call; give --api; without capability flags "
        "it is declared to have every feature of the api",
    )
    run.add_argument(
        "--contract",
        choices=("streamfns", "pi"),
        default="streamfns",
        help="what to judge: streamfns (default: every check, a verdict at both levels) or pi (only the "
        "shared contract pi states for a StreamFn; the exit status follows that verdict)",
    )
    run.add_argument("--pool", type=int, default=4, metavar="N", help="with --exec: processes kept started (4)")
    run.add_argument(
        "--start-timeout", type=float, default=20.0, metavar="S", help="with --exec: seconds to say ready (20)"
    )
    run.add_argument(
        "--abort",
        choices=("line", "signal"),
        default="line",
        help='with --exec: how an abort is told: a {"type": "abort"} line on stdin (default) or SIGINT',
    )
    run.add_argument(
        "--abort-grace",
        type=float,
        default=2.0,
        metavar="S",
        help="with --exec: seconds after an abort before a process that has not ended its stream is killed (2)",
    )
    run.add_argument(
        "--api",
        metavar="API",
        help="the wire api (model.api); an installed adapter's declaration of it gives the framing, the terminal "
        "marker, the error bodies and the bundled recordings",
    )
    run.add_argument("--no-http", action="store_true", help="the adapter sends no HTTP (HTTP checks are unsupported)")
    run.add_argument("--tools", action="store_true", help="the adapter emits tool calls")
    run.add_argument("--parallel-tools", action="store_true", help="several tool calls in one message")
    run.add_argument("--thinking", action="store_true", help="the adapter emits thinking blocks")
    run.add_argument("--usage", action="store_true", help="usage is reported in the stream")
    run.add_argument("--images", action="store_true", help="user messages may carry images")
    run.add_argument("--retries", action="store_true", help="the adapter retries before output itself")
    run.add_argument(
        "--cassettes",
        action="append",
        metavar="PATH",
        help="cassette directory or file (repeatable); a cassette shows the feature it is named after, by its "
        "header name or else its file name (text, tool, parallel, thinking, or as the api's recordings map names "
        "them): the report says which served each feature, and a declared feature none shows is not examined",
    )
    run.add_argument(
        "--checks", action="extend", nargs="+", metavar="IDS", help="check ids to run (comma- or space-separated)"
    )
    run.add_argument(
        "--xfail", action="extend", nargs="+", default=[], metavar="ID=REASON", help="expected failures, with reasons"
    )
    run.add_argument(
        "--report", type=Path, metavar="FILE", help="write the report here (the table still goes to stdout)"
    )
    run.add_argument("--format", choices=("text", "json", "junit"), default="text", help="report format")
    run.add_argument("--name", help="the adapter's name in the report")
    run.add_argument(
        "--transport",
        choices=sorted(TRANSPORTS),
        default=None,
        help="the HTTP library of every client the kit makes during the run (process-wide: the built-in "
        "adapters and any adapter on the kit); default: $" + TRANSPORT_ENV + f", else {DEFAULT_TRANSPORT}; "
        "aiohttp needs the streamfns[aiohttp] extra",
    )
    listing = commands.add_parser(
        "list",
        help="list the checks",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_examples(f"{prog} list", f"{prog} list --markdown"),
    )
    listing.add_argument("--markdown", action="store_true", help="as the Markdown table the conformance guide shows")
    explain = commands.add_parser(
        "explain",
        help="print a check's troubleshooting text",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_examples(f"{prog} explain T1", f"{prog} explain M4"),
    )
    explain.add_argument("check_id")
    return parser


def _capabilities(args: argparse.Namespace, loaded: Any) -> Capabilities:
    flags = {field: True for option, field in _FLAGS.items() if getattr(args, option)}
    if args.exec_command and not flags and not args.no_http:
        # A process adapter declares nothing itself: without flags, a full adapter of the api.
        return Capabilities.every_feature(args.api)
    if flags.get("parallel_tool_calls"):
        flags["tool_calls"] = True
    if args.no_http:
        flags["http"] = False
    if args.api:
        flags["api"] = args.api
    base = loaded.capabilities if is_target(loaded) else Capabilities()
    try:
        return dataclasses.replace(base, **flags)
    except ValueError as exc:
        raise _UsageError(str(exc)) from None


def _apis_with_recordings() -> str:
    named = sorted(api for api, profile in known_profiles().items() if profile.recordings)
    return ", ".join(named) or "none is installed"


def _xfail(entries: list[str]) -> dict[str, str]:
    reasons: dict[str, str] = {}
    for entry in entries:
        check_id, sep, reason = entry.partition("=")
        if not sep or not reason.strip():
            raise _UsageError(f"--xfail {entry!r}: write it as ID=reason (a reason is required)")
        reasons[check_id.strip()] = reason.strip()
    return reasons


def _render(report: Report, form: str) -> str:
    if form == "json":
        return report_json_text(report)
    if form == "junit":
        return report.to_junit()
    return report.to_text()


def _check_report_path(path: Path) -> None:
    """Refuse a report file that cannot be written before the run, not after it; nothing is created
    (a run that never happens must not leave an empty report for a CI reader to choke on)."""
    problem: str | None = None
    if path.is_dir():
        problem = "it is a directory"
    elif path.exists():
        if not os.access(path, os.W_OK):
            problem = "the file is not writable"
    else:
        ancestor = path.parent
        while not ancestor.exists() and ancestor != ancestor.parent:
            ancestor = ancestor.parent
        if not ancestor.is_dir():
            problem = f"{ancestor} is not a directory"
        elif not os.access(ancestor, os.W_OK | os.X_OK):
            problem = f"{ancestor} is not writable"
    if problem is not None:
        raise _UsageError(f"cannot write the report to {printable(str(path))}: {printable(problem)}")


@contextlib.contextmanager
def _transport(name: str | None) -> Generator[None]:
    """Within: the kit's process-wide transport is ``name`` (None: the one the environment chooses),
    checked before anything runs (``_UsageError`` when the kit cannot use it). After: as it was, so a
    caller running the command in its own process (a test, ``streamfns conformance``) keeps its choice."""
    before = default_transport()
    # What the environment alone gives: a process that never chose one is left choosing none.
    implied = os.environ.get(TRANSPORT_ENV, "").strip().lower() or DEFAULT_TRANSPORT
    try:
        set_default_transport(name or before)
    except ValueError as exc:
        where = "--transport" if name else f"the {TRANSPORT_ENV} environment variable"
        raise _UsageError(f"{where}: {exc}") from None
    try:
        yield
    finally:
        set_default_transport(None if before == implied else before)


def _run(args: argparse.Namespace, program: str) -> int:
    if args.report is not None:
        _check_report_path(args.report)
    # Checked before the target is imported (which may take a while): a bad choice is told at once.
    with _transport(args.transport):
        return _run_on_transport(args, program)


def _process_target(args: argparse.Namespace) -> Any:
    """The target ``--exec`` names (usage errors for what cannot work)."""
    if args.target is not None:
        raise _UsageError("give either a target (pkg.module:attr) or --exec COMMAND, not both")
    if not args.api:
        raise _UsageError("--exec needs --api API: the wire api the adapter process speaks (its recordings)")
    if not 1 <= args.pool <= MAX_POOL:
        raise _UsageError(f"--pool must be from 1 to {MAX_POOL}, not {args.pool}")
    try:
        return process_target(
            args.exec_command,
            capabilities=_capabilities(args, None),
            pool_size=args.pool,
            start_timeout_s=args.start_timeout,
            abort=args.abort,
            abort_grace_s=args.abort_grace,
        )
    except ValueError as exc:
        raise _UsageError(f"--exec: {exc}") from None


def _run_on_transport(args: argparse.Namespace, program: str) -> int:
    if args.exec_command is not None:
        loaded = _process_target(args)
    elif args.target is None:
        raise _UsageError("give a target (pkg.module:attr), or --exec COMMAND for an adapter process")
    else:
        loaded = _import(args.target)
    groups: list[str] | None = args.checks
    # ``--checks ,`` names no check: it reaches run() as an empty selection, which refuses it, rather
    # than silently meaning "every check".
    checks = None if groups is None else [item.strip() for group in groups for item in group.split(",") if item.strip()]
    report = run_async(
        run_checks(
            loaded,
            capabilities=loaded.capabilities if args.exec_command else _capabilities(args, loaded),
            cassettes=args.cassettes,
            checks=checks,
            xfail=_xfail(args.xfail),
            name=args.name or (args.target if not is_target(loaded) else None),
            contract=args.contract,
        )
    )
    status = 0 if report.ok else 1
    rendered = _render(report, args.format)
    try:
        if args.report is not None:
            sys.stdout.write(report.to_text() if args.format != "text" else rendered)
            try:
                args.report.parent.mkdir(parents=True, exist_ok=True)
                args.report.write_text(rendered, encoding="utf-8")
            except OSError as exc:  # it was writable before the run; say so, keep the verdict shown
                sys.stdout.flush()
                sys.stderr.write(f"{program}: error: cannot write the report to {printable(str(args.report))}: {exc}\n")
                return 2
            sys.stdout.write(f"report written to {printable(str(args.report))}\n")
        else:
            sys.stdout.write(rendered)
        sys.stdout.flush()  # inside the try: a reader that went away is noticed here, not at exit
    except BrokenPipeError:
        _quiet_broken_pipe()
    return status


def _import(target: str) -> Any:
    # Like ``python -m``: a target in the current directory imports without being installed.
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        return import_target(target, within_s=IMPORT_BOUND_S)
    except ValueError:
        _explained.add("conformance-import")  # an import that did not finish: its thread is said
        raise


def main(argv: list[str] | None = None, *, prog: str = "conformance", program: bool | None = None) -> int:
    """Run the command line; returns the exit status (see the module docstring). ``prog`` names the
    command in usage messages (``streamfns conformance`` when another CLI delegates here).

    ``program`` (default: when ``argv`` is None, i.e. the process's own command line): this call is
    the whole process, so when the adapter left threads running that would keep the interpreter from
    exiting (its own, or its executor's), the process ends at once after the report is written.
    """
    status = _main(argv, prog)
    if program if program is not None else argv is None:
        _exit_if_held(status, _program(prog))
    return status


def _program(prog: str) -> str:
    """The program the user typed (``streamfns`` for ``streamfns conformance``): what its messages
    start with, as every other message of that program does."""
    return prog.split(maxsplit=1)[0] if prog.split() else "conformance"


def _exit_if_held(status: int, program: str) -> None:
    """End the process now when threads still running adapter code (its own, its executor's, or a
    worker the watchdog gave up on) would hold it open: the interpreter joins executor threads and
    non-daemon threads before it exits."""
    deadline = time.monotonic() + _EXIT_WAIT_S
    others = [thread for thread in threading.enumerate() if thread is not threading.current_thread()]
    for thread in others:
        thread.join(max(0.0, deadline - time.monotonic()))
    alive = {thread.name for thread in others if thread.is_alive()}
    if alive:
        holding = sorted(printable(name) for name in alive - _explained)
        if holding:
            sys.stderr.write(f"{program}: the adapter left threads running ({', '.join(holding)}); not waiting\n")
        with contextlib.suppress(OSError):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(status)


def _quiet_broken_pipe() -> int:
    # The reader went away (``| head``): send what is still buffered nowhere, so the interpreter's
    # final flush does not report a second BrokenPipeError, and end quietly.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 0


def _main(argv: list[str] | None, prog: str) -> int:
    parser = _parser(prog)
    program = _program(prog)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse reports usage errors by exiting with status 2
        return int(exc.code or 0)
    try:
        if args.command == "list":
            if args.markdown:
                sys.stdout.write(markdown_table())
                sys.stdout.flush()
                return 0
            for check in CHECKS:
                sys.stdout.write(f"{check.id:<4} {check.level:<9} {check.title}\n")
            sys.stdout.flush()
            return 0
        if args.command == "explain":
            try:
                check = get_check(args.check_id.upper())
            except KeyError:
                raise _UsageError(f"unknown check id {args.check_id!r} (see `{prog} list`)") from None
            body = "\n".join(textwrap.wrap(" ".join(check.troubleshooting.split()), 100))
            sys.stdout.write(f"{check.id} — {check.title}\n\n{body}\n")
            sys.stdout.flush()
            return 0
        return _run(args, program)
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except NoRecordings:
        sys.stderr.write(
            f"{program}: error: no recordings to replay: pass --cassettes PATH (a cassette directory or file), "
            f"or --api with an api whose adapter names bundled recordings ({_apis_with_recordings()})\n"
        )
        return 2
    except (_UsageError, ValueError, TypeError) as exc:
        sys.stderr.write(f"{program}: error: {printable(command_line_text(exc))}\n")
        return 2
