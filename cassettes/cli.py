"""The `cassettes` command line: show, scan, mutate, import, library.

    cassettes show FILE|NAME [--adapter MODULE:ATTR]
                                      a readable timeline of a cassette (file or library name)
    cassettes scan FILE...            secret scan; exit status 1 when a secret is found
    cassettes mutate FILE|NAME --op SPEC [--op SPEC ...] -o OUT [--adapter MODULE:ATTR]
    cassettes import BODY|- --api API -o OUT [--adapter MODULE:ATTR] [--status N] [--content-type T]
                     [--header 'NAME: VALUE' ...] [--chunking event|line|size:N] [--model ID] [--url URL]
                                      a cassette from a response body recorded by other means
    cassettes scrub FILE -o OUT [--adapter MODULE:ATTR]
                                      the cassette with every secret the scan finds replaced, still replayable
    cassettes library [--api API] [--names]

Mutation specs follow the grammar of :mod:`cassettes.mutation_specs` (``cassettes mutate --help`` lists every op),
the same spelling conformance reports use to name the faults they served. What an api's bytes look
like (framing, terminal marker, error bodies) comes from its adapter's wire profile, found by the
cassette's api among the installed adapters; ``--adapter`` names the declaration of one that is not
installed (an ``Adapter``, a ``WireApi`` or a ``WireProfile``).

``import`` is :func:`cassettes.importing.import_body` on a body file (``-``: standard input): the bytes
kept exactly, cut into chunks by ``--chunking`` (default ``event``: one per frame of the api's framing),
a synthetic request (the api's adapter's own, for a one-word prompt to ``--model``, else the model the
stream names), and a header that says the chunk timing and the request are synthetic. The result goes
through the recorder's scrub and secret scan: a body carrying a key is refused, nothing written. A body
the api's framing cannot read is refused; one that ends inside a frame or without the api's terminal
marker is imported with a ``cassettes: warning: …`` line (a cut stream is a real recording). An output
file that exists is replaced, as ``mutate`` replaces one; the body's own file never is.

``scrub`` is :func:`cassettes.redact.scrub_secrets`: for a cassette that already holds a secret
(written by hand, by another tool, or before the scan opened payload envelopes), every spelling the
scan knows is replaced, inside base64 envelopes and event-stream messages too (their checksums
recomputed), and the header marks the body ``redacted``. A body it can not open is refused.

Exit status: 0 success; 1 secrets found (`scan`, and only then); 2 bad usage, a file that does
not exist or can not be read, or an invalid cassette (`scan` exits 2 when any file could not be
checked, even if another one had secrets; `library --api` exits 2 for an api that neither the
library nor an installed adapter knows). Every error is one `cassettes: error: …` line on stderr,
no traceback; a closed output pipe (`| head`) ends the command quietly. `show` prints every text
from the file with control characters escaped (`\x1b`, `\u202e`), so a hostile file can not drive
the terminal, and shows an incomplete recording with a warning line instead of refusing it.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import stat
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TextIO

from cassettes import library, mutation_specs
from cassettes.errors import CassetteError, NotACassetteFile, command_line_text
from cassettes.files import load, save
from cassettes.format import dumps
from cassettes.importing import import_body, parse_chunking, read_body, resolve_api
from cassettes.model import Cassette, Interaction, header_value
from cassettes.mutation_specs import Mutation
from cassettes.mutations import resolve_profile
from cassettes.redact import scrub_secrets
from cassettes.regular_files import file_kind
from cassettes.secret_scan import raise_if_secrets, scan_cassette, scan_file
from normalize.suggest import did_you_mean
from normalize.wire import FrameSpan, WireProfile, known_profiles

__all__ = ["load_declaration", "load_profile", "main", "parse_op"]


def _open(target: str, *, allow_incomplete: bool = False) -> Cassette:
    """A cassette from a file path, else from the bundled library by name."""
    if Path(target).exists():
        return load(target, allow_incomplete=allow_incomplete)
    if "/" in target or os.sep in target or target.endswith(".jsonl"):
        raise CassetteError(f"{target}: file not found")
    if target in library.names():
        return library.load(target)
    raise CassetteError(f"{target}: no such file, and no bundled cassette has that name (cassettes library --names)")


#: How `show` and `library` name each of `cassettes.model.SYNTHETIC_PARTS`.
_PART_NAMES = {"timing": "timing (chunk boundaries and times)", "request": "request", "body": "response body"}

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


def _terminal_starts(profile: WireProfile, body: bytes) -> set[int]:
    """Where the frames carrying the terminal marker start (nothing when the profile cannot tell)."""
    try:
        return {start for start, _, _ in profile.terminal_edits(body)}
    except Exception:  # the adapter's strip function failed on this body: show it unmarked
        return set()


def _frame_label(profile: WireProfile, span: FrameSpan, payload: bytes | None, terminal: set[int], width: int) -> str:
    unit = profile.framing.unit
    # A data-only SSE event has the default type "message"; a frame without a payload shows its bytes.
    default = "(raw)" if span.payload is None else "message" if unit == "event" else unit
    name = printable(span.name or default)
    shown = payload if payload is not None else span.payload if span.payload is not None else span.raw
    mark = "  <- terminal marker" if span.start in terminal else ""
    return f"{name} {_one_line(shown.decode('utf-8', 'replace'), width)}{mark}"


def _show_interaction(index: int, interaction: Interaction, profile: WireProfile, out: TextIO, width: int) -> None:
    request, response = interaction.request, interaction.response
    out.write(f"#{index} {printable(request.method)} {printable(request.url)}  ({_describe_body(request.body)})\n")
    content_type = printable(header_value(response.headers, "content-type") or "no content-type")
    out.write(f"   <- {response.status} {content_type}, head at {response.t_ms} ms\n")
    body = response.body
    frames = profile.frames(body) if response.status < 300 else [(span, span.payload) for span in _whole(body)]
    terminal = _terminal_starts(profile, body) if response.status < 300 else set[int]()
    unit = profile.framing.unit
    offset = 0
    cursor = 0
    for chunk in response.chunks:
        stop = offset + len(chunk.data)
        done: list[str] = []
        while cursor < len(frames) and frames[cursor][0].end <= stop:
            span, payload = frames[cursor]
            done.append(_frame_label(profile, span, payload, terminal, width))
            cursor += 1
        stall = f" after a {chunk.stall_s} s stall" if chunk.stall_s else ""
        label = done[0] if done else f"(inside {'an' if unit[:1] in 'aeiou' else 'a'} {unit})"
        out.write(f"   [{chunk.t_ms:>9} ms]{stall} {len(chunk.data):>6} B  {label}\n")
        out.writelines(f"   {'':>24}{more}\n" for more in done[1:])
        offset = stop
    end = response.end
    stall = f" after a {end.stall_s} s stall" if end.stall_s else ""
    out.write(f"   [{end.t_ms:>9} ms]{stall} end {end.kind} ({len(response.chunks)} chunks, {len(body)} bytes)\n")


def _whole(body: bytes) -> list[FrameSpan]:
    """An error response's body as one frame: it is a document, not a stream."""
    return [FrameSpan(0, len(body), body, None, body)] if body else []


def show(cassette: Cassette, out: TextIO, width: int = 72, *, profile: WireProfile | None = None) -> None:
    """Write the timeline of `cassette` to `out`, its bodies cut into the frames of the api's framing
    (as `profile` reads them, else the profile declared for the cassette's api)."""
    profile = resolve_profile(cassette, profile=profile)
    title = printable(cassette.name or "cassette")
    out.write(
        f"{title}: api={printable(cassette.api)} model={printable(cassette.model)} "
        f"recorded_at={printable(cassette.recorded_at)} framing={printable(profile.framing.name)}\n"
    )
    if cassette.incomplete is not None:
        out.write(f"  INCOMPLETE RECORDING: {printable(cassette.incomplete)}\n")
    synthetic = cassette.synthetic
    if synthetic:
        parts = ", ".join(
            _PART_NAMES[part] + ("" if how == "synthetic" else f" ({printable(how)})")
            for part, how in synthetic.items()
        )
        out.write(f"  SYNTHETIC, not as a server sent it: {parts}\n")
    for key, value in cassette.extra.items():
        if key != "name" and key not in synthetic:
            out.write(f"  {printable(key)}: {printable(value)}\n")
    if cassette.source:
        parts = [f"{printable(k)}={printable(v)}" for k, v in cassette.source.items()]
        out.write(f"  source: {'; '.join(parts)}\n")
    for index, interaction in enumerate(cassette.interactions):
        out.write("\n")
        _show_interaction(index, interaction, profile, out, width)


def parse_op(text: str) -> Mutation:
    """The mutation an ``--op`` spec names (see :mod:`cassettes.mutation_specs`); ``CassetteError`` when it does not
    parse, naming the valid ops for an unknown one and the op's syntax otherwise."""
    try:
        return mutation_specs.parse(text)
    except mutation_specs.OpSyntaxError as exc:
        where = "" if exc.spec == text else f" in {text!r}"
        if exc.unknown:
            raise CassetteError(f"unknown --op {exc.spec!r}{where}; {exc.hint} (see cassettes mutate --help)") from None
        raise CassetteError(f"bad --op {exc.spec!r}{where}: {exc.problem} ({exc.hint})") from None


_ADAPTER_HELP = (
    "the declaration of the cassette's api, when no installed adapter declares it (an Adapter, WireApi or WireProfile)"
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cassettes", description="Inspect, scan, mutate and import streamcassette files."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    show_cmd = commands.add_parser("show", help="print a readable timeline")
    show_cmd.add_argument("cassette", help="a cassette file or a library name")
    show_cmd.add_argument("--width", type=int, default=72, help="data excerpt length")
    show_cmd.add_argument("--adapter", metavar="MODULE:ATTR", help=_ADAPTER_HELP)
    scan_cmd = commands.add_parser("scan", help="secret-scan cassette files (exit 1 on a finding)")
    scan_cmd.add_argument("files", nargs="+", type=Path)
    mutate_cmd = commands.add_parser(
        "mutate",
        help="derive a faulty cassette",
        description="Apply mutation ops to a cassette and write the result.",
        epilog=mutation_specs.help_text(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    mutate_cmd.add_argument("cassette", help="a cassette file or a library name")
    mutate_cmd.add_argument(
        "--op", action="append", required=True, metavar="SPEC", help="a mutation spec, e.g. truncate:at=25%%,end=eof"
    )
    mutate_cmd.add_argument("-o", "--output", required=True, help="output file, or - for stdout")
    mutate_cmd.add_argument("--adapter", metavar="MODULE:ATTR", help=_ADAPTER_HELP)
    _import_parser(commands)
    scrub_cmd = commands.add_parser(
        "scrub", help="replace every secret in a cassette's responses (the result still replays)"
    )
    scrub_cmd.add_argument("cassette", help="a cassette file")
    scrub_cmd.add_argument("-o", "--output", required=True, help="output file, or - for stdout")
    scrub_cmd.add_argument("--adapter", metavar="MODULE:ATTR", help=_ADAPTER_HELP)
    library_cmd = commands.add_parser(
        "library", help="list the bundled cassettes and which of their parts are synthetic"
    )
    library_cmd.add_argument("--api", help="only this api (an api no adapter declares and no cassette has is an error)")
    library_cmd.add_argument(
        "--names", action="store_true", help="list names (with their synthetic parts), not just counts"
    )
    return parser


def _scan(files: Sequence[Path], out: TextIO, err: TextIO) -> int:
    secrets_found = unchecked = False
    for file in files:
        name = printable(file)
        try:
            findings, problem = scan_file(file)
        except FileNotFoundError:
            err.write(f"cassettes: error: {name}: file not found\n")  # as `show` and `mutate` say it
            unchecked = True
            continue
        except NotACassetteFile as exc:  # a FIFO, a directory: refused unread; the other files still scanned
            err.write(f"cassettes: error: {printable(exc)}\n")
            unchecked = True
            continue
        except OSError as exc:
            err.write(f"cassettes: error: {name}: {printable(exc.strerror or exc)}\n")
            unchecked = True
            continue
        out.writelines(f"{name}: {printable(finding)}\n" for finding in findings)
        secrets_found = secrets_found or bool(findings)
        if problem is not None:
            err.write(f"cassettes: error: {printable(problem)} (every line was scanned; bodies were not decoded)\n")
            unchecked = True
        elif not findings:
            out.write(f"{name}: no secrets found\n")
    return 2 if unchecked else 1 if secrets_found else 0


def load_declaration(spec: str) -> object:
    """The object ``MODULE:ATTR`` names (imported, not registered). Raises ``CassetteError`` with a
    readable message."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise CassetteError(f"--adapter expects MODULE:ATTR, got {spec!r}")
    try:
        value: object = importlib.import_module(module_name)
        for part in attr.split("."):
            value = getattr(value, part)
    except Exception as exc:  # the module's own failure, reported in one line
        raise CassetteError(f"--adapter {spec}: {type(exc).__name__}: {exc}") from None
    return value


def load_profile(spec: str) -> WireProfile:
    """The wire profile ``MODULE:ATTR`` names: a ``WireProfile``, or a declaration carrying one as
    ``profile`` (an ``Adapter``, a ``WireApi``). Raises ``CassetteError`` with a readable message."""
    value = load_declaration(spec)
    profile = value if isinstance(value, WireProfile) else getattr(value, "profile", None)
    if not isinstance(profile, WireProfile):
        raise CassetteError(f"--adapter {spec} is a {type(value).__name__}, which declares no wire profile")
    return profile


def _with_profile(mutation: Mutation, profile: WireProfile | None) -> Mutation:
    """The ops that read the api's bytes, given the declaration named on the command line."""
    if profile is None:
        return mutation
    return Mutation(tuple(replace(op, profile=profile) if hasattr(op, "profile") else op for op in mutation.ops))


def _run(args: argparse.Namespace, out: TextIO) -> int:
    if args.command == "import":
        return _import(args, out, sys.stderr)
    # The declaration is passed to what needs it, never registered: a library caller's process keeps
    # the profiles it had.
    profile = load_profile(args.adapter) if getattr(args, "adapter", None) else None
    try:
        return _command(args, out, profile)
    except (CassetteError, OSError):
        raise
    except Exception as exc:  # a declaration's own code (its framing, its ending) failed on this cassette
        raise CassetteError(
            f"reading the cassette with the api's wire profile failed: {type(exc).__name__}: {exc}"
        ) from None


def _known_api(api: str) -> str:
    """``api`` when the library holds recordings of it or an installed adapter declares it (such an api
    may have none bundled: it lists as 0); else ``CassetteError`` naming the close ones, or every one."""
    known = {*library.apis(), *known_profiles()}
    if api in known:
        return api
    raise CassetteError(f"unknown --api {api!r}; {did_you_mean(api, known, what='apis')}")


def _command(args: argparse.Namespace, out: TextIO, profile: WireProfile | None) -> int:
    if args.command == "show":
        show(_open(args.cassette, allow_incomplete=True), out, args.width, profile=profile)
        return 0
    if args.command == "scan":
        return _scan(args.files, out, sys.stderr)
    if args.command == "mutate":
        mutation = _with_profile(
            mutation_specs.Mutation(tuple(op for spec in args.op for op in parse_op(spec).ops)), profile
        )
        cassette = mutation(_open(args.cassette))
        if args.output == "-":
            raise_if_secrets(scan_cassette(cassette))
            out.write(dumps(cassette))
        else:
            save(cassette, args.output)
        return 0
    if args.command == "scrub":
        cleaned = scrub_secrets(_open(args.cassette), profile=profile)
        if args.output == "-":
            out.write(dumps(cleaned))
        else:
            save(cleaned, args.output)
        return 0
    return _library(_known_api(args.api) if args.api else None, args.names, out)


def _library(api: str | None, with_names: bool, out: TextIO) -> int:
    """Counts per api (names too, each with the parts its header marks synthetic), the total, and how
    many cassettes have each synthetic part."""
    total = 0
    parts: dict[str, int] = {}
    for listed in [api] if api else library.apis():
        found = library.names(listed)
        total += len(found)
        out.write(f"{listed}: {len(found)}\n")
        for name in found:
            marks = library.synthetic(name)
            for part in marks:
                parts[part] = parts.get(part, 0) + 1
            if with_names:
                out.write(f"  {name}  (synthetic: {', '.join(marks)})\n" if marks else f"  {name}\n")
    out.write(f"total: {total}\n")
    if parts:
        counts = ", ".join(f"{_PART_NAMES[part]} in {count}" for part, count in parts.items())
        out.write(f"synthetic, not as a server sent it: {counts} (cassettes show NAME tells which)\n")
    return 0


# -- import ----------------------------------------------------------------------------------------

_IMPORT_EPILOG = """\
examples:
  cassettes import body.sse --api API -o tests/cassettes/text.jsonl
  curl -sN ... | cassettes import - --api API --model MODEL -o reply.jsonl
  cassettes import error.json --api API --status 429 --header 'retry-after: 7' -o rate_limited.jsonl
  cassettes import body.jsonl --adapter my_package:ADAPTER -o mine.jsonl

API is the model.api of an installed adapter (`cassettes library` lists those with bundled recordings).

The header marks the chunk timing and the request synthetic; the body's bytes are kept exactly. Replay
the result with `streamfns replay OUT`, serve it to the harness with `conformance run ... --cassettes`.
"""


def _import_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:  # pyright: ignore[reportPrivateUsage] - argparse's own type
    cmd = commands.add_parser(
        "import",
        help="make a cassette from a response body recorded by other means",
        description="Wrap a recorded response body (a file, or - for stdin) in a replayable cassette.",
        epilog=_IMPORT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cmd.add_argument("body", metavar="BODY", help="the body file, or - for standard input")
    cmd.add_argument("--api", help="the wire api that sent the body (model.api; default: the --adapter's)")
    cmd.add_argument("-o", "--output", required=True, help="output cassette file, or - for stdout")
    cmd.add_argument("--adapter", metavar="MODULE:ATTR", help="the api's declaration, when no installed adapter has it")
    cmd.add_argument("--status", metavar="N", default="200", help="the response status (default 200)")
    cmd.add_argument(
        "--content-type",
        metavar="T",
        help="the response content type (default: the framing's stream type; application/json for an error status)",
    )
    cmd.add_argument(
        "--chunking",
        metavar="HOW",
        default="event",
        help="event (one chunk per frame of the api's framing; the default), line, or size:N (N bytes each)",
    )
    cmd.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="a response header (repeatable: retry-after, an error type); kept only as the recorder keeps one",
    )
    cmd.add_argument("--model", metavar="ID", help="the model (default: the one the stream names, else unknown)")
    cmd.add_argument("--url", help="the URL of the synthetic request (default: where the api's adapter sends it)")


def _status(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise CassetteError(f"--status {text!r} is not a number (an HTTP status, 100-599)") from None


def _header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition(":")
    if not sep or not name.strip() or any(c.isspace() for c in name.strip()):
        raise CassetteError(f"--header {text!r}: expected 'NAME: VALUE'")
    return name.strip().lower(), value.strip()


def _check_output(output: str, body: str) -> None:
    """Refuse an output that is not a file path, or the body's own file (imported over, it would be lost)."""
    if output == "-":
        return
    try:
        found = os.stat(output)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(found.st_mode):
        raise CassetteError(
            f"{output}: it is {file_kind(found.st_mode)}; the output must be a file path (or - for stdout)"
        )
    if body != "-" and os.path.exists(body) and os.path.samefile(output, body):
        raise CassetteError(f"{output} is the body file itself; write the cassette to another path")


def _import(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    declaration = load_declaration(args.adapter) if args.adapter else None
    api: str | None = args.api
    if api is None:
        if declaration is None:
            known = ", ".join(sorted(known_profiles())) or "none"
            raise CassetteError(f"import needs --api API: the wire api that sent the body (known apis: {known})")
        # The declaration names its api; resolve_api below refuses one that declares no profile.
        api = getattr(getattr(declaration, "profile", declaration), "api", None)
        if not isinstance(api, str):
            raise CassetteError(f"--adapter {args.adapter} declares no wire profile; give --api")
    resolve_api(api, declaration)  # an unknown api is refused before the body is read
    status = _status(args.status)
    chunking = parse_chunking(args.chunking)
    headers = [_header(text) for text in args.header]
    _check_output(args.output, args.body)
    body = read_body(args.body)
    notes: list[str] = []
    cassette = import_body(
        body,
        api=api,
        declaration=declaration,
        status=status,
        content_type=args.content_type,
        headers=headers,
        chunking=chunking,
        model=args.model,
        url=args.url,
        on_warning=notes.append,
    )
    err.writelines(f"cassettes: warning: {printable(note)}\n" for note in notes)
    if args.output == "-":
        out.write(dumps(cassette))
        return 0
    save(cassette, args.output)
    response = cassette.interactions[0].response
    out.write(
        f"{printable(args.output)}: api={printable(api)} model={printable(cassette.model)} status={response.status}, "
        f"{len(response.chunks)} chunks ({printable(args.chunking)}), {len(response.body)} bytes; "
        "synthetic: timing, request\n"
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (see the module docstring)."""
    args = _parser().parse_args(argv)
    try:
        return _run(args, sys.stdout)
    except CassetteError as exc:
        sys.stderr.write(f"cassettes: error: {printable(command_line_text(exc))}\n")
    except BrokenPipeError:
        # The reader went away (`| head`): nothing left to say; keep the interpreter from
        # complaining when it flushes stdout on exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        sys.stderr.write(f"cassettes: error: {printable(where)}{printable(exc.strerror or exc)}\n")
    return 2
