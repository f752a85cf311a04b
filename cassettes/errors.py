"""The exceptions this package raises.

Everything derives from `CassetteError`, so a caller can catch the whole family at once. The
classes are deliberately distinct: a missing cassette file, a request the cassette does not
hold, and interactions left unplayed are three different mistakes with three different fixes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "CassetteError",
    "CassetteFormatError",
    "CassetteIncomplete",
    "CassetteLocked",
    "CassetteMissing",
    "NotACassetteFile",
    "RequestNotRecorded",
    "SecretFinding",
    "SecretFound",
    "UnplayedInteractions",
    "command_line_text",
]


class CassetteError(Exception):
    """Base class of every error raised by `cassettes`."""


class NotACassetteFile(CassetteError):
    """A cassette path names something that is not a regular file: a FIFO, a directory, a socket or a
    device. Such a path is refused before it is read (a FIFO would block the reader for ever).

    `path` is the path as given, `kind` what it names ("a FIFO (named pipe)", "a directory", …)."""

    def __init__(self, path: str, kind: str) -> None:
        self.path = path
        self.kind = kind
        super().__init__(f"{path}: not a cassette file: it is {kind}, and only a regular file is read as a cassette")


class CassetteFormatError(CassetteError):
    """A cassette file (or text) is not valid streamcassette JSONL.

    `line` is the 1-based line number of the offending record (0 when the problem is not tied
    to one line, e.g. an empty file); the message always names it.
    """

    def __init__(self, source: str, line: int, problem: str) -> None:
        self.source = source
        self.line = line
        self.problem = problem
        where = f"{source}:{line}" if line else source
        super().__init__(f"{where}: {problem}")


class CassetteIncomplete(CassetteFormatError):
    """A cassette file is valid as far as it goes but known to be cut off: a recording that never
    wrote its completion footer (the recorder was killed), or a version 1 file whose last
    interaction has no end record. `load(..., allow_incomplete=True)` reads it anyway.

    The message gives that Python advice; `command_line_message` gives a command's instead."""

    def __init__(self, source: str, line: int, reason: str) -> None:
        self.reason = reason
        super().__init__(
            source,
            line,
            f"incomplete recording: {reason}; record it again, or load it with allow_incomplete=True to inspect it",
        )

    @property
    def command_line_message(self) -> str:
        """The message for a command line, where there is no `allow_incomplete`: what the recording
        holds is shown by `cassettes show` (which reads an incomplete recording)."""
        where = f"{self.source}:{self.line}" if self.line else self.source
        advice = f"record it again, or see what it holds with `cassettes show {self.source}`"
        return f"{where}: incomplete recording: {self.reason}; {advice}"


def command_line_text(error: BaseException) -> str:
    """`str(error)` as a command line shows it: an incomplete cassette's advice — its own, or that of
    one `error` was raised while handling (a harness that wraps the loader's error) — names the
    `cassettes show` command, not the Python-only `allow_incomplete=True`."""
    text = str(error)
    current: BaseException | None = error
    visited: set[int] = set()
    while current is not None and id(current) not in visited:  # a chain can loop back on itself
        if isinstance(current, CassetteIncomplete):
            return text.replace(str(current), current.command_line_message)
        visited.add(id(current))
        current = current.__cause__ or current.__context__
    return text


class CassetteLocked(CassetteError):
    """Another recorder (this process or another) is writing the same cassette file right now."""


class CassetteMissing(CassetteError):
    """Replay was asked for (mode `none`, or `once` with nothing to record) but the file does not exist."""


class RequestNotRecorded(CassetteError):
    """A request reached a replaying transport and no recorded interaction matches it.

    The message shows the nearest recorded request and how it differs.
    """


class UnplayedInteractions(CassetteError):
    """A replay session ended with recorded interactions that were never requested."""

    def __init__(self, message: str, unplayed: Sequence[int]) -> None:
        self.unplayed = tuple(unplayed)
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class SecretFinding:
    """One secret-shaped value found by the scan: what kind, and where (never the value itself)."""

    kind: str
    location: str

    def __str__(self) -> str:
        return f"{self.kind} at {self.location}"


class SecretFound(CassetteError):
    """Writing was refused because the content would contain a secret.

    The message names each finding's kind and location, never the secret.
    """

    def __init__(self, findings: Sequence[SecretFinding]) -> None:
        self.findings = tuple(findings)
        listed = "; ".join(str(f) for f in self.findings)
        super().__init__(f"refusing to write a cassette containing a secret: {listed}")
