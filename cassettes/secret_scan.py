"""The secret scan that stands between a recording and the disk.

It looks for two things: well-known credential shapes (Anthropic, OpenAI, Google, xAI, Groq
and AWS keys, JWTs, bearer tokens) and the literal values of environment variables whose names
contain KEY, TOKEN or SECRET (values of 8 characters or more). Findings name the kind and the
location, never the secret itself, so an error message or a CI log can not leak it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cassettes.errors import CassetteFormatError, SecretFinding, SecretFound
from cassettes.format import dumps, loads
from cassettes.model import Cassette

__all__ = [
    "BodyScanner",
    "env_secrets",
    "raise_if_secrets",
    "scan_cassette",
    "scan_path",
    "scan_text",
]

# Order matters: the first alternative that matches at a position names the kind, so the
# specific `sk-ant-` / `sk-proj-` shapes come before the generic `sk-` one.
_SHAPES: tuple[tuple[str, str], ...] = (
    ("Anthropic API key", r"sk-ant-[A-Za-z0-9_-]{20,}"),
    ("OpenAI project key", r"sk-proj-[A-Za-z0-9_-]{20,}"),
    ("OpenAI-style secret key", r"sk-[A-Za-z0-9_-]{32,}"),
    ("Google API key", r"AIza[0-9A-Za-z_-]{35}"),
    ("xAI API key", r"xai-[A-Za-z0-9_-]{32,}"),
    ("Groq API key", r"gsk_[A-Za-z0-9]{32,}"),
    ("AWS access key id", r"(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
    ("JSON Web Token", r"eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}"),
    ("bearer token", r"Bearer\s+[A-Za-z0-9._~+/-]{20,}"),
)
_KINDS = tuple(kind for kind, _ in _SHAPES)
# A key never starts in the middle of a word; the look-behind keeps base64 blobs and ids that
# merely contain "sk-" from matching.
_PATTERN = re.compile(r"(?<![A-Za-z0-9])(?:" + "|".join(f"(?P<k{n}>{rx})" for n, (_, rx) in enumerate(_SHAPES)) + ")")
_ENV_NAME = re.compile(r"KEY|TOKEN|SECRET", re.IGNORECASE)
_MIN_ENV_VALUE = 8
# Enough context to see a key that straddles a chunk boundary.
_WINDOW = 512


def env_secrets(env: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """(name, value) of environment variables that look like credentials (read at call time)."""
    source = os.environ if env is None else env
    return [
        (name, value)
        for name, value in source.items()
        if _ENV_NAME.search(name) and len(value.strip()) >= _MIN_ENV_VALUE
    ]


def _hits(text: str, env: Mapping[str, str] | None) -> list[tuple[str, int, int]]:
    """(kind, start, end) of every secret in `text`."""
    hits: list[tuple[str, int, int]] = []
    for match in _PATTERN.finditer(text):
        kind = next(_KINDS[n] for n in range(len(_KINDS)) if match.group(f"k{n}") is not None)
        hits.append((kind, match.start(), match.end()))
    for name, value in env_secrets(env):
        position = text.find(value)
        if position >= 0:
            hits.append((f"value of environment variable {name}", position, position + len(value)))
    return hits


def scan_text(
    text: str, location: str, *, env: Mapping[str, str] | None = None, offset: int = 0
) -> list[SecretFinding]:
    """Findings in `text`; each location is `location` plus the character offset of the hit."""
    return [SecretFinding(kind, f"{location}, offset {offset + start}") for kind, start, _ in _hits(text, env)]


def raise_if_secrets(findings: Sequence[SecretFinding]) -> None:
    """Raise `SecretFound` when there is any finding."""
    if findings:
        raise SecretFound(findings)


@dataclass
class BodyScanner:
    """Scans a body as it grows chunk by chunk, including keys split across chunk boundaries."""

    location: str
    env: Mapping[str, str] | None = None
    _tail: str = ""
    _seen: int = 0

    def feed(self, data: bytes) -> list[SecretFinding]:
        """Findings that involve the new bytes (a hit wholly inside earlier bytes was reported then)."""
        # latin-1 maps bytes 1:1 to characters, so offsets are byte offsets and ASCII keys survive.
        text = data.decode("latin-1")
        window = self._tail + text
        base = self._seen - len(self._tail)
        findings = [
            SecretFinding(kind, f"{self.location}, offset {base + start}")
            for kind, start, end in _hits(window, self.env)
            if end > len(self._tail)
        ]
        longest = max([_WINDOW, *(len(v) for _, v in env_secrets(self.env))])
        self._tail = window[-longest:]
        self._seen += len(text)
        return findings


def _scan_lines(text: str, source: str, env: Mapping[str, str] | None) -> list[SecretFinding]:
    findings: list[SecretFinding] = []
    for number, line in enumerate(text.split("\n"), start=1):
        findings.extend(scan_text(line, f"{source} line {number}", env=env))
    return findings


def _scan_bodies(cassette: Cassette, source: str, env: Mapping[str, str] | None) -> list[SecretFinding]:
    # Base64 chunks and bodies hide keys from a line scan; scan the decoded bytes as well.
    findings: list[SecretFinding] = []
    for index, interaction in enumerate(cassette.interactions):
        request_body = interaction.request.body.decode("latin-1")
        findings.extend(scan_text(request_body, f"{source} interaction {index} request body", env=env))
        scanner = BodyScanner(f"{source} interaction {index} response body", env)
        for chunk in interaction.response.chunks:
            findings.extend(scanner.feed(chunk.data))
    return findings


def _dedupe(findings: Iterable[SecretFinding]) -> list[SecretFinding]:
    return list(dict.fromkeys(findings))


def scan_cassette(cassette: Cassette, *, env: Mapping[str, str] | None = None) -> list[SecretFinding]:
    """Findings in the cassette as it would be written (every line) and in its decoded bodies."""
    return _dedupe(_scan_lines(dumps(cassette), "cassette", env) + _scan_bodies(cassette, "cassette", env))


def scan_path(path: str | os.PathLike[str], *, env: Mapping[str, str] | None = None) -> list[SecretFinding]:
    """Findings in a cassette file: every line as text, plus decoded bodies when the file is valid."""
    raw = Path(path).read_bytes()
    findings = _scan_lines(raw.decode("latin-1"), str(path), env)
    try:
        cassette = loads(raw, source=str(path))
    except CassetteFormatError:
        return _dedupe(findings)
    return _dedupe(findings + _scan_bodies(cassette, str(path), env))
