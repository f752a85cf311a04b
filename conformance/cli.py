"""The command line: ``conformance run pkg.module:attr [options]`` (also ``python -m conformance``).

Exit status: 0 — conformant or conformant with limitations; 1 — non-conformant; 2 — usage error
(bad arguments, a target that cannot be imported, no recordings to replay).

``conformance list`` prints the check ids and titles; ``conformance explain ID`` prints a check's
troubleshooting text.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

from conformance.capabilities import KNOWN_APIS, Capabilities
from conformance.checks import CHECKS, get_check
from conformance.report import Report
from conformance.runner import run_sync
from conformance.target import Target, load_target

__all__ = ["main"]

_FLAGS: dict[str, str] = {
    "tools": "tool_calls",
    "parallel_tools": "parallel_tool_calls",
    "thinking": "thinking",
    "usage": "usage_in_stream",
    "images": "images",
    "retries": "retries",
}


class _UsageError(Exception):
    pass


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description="Check a StreamFn against the streamfns contract.")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser(
        "run",
        help="run the checks against an adapter",
        description="TARGET is 'pkg.module:attr': a StreamFn, a zero-argument factory returning one, or a "
        "conformance.Target (which carries its capabilities, so no capability flags are needed).",
    )
    run.add_argument("target", help="pkg.module:attr")
    run.add_argument("--api", choices=KNOWN_APIS, help="the wire api, when it is one the harness knows")
    run.add_argument("--no-http", action="store_true", help="the adapter sends no HTTP (HTTP checks are unsupported)")
    run.add_argument("--tools", action="store_true", help="the adapter emits tool calls")
    run.add_argument("--parallel-tools", action="store_true", help="several tool calls in one message")
    run.add_argument("--thinking", action="store_true", help="the adapter emits thinking blocks")
    run.add_argument("--usage", action="store_true", help="usage is reported in the stream")
    run.add_argument("--images", action="store_true", help="user messages may carry images")
    run.add_argument("--retries", action="store_true", help="the adapter retries before output itself")
    run.add_argument("--cassettes", action="append", metavar="PATH", help="cassette directory or file (repeatable)")
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
    commands.add_parser("list", help="list the checks")
    explain = commands.add_parser("explain", help="print a check's troubleshooting text")
    explain.add_argument("check_id")
    return parser


def _capabilities(args: argparse.Namespace, loaded: Any) -> Capabilities:
    flags = {field: True for option, field in _FLAGS.items() if getattr(args, option)}
    if flags.get("parallel_tool_calls"):
        flags["tool_calls"] = True
    if args.no_http:
        flags["http"] = False
    if args.api:
        flags["api"] = args.api
    base = loaded.capabilities if isinstance(loaded, Target) else Capabilities()
    try:
        return dataclasses.replace(base, **flags)
    except ValueError as exc:
        raise _UsageError(str(exc)) from None


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
        return json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n"
    if form == "junit":
        return report.to_junit()
    return report.to_text()


def _run(args: argparse.Namespace) -> int:
    # Like ``python -m``: a target in the current directory imports without being installed.
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    loaded = load_target(args.target)
    groups: list[str] = args.checks or []
    checks = [item.strip() for group in groups for item in group.split(",") if item.strip()] or None
    report = run_sync(
        loaded,
        capabilities=_capabilities(args, loaded),
        cassettes=args.cassettes,
        checks=checks,
        xfail=_xfail(args.xfail),
        name=args.name or (args.target if not isinstance(loaded, Target) else None),
    )
    rendered = _render(report, args.format)
    if args.report is not None:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(rendered, encoding="utf-8")
        sys.stdout.write(report.to_text() if args.format != "text" else rendered)
        sys.stdout.write(f"report written to {args.report}\n")
    else:
        sys.stdout.write(rendered)
    return 0 if report.ok else 1


def main(argv: list[str] | None = None, *, prog: str = "conformance") -> int:
    """Run the command line; returns the exit status (see the module docstring). ``prog`` names the
    command in usage messages (``streamfns conformance`` when another CLI delegates here)."""
    parser = _parser(prog)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse reports usage errors by exiting with status 2
        return int(exc.code or 0)
    try:
        if args.command == "list":
            for check in CHECKS:
                sys.stdout.write(f"{check.id:<4} {check.title}\n")
            return 0
        if args.command == "explain":
            try:
                check = get_check(args.check_id.upper())
            except KeyError:
                raise _UsageError(f"unknown check id {args.check_id!r} (see `conformance list`)") from None
            body = "\n".join(textwrap.wrap(" ".join(check.troubleshooting.split()), 100))
            sys.stdout.write(f"{check.id} — {check.title}\n\n{body}\n")
            return 0
        return _run(args)
    except (_UsageError, ValueError, TypeError) as exc:
        sys.stderr.write(f"conformance: error: {exc}\n")
        return 2
