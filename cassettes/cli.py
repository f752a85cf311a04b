"""The `cassettes` command line: show, scan, mutate, library.

    cassettes show FILE|NAME          a readable timeline of a cassette (file or library name)
    cassettes scan FILE...            secret scan; exit status 1 when a secret is found
    cassettes mutate FILE|NAME --op SPEC [--op SPEC ...] -o OUT
    cassettes library [--api API] [--names]

Mutation specs follow the grammar of :mod:`cassettes.ops` (``cassettes mutate --help`` lists every op),
the same spelling conformance reports use to name the faults they served.

Exit status: 0 success; 1 secrets found (`scan`, and only then); 2 bad usage, a file that does
not exist or can not be read, or an invalid cassette (`scan` exits 2 when any file could not be
checked, even if another one had secrets). Every error is one line on stderr, no traceback; a
closed output pipe (`| head`) ends the command quietly. `show` prints every text from the file
with control characters escaped (`\x1b`, `\u202e`), so a hostile file can not drive the terminal,
and shows an incomplete recording with a warning line instead of refusing it.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from cassettes import library, ops
from cassettes.errors import CassetteError
from cassettes.files import load, save
from cassettes.format import dumps
from cassettes.model import Cassette, Interaction, header_value
from cassettes.ops import Mutation
from cassettes.secret_scan import raise_if_secrets, scan_cassette, scan_file
from cassettes.sse import split_events

__all__ = ["main", "parse_op"]


def _open(target: str, *, allow_incomplete: bool = False) -> Cassette:
    """A cassette from a file path, else from the bundled library by name."""
    if Path(target).exists():
        return load(target, allow_incomplete=allow_incomplete)
    if "/" in target or os.sep in target or target.endswith(".jsonl"):
        raise CassetteError(f"{target}: file not found")
    if target in library.names():
        return library.load(target)
    raise CassetteError(f"{target}: no such file, and no bundled cassette has that name (cassettes library --names)")


# C0/C1 controls (ESC starts an ANSI sequence), and the invisible characters that reorder or hide text.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: object) -> str:
    """`text` (anything from a cassette) with every control or invisible formatting character escaped."""
    return _UNPRINTABLE.sub(_escape, str(text))


def _one_line(text: str, limit: int) -> str:
    flat = printable(" ".join(text.split()))
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _describe_body(body: bytes) -> str:
    return f"{len(body)} B" if body else "no body"


def _show_interaction(index: int, interaction: Interaction, out: TextIO, width: int) -> None:
    request, response = interaction.request, interaction.response
    out.write(f"#{index} {printable(request.method)} {printable(request.url)}  ({_describe_body(request.body)})\n")
    content_type = printable(header_value(response.headers, "content-type") or "no content-type")
    out.write(f"   <- {response.status} {content_type}, head at {response.t_ms} ms\n")
    body = response.body
    events = split_events(body)
    offset = 0
    cursor = 0
    for chunk in response.chunks:
        stop = offset + len(chunk.data)
        done: list[str] = []
        while cursor < len(events) and events[cursor].end <= stop:
            event = events[cursor]
            # A data-only event has the SSE default type "message"; no fields at all means not SSE.
            name = printable(event.event or ("message" if event.data is not None else "(raw)"))
            excerpt = _one_line(event.data or event.raw.decode("utf-8", "replace"), width)
            done.append(f"{name} {excerpt}")
            cursor += 1
        stall = f" after a {chunk.stall_s} s stall" if chunk.stall_s else ""
        label = done[0] if done else "(inside an event)"
        out.write(f"   [{chunk.t_ms:>9} ms]{stall} {len(chunk.data):>6} B  {label}\n")
        out.writelines(f"   {'':>24}{more}\n" for more in done[1:])
        offset = stop
    end = response.end
    stall = f" after a {end.stall_s} s stall" if end.stall_s else ""
    out.write(f"   [{end.t_ms:>9} ms]{stall} end {end.kind} ({len(response.chunks)} chunks, {len(body)} bytes)\n")


def show(cassette: Cassette, out: TextIO, width: int = 72) -> None:
    """Write the timeline of `cassette` to `out`."""
    title = printable(cassette.name or "cassette")
    out.write(
        f"{title}: api={printable(cassette.api)} model={printable(cassette.model)} "
        f"recorded_at={printable(cassette.recorded_at)}\n"
    )
    if cassette.incomplete is not None:
        out.write(f"  INCOMPLETE RECORDING: {printable(cassette.incomplete)}\n")
    for key, value in cassette.extra.items():
        if key != "name":
            out.write(f"  {printable(key)}: {printable(value)}\n")
    if cassette.source:
        parts = [f"{printable(k)}={printable(v)}" for k, v in cassette.source.items()]
        out.write(f"  source: {'; '.join(parts)}\n")
    for index, interaction in enumerate(cassette.interactions):
        out.write("\n")
        _show_interaction(index, interaction, out, width)


def parse_op(text: str) -> Mutation:
    """The mutation an ``--op`` spec names (see :mod:`cassettes.ops`); ``CassetteError`` when it does not
    parse, naming the valid ops for an unknown one and the op's syntax otherwise."""
    try:
        return ops.parse(text)
    except ops.OpSyntaxError as exc:
        where = "" if exc.spec == text else f" in {text!r}"
        if exc.unknown:
            raise CassetteError(f"unknown --op {exc.spec!r}{where}; {exc.hint} (see cassettes mutate --help)") from None
        raise CassetteError(f"bad --op {exc.spec!r}{where}: {exc.problem} ({exc.hint})") from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cassettes", description="Inspect, scan and mutate streamcassette files.")
    commands = parser.add_subparsers(dest="command", required=True)
    show_cmd = commands.add_parser("show", help="print a readable timeline")
    show_cmd.add_argument("cassette", help="a cassette file or a library name")
    show_cmd.add_argument("--width", type=int, default=72, help="data excerpt length")
    scan_cmd = commands.add_parser("scan", help="secret-scan cassette files (exit 1 on a finding)")
    scan_cmd.add_argument("files", nargs="+", type=Path)
    mutate_cmd = commands.add_parser(
        "mutate",
        help="derive a faulty cassette",
        description="Apply mutation ops to a cassette and write the result.",
        epilog=ops.help_text(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    mutate_cmd.add_argument("cassette", help="a cassette file or a library name")
    mutate_cmd.add_argument(
        "--op", action="append", required=True, metavar="SPEC", help="a mutation spec, e.g. truncate:at=25%%,end=eof"
    )
    mutate_cmd.add_argument("-o", "--output", required=True, help="output file, or - for stdout")
    library_cmd = commands.add_parser("library", help="list the bundled cassettes")
    library_cmd.add_argument("--api", help="only this api")
    library_cmd.add_argument("--names", action="store_true", help="list names, not just counts")
    return parser


def _scan(files: Sequence[Path], out: TextIO, err: TextIO) -> int:
    secrets_found = unchecked = False
    for file in files:
        name = printable(file)
        try:
            findings, problem = scan_file(file)
        except FileNotFoundError:
            err.write(f"cassettes: {name}: file not found\n")  # as `show` and `mutate` say it
            unchecked = True
            continue
        except OSError as exc:
            err.write(f"cassettes: {name}: {printable(exc.strerror or exc)}\n")
            unchecked = True
            continue
        out.writelines(f"{name}: {printable(finding)}\n" for finding in findings)
        secrets_found = secrets_found or bool(findings)
        if problem is not None:
            err.write(f"cassettes: {printable(problem)} (every line was scanned; bodies were not decoded)\n")
            unchecked = True
        elif not findings:
            out.write(f"{name}: no secrets found\n")
    return 2 if unchecked else 1 if secrets_found else 0


def _run(args: argparse.Namespace, out: TextIO) -> int:
    if args.command == "show":
        show(_open(args.cassette, allow_incomplete=True), out, args.width)
        return 0
    if args.command == "scan":
        return _scan(args.files, out, sys.stderr)
    if args.command == "mutate":
        mutation = ops.Mutation(tuple(op for spec in args.op for op in parse_op(spec).ops))
        cassette = mutation(_open(args.cassette))
        if args.output == "-":
            raise_if_secrets(scan_cassette(cassette))
            out.write(dumps(cassette))
        else:
            save(cassette, args.output)
        return 0
    apis = [args.api] if args.api else library.apis()
    total = 0
    for api in apis:
        found = library.names(api)
        total += len(found)
        out.write(f"{api}: {len(found)}\n")
        if args.names:
            out.writelines(f"  {name}\n" for name in found)
    out.write(f"total: {total}\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (see the module docstring)."""
    args = _parser().parse_args(argv)
    try:
        return _run(args, sys.stdout)
    except CassetteError as exc:
        sys.stderr.write(f"cassettes: {printable(exc)}\n")
    except BrokenPipeError:
        # The reader went away (`| head`): nothing left to say; keep the interpreter from
        # complaining when it flushes stdout on exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        sys.stderr.write(f"cassettes: {printable(where)}{printable(exc.strerror or exc)}\n")
    return 2
