"""The secret scan that stands between a recording and the disk.

It works on bytes and looks for two things:

* well-known credential shapes (Anthropic, OpenAI, Google, xAI, Groq and AWS keys, JWTs, bearer
  tokens) — in the bytes, in the bytes with JSON and URL escapes decoded, and inside base64 text
  decoded at every alignment;
* the exact values in a `SecretSet`: the credentials a recording saw in its requests, and the
  values of environment variables whose names contain KEY, TOKEN or SECRET (trimmed, 8 bytes or
  more) — raw, re-cased, hex- or base64-encoded, JSON-, URL- or HTML-escaped in part or in full
  (see `normalize.secret_forms`), and split across chunks (`BodyScanner`);
* in a stored request, a credential the scrubber should have removed
  (`cassettes.scrub.stored_credentials`: a header, query parameter or body field whose name says
  it holds one), whatever its value looks like.

Findings name the kind, the spelling and the location, never the secret itself, so an error
message or a CI log can not leak it.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence

from cassettes.errors import CassetteFormatError, SecretFinding, SecretFound
from cassettes.format import dump_line, dumps, header_record, loads
from cassettes.model import Cassette, Headers
from cassettes.regular_files import open_regular
from cassettes.scrub import ScrubPolicy, stored_credentials
from normalize.secret_forms import MIN_SECRET_BYTES, View, needles, views

__all__ = [
    "SCAN_PAUSE_MS",
    "BodyScanner",
    "SecretSet",
    "env_secrets",
    "raise_if_secrets",
    "scan_bytes",
    "scan_cassette",
    "scan_file",
    "scan_path",
    "scan_text",
]

# Order matters: the first alternative that matches at a position names the kind, so the
# specific `sk-ant-` / `sk-proj-` shapes come before the generic `sk-` one.
_SHAPES: tuple[tuple[str, bytes], ...] = (
    ("Anthropic API key", rb"sk-ant-[A-Za-z0-9_-]{20,}"),
    ("OpenAI project key", rb"sk-proj-[A-Za-z0-9_-]{20,}"),
    ("OpenAI-style secret key", rb"sk-[A-Za-z0-9_-]{32,}"),
    ("Google API key", rb"AIza[0-9A-Za-z_-]{35}"),
    ("xAI API key", rb"xai-[A-Za-z0-9_-]{32,}"),
    ("Groq API key", rb"gsk_[A-Za-z0-9]{32,}"),
    ("AWS access key id", rb"(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
    ("JSON Web Token", rb"eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}"),
    ("bearer token", rb"Bearer\s+[A-Za-z0-9._~+/-]{20,}"),
)
_KINDS = tuple(kind for kind, _ in _SHAPES)
# A key never starts in the middle of a word; the look-behind keeps base64 blobs and ids that
# merely contain "sk-" from matching.
_PATTERN = re.compile(
    rb"(?<![A-Za-z0-9])(?:" + b"|".join(b"(?P<k%d>%s)" % (n, rx) for n, (_, rx) in enumerate(_SHAPES)) + rb")"
)
# Every shape starts with one of these; a cheap `in` test spares the regex on most text.
_HINTS = (b"sk-", b"AIza", b"xai-", b"gsk_", b"AKIA", b"ASIA", b"eyJ", b"Bearer")
# Base64 text long enough to hold the shortest key shape (20 bytes -> 27 characters); the
# look-behind starts a match only where a run starts (no retry at every position inside it).
_BASE64_RUN = re.compile(rb"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{26,}")
# The hints as they read inside base64 text (any alignment, either alphabet): base64 without one
# of them can not hold a key shape, so it is not decoded at all.
_BASE64_HINTS = re.compile(
    b"|".join(sorted({re.escape(n) for hint in _HINTS for n, form in needles(hint) if form.startswith("base64")}))
)
_TO_STANDARD = bytes.maketrans(b"-_", b"+/")
_ENV_NAME = re.compile(r"KEY|TOKEN|SECRET", re.IGNORECASE)
#: A streaming scan checks a chunk at once when it comes this long after the previous scan (see
#: `BodyScanner`); chunks arriving faster are scanned in batches of a window.
SCAN_PAUSE_MS = 50.0
# Enough context to see a key that straddles a chunk boundary (a fully \u-escaped secret is 6x
# its length, so the window grows with the longest secret in the set).
_WINDOW = 1024

Hit = tuple[str, int, int]  # (kind, start, end) in the scanned bytes


def env_secrets(env: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """(name, trimmed value) of environment variables that look like credentials (read at call time)."""
    source = os.environ if env is None else env
    found: list[tuple[str, str]] = []
    for name, value in source.items():
        trimmed = value.strip()
        if _ENV_NAME.search(name) and len(trimmed.encode("utf-8", "surrogateescape")) >= MIN_SECRET_BYTES:
            found.append((name, trimmed))
    return found


class SecretSet:
    """Named secret values to look for, in every spelling of `normalize.secret_forms`.

    A recording starts with the credential-like environment and `add`s every credential its
    requests carry. Values are trimmed; values shorter than `MIN_SECRET_BYTES` are not looked for.
    Labels name where a value came from (never the value).
    """

    def __init__(self, items: Iterable[tuple[str, str | bytes]] = ()) -> None:
        self._labels: dict[bytes, str] = {}
        self._needles: list[tuple[bytes, str]] = []
        self.longest = 0
        for label, value in items:
            self.add(label, value)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> SecretSet:
        """The credential-like environment variables (`env_secrets`)."""
        return cls((f"value of environment variable {name}", value) for name, value in env_secrets(env))

    def add(self, label: str, value: str | bytes) -> bool:
        """Look for `value` from now on; True when it is new and long enough to be looked for."""
        data = (value.encode("utf-8", "surrogateescape") if isinstance(value, str) else value).strip()
        if len(data) < MIN_SECRET_BYTES or data in self._labels:
            return False
        self._labels[data] = label
        for needle, form in needles(data):
            self._needles.append((needle, f"{label} ({form})" if form else label))
        self.longest = max(self.longest, len(data))
        return True

    def __len__(self) -> int:
        return len(self._labels)

    def items(self) -> Iterator[tuple[bytes, str]]:
        """(needle, kind) pairs: every spelling of every value."""
        return iter(self._needles)

    @property
    def window(self) -> int:
        """Bytes of context a streaming scan keeps so that no spelling of a value is cut in two."""
        return max(_WINDOW, 6 * self.longest + 16)


def _shape_kind(match: re.Match[bytes]) -> str:
    return next(_KINDS[n] for n in range(len(_KINDS)) if match.group(f"k{n}") is not None)


def _shapes(data: bytes) -> Iterator[re.Match[bytes]]:
    if any(hint in data for hint in _HINTS):
        yield from _PATTERN.finditer(data)


def _in_base64(data: bytes) -> Iterator[Hit]:
    """Key shapes inside base64 text, decoded at each of the four character alignments."""
    if not _BASE64_HINTS.search(data):
        return
    for run in _BASE64_RUN.finditer(data):
        if not _BASE64_HINTS.search(run.group()):
            continue
        text = run.group().translate(_TO_STANDARD)
        for skip in range(4):
            piece = text[skip:]
            decoded = base64.b64decode(piece[: len(piece) // 4 * 4])
            for match in _shapes(decoded):
                start = run.start() + skip + match.start() * 4 // 3
                end = min(run.end(), run.start() + skip + -(-match.end() * 4 // 3))
                yield f"{_shape_kind(match)} (base64)", start, end


def _hits(data: bytes, secrets: SecretSet | None, *, unescape: bool = True) -> list[Hit]:
    """Every secret in `data`, one hit per kind and starting offset; `unescape=False` looks in the
    bytes as they are only (no JSON/URL unescaping)."""
    found: dict[tuple[str, int], int] = {}
    for view in views(data) if unescape else [View(data, "")]:
        escaped = " (escaped)" if view.form else ""
        candidates: list[Hit] = [(_shape_kind(m) + escaped, m.start(), m.end()) for m in _shapes(view.data)]
        for needle, kind in secrets.items() if secrets is not None else ():
            position = view.data.find(needle)
            while position >= 0:
                candidates.append((kind + escaped, position, position + len(needle)))
                position = view.data.find(needle, position + 1)
        candidates.extend((kind + escaped, start, end) for kind, start, end in _in_base64(view.data))
        for kind, start, end in candidates:
            source_start, source_end = view.source_span(start, end)
            # The same echo seen again in a decoded view is one finding (named by its plainest view).
            base = kind.removesuffix(escaped) if escaped else kind
            if not any((k, source_start) in found for k in (base, kind)):
                found[(kind, source_start)] = source_end
    return [(kind, start, end) for (kind, start), end in found.items()]


def scan_bytes(
    data: bytes, location: str, *, secrets: SecretSet | None = None, offset: int = 0, unescape: bool = True
) -> list[SecretFinding]:
    """Findings in `data`; each location is `location` plus the byte offset of the hit."""
    return [
        SecretFinding(kind, f"{location}, offset {offset + start}")
        for kind, start, _ in sorted(_hits(data, secrets, unescape=unescape))
    ]


def scan_text(
    text: str,
    location: str,
    *,
    env: Mapping[str, str] | None = None,
    secrets: SecretSet | None = None,
    offset: int = 0,
) -> list[SecretFinding]:
    """Findings in `text` (scanned as UTF-8) for the key shapes, `secrets`, and the credential-like
    environment (`env`, default `os.environ`, when `secrets` is not given)."""
    chosen = secrets if secrets is not None else SecretSet.from_env(env)
    return scan_bytes(text.encode("utf-8", "surrogateescape"), location, secrets=chosen, offset=offset)


def raise_if_secrets(findings: Sequence[SecretFinding]) -> None:
    """Raise `SecretFound` when there is any finding."""
    if findings:
        raise SecretFound(findings)


class BodyScanner:
    """Scans a body as it grows chunk by chunk, including secrets split across chunk boundaries.

    The scan is batched so that its cost is linear in the body, however finely it is chunked: fed
    bytes wait (`pending`) and are scanned together, with the `SecretSet.window` bytes before them
    (where a spelling that straddles the boundary starts), once a window's worth has gathered. A
    feed with a time (`t_ms`) also scans at once when it is the first, or comes `SCAN_PAUSE_MS` or
    more after the last scan: a slow stream is then checked chunk by chunk, at a cost of at most
    two windows per pause (bounded by wall time, not by bytes). `flush` scans what is left. A
    caller that must never store an unscanned byte holds each chunk until `pending` is 0.

    `secrets` may grow while the body is scanned; every later batch is scanned for the new values.
    """

    def __init__(self, location: str, secrets: SecretSet | None = None, *, env: Mapping[str, str] | None = None):
        self.location = location
        self.secrets = secrets if secrets is not None else SecretSet.from_env(env)
        self._tail = b""  # the last window of scanned bytes
        self._waiting: list[bytes] = []
        self._pending = 0
        self._scanned = 0
        self._last_scan_ms: float | None = None

    @property
    def pending(self) -> int:
        """Bytes fed but not scanned yet."""
        return self._pending

    def feed(self, data: bytes, t_ms: float | None = None) -> list[SecretFinding]:
        """Take the next bytes (arriving at `t_ms`, if known); the findings of any batch this
        scans (a hit wholly inside bytes scanned before was reported then)."""
        if data:
            self._waiting.append(data)
            self._pending += len(data)
        paused = t_ms is not None and (self._last_scan_ms is None or t_ms - self._last_scan_ms >= SCAN_PAUSE_MS)
        if self._pending and (paused or self._pending >= self.secrets.window):
            if t_ms is not None:
                self._last_scan_ms = t_ms
            return self.flush()
        return []

    def flush(self) -> list[SecretFinding]:
        """Scan every pending byte now; the findings."""
        if not self._pending:
            return []
        fresh = b"".join(self._waiting)
        self._waiting.clear()
        self._pending = 0
        window = self._tail + fresh
        base = self._scanned - len(self._tail)
        findings = [
            SecretFinding(kind, f"{self.location}, offset {base + start}")
            for kind, start, end in sorted(_hits(window, self.secrets))
            if end > len(self._tail)
        ]
        self._tail = window[-self.secrets.window :]
        self._scanned += len(fresh)
        return findings


def _scan_headers(headers: Headers, location: str, secrets: SecretSet) -> list[SecretFinding]:
    findings: list[SecretFinding] = []
    for name, value in headers:
        findings.extend(
            scan_bytes(value.encode("utf-8", "surrogateescape"), f"{location} header {name}", secrets=secrets)
        )
    return findings


def scan_lines(data: bytes, source: str, secrets: SecretSet, *, unescape: bool = True) -> list[SecretFinding]:
    """Findings in every line of a cassette's text, located by line number.

    With `unescape=False` the lines are searched as they are: right when the decoded cassette is
    scanned as well (`scan_decoded` unescapes the bodies, which is where escaped echoes live).
    """
    findings: list[SecretFinding] = []
    for number, line in enumerate(data.split(b"\n"), start=1):
        findings.extend(scan_bytes(line, f"{source} line {number}", secrets=secrets, unescape=unescape))
    return findings


def scan_decoded(
    cassette: Cassette, source: str, secrets: SecretSet, policy: ScrubPolicy | None = None
) -> list[SecretFinding]:
    """Findings in the header's values and the decoded requests and responses (base64 chunks and
    JSON-escaped text hide secrets from a line scan; a secret may also straddle two chunks), and
    the credentials a stored request still carries by name (`policy` says which names)."""
    header = dump_line(header_record(cassette)).encode("utf-8")  # api, model, source, extra keys
    findings = scan_bytes(header, f"{source} header", secrets=secrets)
    for index, interaction in enumerate(cassette.interactions):
        where = f"{source} interaction {index}"
        request, response = interaction.request, interaction.response
        findings.extend(
            SecretFinding(f"unscrubbed credential ({place})", f"{where} request")
            for place in stored_credentials(request, policy)
        )
        findings.extend(scan_bytes(request.url.encode("utf-8"), f"{where} request url", secrets=secrets))
        findings.extend(_scan_headers(request.headers, f"{where} request", secrets))
        findings.extend(scan_bytes(request.body, f"{where} request body", secrets=secrets))
        findings.extend(_scan_headers(response.headers, f"{where} response", secrets))
        findings.extend(scan_bytes(response.body, f"{where} response body", secrets=secrets))
    return findings


def _dedupe(findings: Iterable[SecretFinding]) -> list[SecretFinding]:
    return list(dict.fromkeys(findings))


def scan_cassette(
    cassette: Cassette,
    *,
    env: Mapping[str, str] | None = None,
    secrets: SecretSet | None = None,
    serialized: bytes | None = None,
) -> list[SecretFinding]:
    """Findings in the cassette as it would be written (every line) and in its decoded bodies.

    `serialized` is the cassette's text when the caller already has it (`dumps(cassette)` as UTF-8);
    `secrets` defaults to the credential-like environment (`env`, default `os.environ`).
    """
    chosen = secrets if secrets is not None else SecretSet.from_env(env)
    data = serialized if serialized is not None else dumps(cassette).encode("utf-8")
    lines = scan_lines(data, "cassette", chosen, unescape=False)
    return _dedupe(lines + scan_decoded(cassette, "cassette", chosen))


def scan_file(
    path: str | os.PathLike[str], *, env: Mapping[str, str] | None = None, secrets: SecretSet | None = None
) -> tuple[list[SecretFinding], CassetteFormatError | None]:
    """(findings, the format problem or None) for a cassette file.

    Every line is scanned as bytes whatever the file holds; the decoded bodies are scanned as well
    when the file is a valid cassette (an incomplete recording included). A path that is not a
    regular file raises `NotACassetteFile` before it is read.
    """
    chosen = secrets if secrets is not None else SecretSet.from_env(env)
    with open_regular(path) as file:  # a FIFO or a device is refused (NotACassetteFile), never waited on
        raw = file.read()
    try:
        cassette = loads(raw, source=str(path), allow_incomplete=True)
    except CassetteFormatError as problem:
        # Nothing can be decoded: look for escaped echoes line by line instead.
        return _dedupe(scan_lines(raw, str(path), chosen)), problem
    lines = scan_lines(raw, str(path), chosen, unescape=False)
    return _dedupe(lines + scan_decoded(cassette, str(path), chosen)), None


def scan_path(path: str | os.PathLike[str], *, env: Mapping[str, str] | None = None) -> list[SecretFinding]:
    """Findings in a cassette file (see `scan_file`; a format problem is not reported here)."""
    return scan_file(path, env=env)[0]
