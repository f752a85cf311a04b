"""The mutation grammar: one spelling for every fault, shared by ``cassettes mutate --op`` and reports.

A *spec* names a mutation as text; :func:`parse` turns it into a :class:`Mutation` (a callable
``Cassette -> Cassette``) and ``Mutation.spec`` writes the canonical spelling back, so a harness
that names its faults with these objects prints exactly what ``cassettes mutate`` accepts::

    truncate:bytes=1234,end=eof            one op: its name, a colon, comma-separated arguments
    drop-terminal+truncate:bytes=900       ops joined by '+' apply left to right
    rechunk:random,seed=1,max=17

Arguments are ``key=value`` or, where :data:`OPS` says so, positional. Numbers are plain decimals;
no value may contain ``,`` or ``+``. :func:`parse` raises :class:`OpSyntaxError` (a ``CassetteError``)
naming the op and its syntax, or — for an unknown op — every valid op. The syntax table
(:data:`OPS`, rendered by :func:`help_text`) is the one ``cassettes mutate --help`` prints.

``parse(m.spec) == m`` holds for every mutation built here, and the canonical spec is stable: equal
mutations have equal specs.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Literal

from cassettes import mutations
from cassettes.errors import CassetteError
from cassettes.model import END_KINDS, Cassette, EndKind
from normalize.wire import WireProfile

__all__ = [
    "OPS",
    "CorruptJson",
    "DropTerminal",
    "EmptyBody",
    "KeepInteraction",
    "Mutation",
    "Op",
    "OpSyntax",
    "OpSyntaxError",
    "Rechunk",
    "Stall",
    "Status",
    "StreamError",
    "Truncate",
    "help_text",
    "parse",
]

Strategy = Literal["random", "split_crlf", "split_utf8"]
#: Positional rechunk strategies as spelled in a spec.
_STRATEGY_NAMES: dict[str, Strategy] = {"random": "random", "crlf": "split_crlf", "utf8": "split_utf8"}
_STRATEGY_SPELLING: dict[Strategy, str] = {value: key for key, value in _STRATEGY_NAMES.items()}
#: A ``retry-after`` header value the grammar can carry: seconds, possibly fractional.
_SECONDS = re.compile(r"\d+(\.\d+)?")
#: An api name as the grammar carries it: anything without the grammar's own separators.
_API = re.compile(r"[^\s,+=]+")


def _check_api(api: str | None) -> None:
    if api is not None and not _API.fullmatch(api):
        raise CassetteError(f"api {api!r} is not an api name (no spaces, commas, plus or equal signs)")


def _api_suffix(api: str | None) -> str:
    return f",api={api}" if api else ""


class OpSyntaxError(CassetteError):
    """A spec that does not parse. ``spec`` is the op at fault, ``op`` its name (None for an unknown op),
    ``problem`` what is wrong and ``hint`` the op's syntax or, for an unknown op, the valid ops."""

    def __init__(self, spec: str, problem: str, *, op: str | None) -> None:
        self.spec = spec
        self.problem = problem
        self.op = op
        valid = ", ".join(dict.fromkeys(item.name for item in OPS))
        self.hint = f"valid ops: {valid}" if op is None else f"syntax: {_syntax_of(op)}"
        super().__init__(f"{problem} ({self.hint})")

    @property
    def unknown(self) -> bool:
        """True when the spec names no known op."""
        return self.op is None


def _number(value: float) -> str:
    """A plain decimal that reads back as the same float (``30`` for ``30.0``; never an exponent, whose
    ``+`` would split the spec)."""
    number = float(value)
    if number.is_integer():
        return str(int(number))
    return format(Decimal(repr(number)), "f")


def _share(fraction: float) -> str:
    """A fraction as a percentage when that reads back exactly (``25%``), else as the fraction."""
    percent = _number(fraction * 100)
    return f"{percent}%" if float(percent) / 100 == fraction else _number(fraction)


@dataclass(frozen=True, slots=True)
class Rechunk:
    """Cut the body differently; the bytes stay identical (see :func:`cassettes.mutations.rechunk`)."""

    strategy: int | Strategy
    seed: int = 0
    max_size: int = 64

    def __post_init__(self) -> None:
        if isinstance(self.strategy, int) and self.strategy < 1:
            raise CassetteError("rechunk size must be at least 1")
        if self.max_size < 1:
            raise CassetteError("rechunk max must be at least 1")

    @property
    def spec(self) -> str:
        """``rechunk:N``, ``rechunk:random,seed=S,max=M``, ``rechunk:crlf`` or ``rechunk:utf8``."""
        if isinstance(self.strategy, int):
            return f"rechunk:{self.strategy}"
        if self.strategy == "random":
            return f"rechunk:random,seed={self.seed},max={self.max_size}"
        return f"rechunk:{_STRATEGY_SPELLING[self.strategy]}"

    def __call__(self, cassette: Cassette) -> Cassette:
        """The cassette re-cut."""
        return mutations.rechunk(cassette, self.strategy, seed=self.seed, max_size=self.max_size)


@dataclass(frozen=True, slots=True)
class Truncate:
    """Keep the first ``bytes`` bytes, the first ``chunks`` chunks, or the fraction ``at`` (0–1) of each
    body, then end with ``end`` (see :func:`cassettes.mutations.truncate`). Exactly one of the three."""

    bytes: int | None = None
    chunks: int | None = None
    at: float | None = None
    end: EndKind = "reset"

    def __post_init__(self) -> None:
        given = [name for name in ("bytes", "chunks", "at") if getattr(self, name) is not None]
        if len(given) != 1:
            raise CassetteError("truncate needs exactly one of bytes=N, chunks=N or at=P%")
        if (self.bytes or 0) < 0 or (self.chunks or 0) < 0:
            raise CassetteError("truncate counts must not be negative")
        if self.at is not None and not 0.0 <= self.at <= 1.0:
            raise CassetteError("truncate at= must be between 0% and 100%")
        if self.end not in END_KINDS:
            raise CassetteError(f"truncate end must be one of {', '.join(END_KINDS)}")

    @property
    def spec(self) -> str:
        """``truncate:bytes=N,end=E`` (or ``chunks=N`` / ``at=P%``)."""
        if self.bytes is not None:
            cut = f"bytes={self.bytes}"
        elif self.chunks is not None:
            cut = f"chunks={self.chunks}"
        else:
            cut = f"at={_share(self.at or 0.0)}"
        return f"truncate:{cut},end={self.end}"

    def __call__(self, cassette: Cassette) -> Cassette:
        """The cassette cut short."""
        if self.at is None:
            return mutations.truncate(cassette, after_bytes=self.bytes, after_chunks=self.chunks, end=self.end)
        for index, interaction in enumerate(cassette.interactions):
            keep = int(len(interaction.response.body) * self.at)
            cassette = mutations.truncate(cassette, after_bytes=keep, end=self.end, interaction=index)
        return cassette


@dataclass(frozen=True, slots=True)
class Stall:
    """Go silent ``seconds`` before chunk ``chunk`` (the chunk count: before the end)."""

    chunk: int
    seconds: float

    def __post_init__(self) -> None:
        if self.chunk < 0 or not 0 <= self.seconds < math.inf:
            raise CassetteError("stall chunk and seconds must be non-negative (and seconds finite)")

    @property
    def spec(self) -> str:
        """``stall:chunk=N,seconds=S``."""
        return f"stall:chunk={self.chunk},seconds={_number(self.seconds)}"

    def __call__(self, cassette: Cassette) -> Cassette:
        """The cassette with the silence."""
        return mutations.stall(cassette, self.chunk, self.seconds)


@dataclass(frozen=True, slots=True)
class Status:
    """Answer ``code`` with the vendor-shaped error body (see :func:`cassettes.mutations.status_override`).

    ``retry_after``: a number of seconds, None (no header), or ``"auto"`` — ``1`` for a 429, none
    otherwise — which is stored as the value it stands for.
    """

    code: int
    retry_after: str | None = "auto"
    #: The api whose error body to send, when it is not the cassette's.
    api: str | None = None
    #: The api's wire profile, when the caller has it (else the one declared for the api).
    profile: WireProfile | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        _check_api(self.api)
        if not 100 <= self.code <= 599:
            raise CassetteError(f"status code {self.code} is not an HTTP status")
        if self.retry_after == "auto":  # stored as what is sent, so equal mutations compare equal
            object.__setattr__(self, "retry_after", self._default)
        elif self.retry_after is not None and not _SECONDS.fullmatch(self.retry_after):
            raise CassetteError(f"retry-after must be a number of seconds or none, not {self.retry_after!r}")

    @property
    def _default(self) -> str | None:
        return "1" if self.code == 429 else None

    @property
    def spec(self) -> str:
        """``status:CODE``, with ``retry-after=S|none`` when it differs from the default and ``api=API``."""
        wait = "" if self.retry_after == self._default else f",retry-after={self.retry_after or 'none'}"
        return f"status:{self.code}{wait}{_api_suffix(self.api)}"

    def __call__(self, cassette: Cassette) -> Cassette:
        """The cassette answering the error."""
        return mutations.status_override(
            cassette, self.code, retry_after=self.retry_after, api=self.api, profile=self.profile
        )


@dataclass(frozen=True, slots=True)
class EmptyBody:
    """Keep status and headers, send no body bytes."""

    @property
    def spec(self) -> str:
        """``empty-body``."""
        return "empty-body"

    def __call__(self, cassette: Cassette) -> Cassette:
        """The cassette without a body."""
        return mutations.empty_body(cassette)


@dataclass(frozen=True, slots=True)
class DropTerminal:
    """Remove the end-of-stream marker of ``api`` (default: the cassette's api), as the api's wire
    profile says (``profile``, when the caller has it; else the one declared for the api)."""

    api: str | None = None
    profile: WireProfile | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        _check_api(self.api)

    @property
    def spec(self) -> str:
        """``drop-terminal`` or ``drop-terminal:api=API``."""
        return "drop-terminal" if self.api is None else f"drop-terminal:api={self.api}"

    def __call__(self, cassette: Cassette) -> Cassette:
        """The cassette without its terminal marker."""
        return mutations.drop_terminal(cassette, api=self.api, profile=self.profile)


@dataclass(frozen=True, slots=True)
class CorruptJson:
    """Cut the ``index``-th frame's JSON payload in half (negative counts from the end); the frames are
    read with ``profile`` when the caller has it, else as the cassette's api declares them."""

    index: int = 0
    api: str | None = None
    profile: WireProfile | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        _check_api(self.api)

    @property
    def spec(self) -> str:
        """``corrupt-json:N`` (with ``api=API`` when the frames are read as another api's)."""
        return f"corrupt-json:{self.index}{_api_suffix(self.api)}"

    def __call__(self, cassette: Cassette) -> Cassette:
        """The cassette with one broken payload."""
        return mutations.corrupt_json(cassette, self.index, api=self.api, profile=self.profile)


@dataclass(frozen=True, slots=True)
class StreamError:
    """Keep ``after`` frames, then send the api's in-stream error frame (see
    :func:`cassettes.mutations.stream_error`); the frames and the error are read with ``profile`` when
    the caller has it, else as the cassette's api declares them."""

    after: int
    api: str | None = None
    profile: WireProfile | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        _check_api(self.api)
        if self.after < 0:
            raise CassetteError("stream-error after= must not be negative")

    @property
    def spec(self) -> str:
        """``stream-error:after=N`` (with ``api=API`` when it is another api's error)."""
        return f"stream-error:after={self.after}{_api_suffix(self.api)}"

    def __call__(self, cassette: Cassette) -> Cassette:
        """The cassette failing mid-way with the vendor's error."""
        return mutations.stream_error(cassette, self.after, api=self.api, profile=self.profile)


@dataclass(frozen=True, slots=True)
class KeepInteraction:
    """Keep only interaction ``index`` (0-based; negative counts from the end)."""

    index: int

    @property
    def spec(self) -> str:
        """``interaction:N``."""
        return f"interaction:{self.index}"

    def __call__(self, cassette: Cassette) -> Cassette:
        """The cassette with that one interaction."""
        count = len(cassette.interactions)
        if not -count <= self.index < count:
            raise CassetteError(f"interaction {self.index} does not exist ({count} recorded)")
        return replace(cassette, interactions=(cassette.interactions[self.index],))


Op = Rechunk | Truncate | Stall | Status | EmptyBody | DropTerminal | CorruptJson | StreamError | KeepInteraction


@dataclass(frozen=True, slots=True)
class Mutation:
    """Ops applied left to right; ``spec`` is the canonical spelling (``+`` between ops)."""

    ops: tuple[Op, ...]

    @classmethod
    def of(cls, *ops: Op) -> Mutation:
        """The mutation applying ``ops`` in order."""
        return cls(ops)

    @property
    def spec(self) -> str:
        """The canonical spec, which :func:`parse` reads back to an equal mutation."""
        return "+".join(op.spec for op in self.ops)

    def __call__(self, cassette: Cassette) -> Cassette:
        """Apply every op in order."""
        for op in self.ops:
            cassette = op(cassette)
        return cassette

    def __add__(self, other: Mutation | Op) -> Mutation:
        """This mutation, then ``other``."""
        more = other.ops if isinstance(other, Mutation) else (other,)
        return Mutation((*self.ops, *more))

    def __str__(self) -> str:
        return self.spec


# -- parsing --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OpSyntax:
    """One op of the grammar: its ``name``, its ``syntax`` and what it does (``summary``)."""

    name: str
    syntax: str
    summary: str


_Args = tuple[list[str], dict[str, str]]


class _Reader:
    """The arguments of one op, consumed as they are read so that leftovers can be reported."""

    def __init__(self, text: str, name: str, args: _Args) -> None:
        self.text = text
        self.name = name
        self.positional, self.named = args

    def fail(self, problem: str) -> OpSyntaxError:
        return OpSyntaxError(self.text, problem, op=self.name)

    def take(self, key: str) -> str | None:
        return self.named.pop(key, None)

    def first(self) -> str | None:
        return self.positional.pop(0) if self.positional else None

    def integer(self, value: str, what: str) -> int:
        if not re.fullmatch(r"-?\d+", value):
            raise self.fail(f"{what} must be an integer, not {value!r}")
        return int(value)

    def seconds(self, value: str, what: str) -> float:
        if not _SECONDS.fullmatch(value):
            raise self.fail(f"{what} must be a number of seconds, not {value!r}")
        return float(value)

    def done(self) -> None:
        extra = [*self.positional, *(f"{key}=" for key in self.named)]
        if extra:
            raise self.fail(f"unexpected argument(s) {', '.join(extra)}")


def _split_args(text: str, spec: str) -> _Args:
    positional: list[str] = []
    named: dict[str, str] = {}
    for raw in spec.split(",") if spec else []:
        token = raw.strip()
        if not token:
            raise OpSyntaxError(text, "an empty argument", op=text.partition(":")[0].strip())
        key, sep, value = token.partition("=")
        if sep:
            named[key.strip().lower()] = value.strip()
        else:
            positional.append(token)
    return positional, named


def _fraction(reader: _Reader, value: str) -> float:
    text = value.strip()
    try:
        share = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        share = -1.0
    if not 0.0 <= share <= 1.0 or "," in text or "+" in text:
        raise reader.fail(f"at= must be a percentage from 0% to 100% or a fraction from 0 to 1, not {value!r}")
    return share


def _rechunk(r: _Reader) -> Op:
    first = r.first() or "1"
    if first in _STRATEGY_NAMES:
        strategy = _STRATEGY_NAMES[first]
        seed, size = r.take("seed"), r.take("max")
        if strategy != "random" and (seed is not None or size is not None):
            raise r.fail("seed= and max= apply to rechunk:random only")
        return Rechunk(strategy, seed=r.integer(seed or "0", "seed"), max_size=r.integer(size or "64", "max"))
    return Rechunk(r.integer(first, "the piece size"))


def _truncate(r: _Reader) -> Op:
    end = r.take("end") or "reset"
    if end not in END_KINDS:
        raise r.fail(f"end must be one of {', '.join(END_KINDS)}, not {end!r}")
    kind: EndKind = next(k for k in END_KINDS if k == end)
    count, chunks, at = r.take("bytes"), r.take("chunks"), r.take("at")
    first = r.first()
    if first is not None:
        if not first.endswith("%") and "." not in first:
            raise r.fail(f"write bytes={first} or chunks={first} (a bare number is a fraction: 0.25 or 25%)")
        at = first if at is None else at
    if [count, chunks, at].count(None) != 2:
        raise r.fail("give exactly one of bytes=N, chunks=N or at=P%")
    if count is not None:
        return Truncate(bytes=r.integer(count, "bytes"), end=kind)
    if chunks is not None:
        return Truncate(chunks=r.integer(chunks, "chunks"), end=kind)
    return Truncate(at=_fraction(r, at or ""), end=kind)


def _stall(r: _Reader) -> Op:
    chunk, seconds = r.take("chunk"), r.take("seconds")
    if chunk is None or seconds is None:
        raise r.fail("give chunk=N and seconds=S")
    return Stall(r.integer(chunk, "chunk"), r.seconds(seconds, "seconds"))


def _status(r: _Reader) -> Op:
    code = r.first() or r.take("code")
    if code is None:
        raise r.fail("give the status code")
    wait = r.take("retry-after") or r.take("retry_after")
    retry: str | None = "auto"
    if wait is not None:
        retry = None if wait.lower() == "none" else wait
        if retry is not None and not _SECONDS.fullmatch(retry):
            raise r.fail(f"retry-after must be a number of seconds or none, not {wait!r}")
    return Status(r.integer(code, "the status code"), retry_after=retry, api=_api_arg(r))


def _empty_body(_r: _Reader) -> Op:
    return EmptyBody()


def _api_arg(r: _Reader) -> str | None:
    api = r.take("api")
    if api is not None and not _API.fullmatch(api):
        raise r.fail(f"api {api!r} is not an api name")
    return api or None


def _drop_terminal(r: _Reader) -> Op:
    return DropTerminal(_api_arg(r))


def _corrupt_json(r: _Reader) -> Op:
    api = _api_arg(r)
    return CorruptJson(r.integer(r.first() or r.take("index") or "0", "the event index"), api=api)


def _stream_error(r: _Reader) -> Op:
    api = _api_arg(r)
    after = r.first() or r.take("after")
    if after is None:
        raise r.fail("give after=N, the frames kept before the error")
    return StreamError(r.integer(after, "after"), api=api)


def _interaction(r: _Reader) -> Op:
    index = r.first() or r.take("index")
    if index is None:
        raise r.fail("give the interaction index")
    return KeepInteraction(r.integer(index, "the interaction index"))


_ENDS = "|".join(END_KINDS)

#: Every op of the grammar, in the order ``cassettes mutate --help`` lists them.
OPS: tuple[OpSyntax, ...] = (
    OpSyntax("rechunk", "rechunk:N", "cut the body into N-byte pieces (1: one byte per read)"),
    OpSyntax(
        "rechunk",
        "rechunk:random[,seed=N][,max=N]",
        "pieces of 1..max bytes (default 64) drawn from a generator seeded with seed (default 0)",
    ),
    OpSyntax("rechunk", "rechunk:crlf | rechunk:utf8", "also cut between CR and LF / inside UTF-8 characters"),
    OpSyntax(
        "truncate",
        f"truncate:bytes=N|chunks=N|at=P%[,end={_ENDS}]",
        "keep the first N bytes, N chunks or P percent (or a fraction: at=0.25) of the body, then end "
        "that way (default reset)",
    ),
    OpSyntax("stall", "stall:chunk=N,seconds=S", "go silent S seconds before chunk N (N = the chunk count: the end)"),
    OpSyntax(
        "status",
        "status:CODE[,retry-after=S|none][,api=API]",
        "answer CODE with the api's error body (502: an HTML gateway page); a 429 sends retry-after: 1 "
        "unless told otherwise",
    ),
    OpSyntax("empty-body", "empty-body", "keep the status and headers, send no body"),
    OpSyntax(
        "drop-terminal",
        "drop-terminal[:api=API]",
        "remove the end-of-stream marker of API (default: the cassette's), as its adapter declares it",
    ),
    OpSyntax(
        "corrupt-json",
        "corrupt-json[:N][,api=API]",
        "cut the N-th frame's JSON payload in half (default 0; negative: from the end), the framing kept intact",
    ),
    OpSyntax(
        "stream-error",
        "stream-error:after=N[,api=API]",
        "keep N frames, then send the api's in-stream error frame (as its adapter declares it) and end",
    ),
    OpSyntax("interaction", "interaction:N", "keep only interaction N (0-based) of a cassette that holds several"),
)

_PARSERS: dict[str, Callable[[_Reader], Op]] = {
    "rechunk": _rechunk,
    "truncate": _truncate,
    "stall": _stall,
    "status": _status,
    "empty-body": _empty_body,
    "drop-terminal": _drop_terminal,
    "corrupt-json": _corrupt_json,
    "stream-error": _stream_error,
    "interaction": _interaction,
}


def _syntax_of(name: str) -> str:
    return " | ".join(item.syntax for item in OPS if item.name == name) or name


def _parse_one(text: str) -> Op:
    name, _, spec = text.partition(":")
    name = name.strip().lower()
    parser = _PARSERS.get(name)
    if parser is None:
        raise OpSyntaxError(text, f"unknown op {name!r}", op=None)
    reader = _Reader(text, name, _split_args(text, spec.strip()))
    try:
        op = parser(reader)
    except OpSyntaxError:
        raise
    except CassetteError as exc:  # a value the op's constructor rejects
        raise reader.fail(str(exc)) from None
    reader.done()
    return op


def parse(text: str) -> Mutation:
    """The mutation a spec names (ops joined by ``+``); raises :class:`OpSyntaxError`."""
    parts = [part.strip() for part in text.split("+")]
    if not text.strip() or any(not part for part in parts):
        raise OpSyntaxError(text, f"an empty op in {text!r}", op=None)
    return Mutation(tuple(_parse_one(part) for part in parts))


def help_text() -> str:
    """The grammar as ``cassettes mutate --help`` prints it."""
    lines = ["ops (join several with '+' or repeat --op; they apply left to right):"]
    for item in OPS:
        lines.append(f"  {item.syntax}")
        lines += textwrap.wrap(
            item.summary, 96, initial_indent="      ", subsequent_indent="      ", break_on_hyphens=False
        )
    lines.append("example: --op 'drop-terminal+truncate:at=50%,end=eof'")
    return "\n".join(lines)
