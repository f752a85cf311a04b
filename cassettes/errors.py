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
    "RequestNotRecorded",
    "SecretFinding",
    "SecretFound",
    "UnplayedInteractions",
]


class CassetteError(Exception):
    """Base class of every error raised by `cassettes`."""


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
    interaction has no end record. `load(..., allow_incomplete=True)` reads it anyway."""

    def __init__(self, source: str, line: int, reason: str) -> None:
        self.reason = reason
        super().__init__(
            source,
            line,
            f"incomplete recording: {reason}; record it again, or load it with allow_incomplete=True to inspect it",
        )


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
