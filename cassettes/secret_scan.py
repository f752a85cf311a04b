"""The secret scan that stands between a recording and the disk.

It works on bytes and looks for two things:

* well-known credential shapes (Anthropic, OpenAI, Google, xAI, Groq and AWS keys; the tokens of
  the subscription logins: GitHub OAuth, user, app, refresh and personal tokens, GitHub Copilot's
  signed ``tid=…;exp=…;…:<hmac>`` tokens, ChatGPT refresh tokens — its access tokens are JWTs; JWTs,
  bearer tokens) — in the bytes, in the bytes with JSON and URL escapes decoded, and inside base64
  text decoded at every alignment;
* the exact values in a `SecretSet`: the credentials a recording saw in its requests, and the
  values of environment variables whose names contain KEY, TOKEN or SECRET (trimmed, 8 bytes or
  more) — raw, re-cased, hex- or base64-encoded, JSON-, URL- or HTML-escaped in part or in full
  (see `normalize.secret_forms`), and split across chunks (`BodyScanner`);
* in a stored request, a credential the scrubber should have removed
  (`cassettes.scrub.stored_credentials`: a header, query parameter or body field whose name says
  it holds one), whatever its value looks like;
* inside every payload a wire profile declares as enveloped (`WireProfile.envelope`: Claude on
  Bedrock's base64 `{"bytes": …}` inside each event-stream message), opened and looked through
  for all of the above in every spelling, so an echo hidden by the envelope's own encoding (base64
  of JSON whose key has one character `\\u`-escaped) is found too (`scan_payloads`, and
  `PayloadScanner` as a body arrives). Fail closed: a complete frame whose envelope does not open
  (bad base64) or that its framing can not read (a bad CRC, an impossible length) is reported, and
  refused by the recorder (`UncheckedPayload`), because what is inside it can not be checked. A cut
  last frame (a stream that really ended early) has no complete payload to open: its bytes are
  looked through as base64 text at every alignment, in every unescaped view, which covers the
  prefix of the inner payload it carries.

Findings name the kind, the spelling and the location, never the secret itself, so an error
message or a CI log can not leak it.
"""

from __future__ import annotations

import base64
import itertools
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from cassettes.errors import CassetteError, CassetteFormatError, SecretFinding, SecretFound
from cassettes.format import dump_line, dumps, header_record, loads
from cassettes.model import Cassette, Headers, RecordedResponse, header_value
from cassettes.regular_files import open_regular
from cassettes.scrub import ScrubPolicy, stored_credentials
from normalize.secret_forms import MIN_SECRET_BYTES, View, needles, views
from normalize.wire import (
    DEFAULT_MAX_FRAME_BYTES,
    Envelope,
    EnvelopeError,
    FrameSpan,
    Framing,
    FramingError,
    WireProfile,
    media_type,
    open_checked,
    profile_for,
)

__all__ = [
    "SCAN_PAUSE_MS",
    "BodyScanner",
    "PayloadScanner",
    "SecretSet",
    "UncheckedPayload",
    "env_secrets",
    "enveloped_framing",
    "raise_if_secrets",
    "read_in_framing",
    "scan_bytes",
    "scan_cassette",
    "scan_file",
    "scan_path",
    "scan_payloads",
    "scan_text",
    "secret_spans",
]

# The characters of a value in a Copilot token (`tid=…;exp=…;sku=…;proxy-ep=…;…;rd=…:<hmac>`): no `;`
# (between fields), no `=` (so no field can hide a `tid=` that starts a second match inside the first),
# and no `:` that starts the HMAC (an IPv6 address in `ip=` keeps its colons).
_COPILOT_VALUE = rb"""(?:[^;:=\s"'\\]|:(?![0-9A-Fa-f]{32}))"""
# Order matters: the first alternative that matches at a position names the kind, so the
# specific `sk-ant-` / `sk-proj-` shapes come before the generic `sk-` one.
#
# The scan stays linear in the bytes: a shape either ends with an open-ended run (a failed attempt
# then scanned fewer bytes than the shape's minimum), or its own look-behind keeps a second attempt
# from starting inside the run a failed one already crossed (`eyJ`, `rt_`, `tid=`: a start may not
# follow a character of that run), and its repetitions are possessive (no backtracking).
_SHAPES: tuple[tuple[str, bytes], ...] = (
    ("Anthropic API key", rb"sk-ant-[A-Za-z0-9_-]{20,}"),
    ("OpenAI project key", rb"sk-proj-[A-Za-z0-9_-]{20,}"),
    ("OpenAI-style secret key", rb"sk-[A-Za-z0-9_-]{32,}"),
    ("Google API key", rb"AIza[0-9A-Za-z_-]{35}"),
    ("xAI API key", rb"xai-[A-Za-z0-9_-]{32,}"),
    ("Groq API key", rb"gsk_[A-Za-z0-9]{32,}"),
    ("AWS access key id", rb"(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
    # GitHub's token formats: a prefix naming the kind, then at least 36 base62 characters.
    ("GitHub OAuth token", rb"gho_[A-Za-z0-9]{36,}"),
    ("GitHub user-to-server token", rb"ghu_[A-Za-z0-9]{36,}"),
    ("GitHub server-to-server token", rb"ghs_[A-Za-z0-9]{36,}"),
    ("GitHub refresh token", rb"ghr_[A-Za-z0-9]{36,}"),
    ("GitHub personal access token", rb"(?:ghp_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})"),
    # The Copilot token the exchange returns: `tid=` first, `;`-separated fields, and an HMAC (64 hex
    # digits) after a colon at the end (`…;8kp=1:<hmac>`, or lately `…;rd=<time>:<hmac>`).
    (
        "GitHub Copilot token",
        rb"(?<![A-Za-z0-9_.-])tid="
        + _COPILOT_VALUE
        + rb"{1,256}+(?:;(?!tid=)[A-Za-z0-9_.-]{1,64}+="
        + _COPILOT_VALUE
        + rb"{0,1024}+)++:[0-9A-Fa-f]{32,}",
    ),
    # ChatGPT's refresh tokens: `rt_<43>.<43>` (base64url), and before that `v1.<base64url>`.
    (
        "ChatGPT refresh token",
        rb"(?:(?<![A-Za-z0-9_-])rt_[A-Za-z0-9_-]{20,}+\.[A-Za-z0-9_-]{20,}|(?<![A-Za-z0-9_.-])v1\.[A-Za-z0-9_-]{40,})",
    ),
    # ChatGPT's access tokens (and every other OAuth id or access token that is a JWT), with the
    # signature when there is one, so a redaction takes out the whole token.
    ("JSON Web Token", rb"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,}+\.eyJ[A-Za-z0-9_-]{5,}+(?:\.[A-Za-z0-9_-]+)?"),
    ("bearer token", rb"Bearer\s+[A-Za-z0-9._~+/-]{20,}"),
)
_KINDS = tuple(kind for kind, _ in _SHAPES)
# A key never starts in the middle of a word; the look-behind keeps base64 blobs and ids that
# merely contain "sk-" from matching.
_PATTERN = re.compile(
    rb"(?<![A-Za-z0-9])(?:" + b"|".join(b"(?P<k%d>%s)" % (n, rx) for n, (_, rx) in enumerate(_SHAPES)) + rb")"
)
# Every shape starts with one of these; a cheap `in` test spares the regex on most text.
_HINTS = (
    b"sk-",
    b"AIza",
    b"xai-",
    b"gsk_",
    b"AKIA",
    b"ASIA",
    b"gho_",
    b"ghu_",
    b"ghs_",
    b"ghr_",
    b"ghp_",
    b"github_pat_",
    b"tid=",
    b"rt_",
    b"v1.",
    b"eyJ",
    b"Bearer",
)
# Base64 text long enough to hold the shortest key shape (20 bytes -> 27 characters); the
# look-behind starts a match only where a run starts (no retry at every position inside it).
_BASE64_RUN = re.compile(rb"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{26,}")
# The hints as they read inside base64 text (any alignment, either alphabet): base64 without one
# of them can not hold a key shape, so it is not decoded at all.
_BASE64_HINTS = re.compile(
    b"|".join(sorted({re.escape(n) for hint in _HINTS for n, form in needles(hint) if form.startswith("base64")}))
)
_TO_STANDARD = bytes.maketrans(b"-_", b"+/")
# Any base64 text long enough to hold the shortest secret looked for (MIN_SECRET_BYTES bytes take 11
# characters): what the bytes of a payload that could not be opened are decoded from.
_ANY_BASE64_RUN = re.compile(rb"[A-Za-z0-9+/_-]{11,}")
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


def _base64_hits(data: bytes, secrets: SecretSet | None) -> list[Hit]:
    """Every secret inside any base64 text of `data` or of its unescaped views, decoded at each of the
    four character alignments and looked through in every spelling (`_hits`); each hit spans the base64
    text it was decoded from. The check of bytes whose envelope could not be opened: a cut last frame
    (its base64 is a prefix of the whole), or a payload an envelope without `open_checked` left closed."""
    found: dict[tuple[str, int], int] = {}
    for view in views(data):
        for run in _ANY_BASE64_RUN.finditer(view.data):
            text = run.group().translate(_TO_STANDARD)
            for skip in range(4):
                piece = text[skip:]
                decoded = base64.b64decode(piece[: len(piece) // 4 * 4])
                for kind, _, _ in _hits(decoded, secrets):
                    start, end = view.source_span(run.start(), run.end())
                    found.setdefault((f"{kind} (in base64 text)", start), end)
    return [(kind, start, end) for (kind, start), end in found.items()]


def secret_spans(data: bytes, secrets: SecretSet | None = None, *, base64_text: bool = False) -> list[Hit]:
    """(kind, start, end) of every secret in `data` — key shapes, and every spelling of the values in
    `secrets` — as spans of `data` itself (an escaped echo spans its escapes); `base64_text` also
    decodes every base64 text in it (see `PayloadScanner` for when that is needed). Sorted; spans may
    overlap. What `cassettes.redact` takes out."""
    found = _hits(data, secrets)
    if base64_text:
        found += _base64_hits(data, secrets)
    return sorted(found, key=lambda hit: (hit[1], hit[2], hit[0]))


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


class UncheckedPayload(CassetteError):
    """A payload the response's wire profile declares as enveloped could not be opened to be checked:
    its frame does not read (a bad CRC, an impossible length, a frame over the size limit) or its
    envelope does not open (bad base64). Nothing of it is written. The message says where and why (a
    reason that would itself show a secret is replaced by its type)."""


def read_in_framing(framing: Framing[Any], status: int, content_type: str | None) -> bool:
    """Whether a response's body is read in `framing`: its content type is one of the framing's, or it
    is a 2xx whose content type the framing accepts (as the adapter kit reads it). An error document
    is not."""
    kind = content_type or ""
    return media_type(kind) in framing.media_types or (200 <= status < 300 and framing.accepts(kind))


def enveloped_framing(
    profile: WireProfile | None, status: int, content_type: str | None
) -> tuple[Framing[Any], Envelope] | None:
    """(framing, envelope) when a response's body holds payloads `profile` declares as enveloped: the
    profile has an envelope and the body is read in its framing (`read_in_framing`). None otherwise:
    the body is looked through as it is."""
    if profile is None or profile.envelope is None or not read_in_framing(profile.framing, status, content_type):
        return None
    return profile.framing, profile.envelope


def _reason(error: Exception, secrets: SecretSet | None) -> str:
    """`error`'s message for a finding or an error, or its type when the message shows a secret."""
    text = str(error)
    if not text or _hits(text.encode("utf-8", "surrogateescape"), secrets):
        return type(error).__name__
    return text


def _inside(span: FrameSpan, envelope: Envelope, secrets: SecretSet | None) -> list[str]:
    """The kinds of the secrets inside a complete frame's payload, opened from its envelope; raises
    `EnvelopeError` when the envelope says its inner payload does not open. A payload left closed (one
    that carries no inner payload, or an envelope that can not tell) is looked through as base64 text."""
    if span.payload is None:
        return []
    inner = open_checked(envelope, span.payload)
    if inner is None:
        kinds = [kind for kind, _, _ in _base64_hits(span.payload, secrets)]
    else:
        kinds = [f"{kind} (inside the envelope)" for kind, _, _ in _hits(inner, secrets)]
    return list(dict.fromkeys(kinds))


def _cut_hits(span: FrameSpan, secrets: SecretSet | None) -> list[tuple[str, int]]:
    """(kind, body offset) of the secrets in the bytes of a frame that is not whole (a cut last frame,
    or what follows a frame that does not read): looked through raw elsewhere, and here as base64 text
    at every alignment, whose decoded prefix is what there is of the inner payload."""
    return [(kind, span.start + start) for kind, start, _ in sorted(_base64_hits(span.raw, secrets))]


def scan_payloads(
    body: bytes, location: str, framing: Framing[Any], envelope: Envelope, *, secrets: SecretSet | None = None
) -> list[SecretFinding]:
    """Findings inside the payloads `envelope` wraps in `body`, cut into frames by `framing` (see the
    module docstring; the raw bytes are `scan_bytes`' business). Fail closed: frames that do not read
    and a complete frame whose envelope does not open are findings of their own, since what they hold
    was not opened; the bytes of a cut last frame are looked through as base64 text."""
    findings: list[SecretFinding] = []
    try:
        framer = framing.framer(max_frame_bytes=DEFAULT_MAX_FRAME_BYTES)
        framer.feed(body)
        framer.flush()
    except FramingError as exc:
        if exc.kind != "truncated":
            reason = _reason(exc, secrets)
            findings.append(SecretFinding(f"{framing.unit}s that do not read ({reason}): not opened", location))
    for number, span in enumerate(framing.spans(body)):
        where = f"{location}, offset {span.start} ({framing.unit} {number})"
        if not span.complete:
            findings += [
                SecretFinding(kind, f"{location}, offset {at} (a cut {framing.unit})")
                for kind, at in _cut_hits(span, secrets)
            ]
            continue
        try:
            kinds = _inside(span, envelope, secrets)
        except EnvelopeError as exc:
            reason = _reason(exc, secrets)
            findings.append(SecretFinding(f"a payload whose envelope does not open ({reason}): not checked", where))
            continue
        findings += [SecretFinding(kind, where) for kind in kinds]
    return findings


class PayloadScanner:
    """Opens the payloads a wire profile's envelope wraps, frame by frame as a body arrives, and looks
    inside them (key shapes, and every spelling of every value in `secrets`).

    `checked` is how many bytes from the body's start belong to frames already opened and checked: a
    caller that must never store an unchecked byte holds the rest. `feed` raises `UncheckedPayload` for
    a frame its framing does not read (a bad CRC, an impossible length, more than
    `DEFAULT_MAX_FRAME_BYTES`) or whose envelope does not open (bad base64): its inside can not be
    checked. `finish`, at the end of the body, checks what is left: a cut last frame (a stream that
    really ended early) has no whole payload to open, so its bytes are looked through as base64 text at
    every alignment and in every unescaped view (`_base64_hits`), which covers the decodable prefix of
    the inner payload it carries; its raw bytes are the `BodyScanner`'s.

    The framing's incremental framer says when frames complete (and when bytes break the framing); only
    then are the buffered bytes split into spans, so the work stays linear in the body.
    """

    def __init__(self, location: str, secrets: SecretSet | None, framing: Framing[Any], envelope: Envelope) -> None:
        self.location = location
        self.secrets = secrets
        self._framing = framing
        self._envelope = envelope
        self._framer = framing.framer(max_frame_bytes=DEFAULT_MAX_FRAME_BYTES)
        self._buffer = bytearray()  # bytes after the last checked frame
        self._frames = 0
        self.checked = 0

    def _refuse(self, what: str, error: Exception) -> UncheckedPayload:
        reason = _reason(error, self.secrets)
        return UncheckedPayload(
            f"refusing to write {self.location} unchecked: {what} ({reason}), so the secret scan can not "
            f"look inside the payload the {self._framing.name} framing declares as enveloped"
        )

    def _check(self, spans: Iterable[FrameSpan]) -> list[SecretFinding]:
        """The findings in `spans` (starting at body offset `checked`); raises `UncheckedPayload`."""
        findings: list[SecretFinding] = []
        unit = self._framing.unit
        for span in spans:
            at = self.checked + span.start
            number = self._frames
            self._frames += 1
            if not span.complete:
                cut = _cut_hits(span, self.secrets)
                findings += [
                    SecretFinding(kind, f"{self.location}, offset {self.checked + off} (a cut {unit})")
                    for kind, off in cut
                ]
                continue
            try:
                kinds = _inside(span, self._envelope, self.secrets)
            except EnvelopeError as exc:
                raise self._refuse(f"the envelope of the {unit} at offset {at} does not open", exc) from None
            findings += [SecretFinding(kind, f"{self.location}, offset {at} ({unit} {number})") for kind in kinds]
        return findings

    def _consume(self, *, final: bool) -> list[SecretFinding]:
        """Check the whole frames buffered (at the end of the body: everything buffered)."""
        spans = self._framing.spans(bytes(self._buffer))
        done = spans if final else list(itertools.takewhile(lambda span: span.complete, spans))
        findings = self._check(done)
        used = sum(len(span.raw) for span in done)
        del self._buffer[:used]
        self.checked += used
        return findings

    def feed(self, data: bytes) -> list[SecretFinding]:
        """Take the next bytes; the findings inside the frames they complete."""
        if not data:
            return []
        self._buffer += data
        try:
            completed = self._framer.feed(data)
        except FramingError as exc:
            raise self._refuse(f"the body stops being {self._framing.name} after offset {self.checked}", exc) from None
        return self._consume(final=False) if completed else []

    def finish(self) -> list[SecretFinding]:
        """The body ended: check what is left (a cut last frame); the findings."""
        try:
            self._framer.flush()
        except FramingError as exc:
            if exc.kind != "truncated":
                raise self._refuse(
                    f"the body stops being {self._framing.name} after offset {self.checked}", exc
                ) from None
        return self._consume(final=True) if self._buffer else []


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


def _response_payloads(
    response: RecordedResponse, where: str, secrets: SecretSet, profile: WireProfile | None
) -> list[SecretFinding]:
    """Findings inside the enveloped payloads of a stored response body (none when `profile` declares
    no envelope for it: see `enveloped_framing`)."""
    opened = enveloped_framing(profile, response.status, header_value(response.headers, "content-type"))
    if opened is None:
        return []
    framing, envelope = opened
    return scan_payloads(response.body, f"{where} response body", framing, envelope, secrets=secrets)


def scan_decoded(
    cassette: Cassette,
    source: str,
    secrets: SecretSet,
    policy: ScrubPolicy | None = None,
    *,
    profile: WireProfile | None = None,
) -> list[SecretFinding]:
    """Findings in the header's values and the decoded requests and responses (base64 chunks and
    JSON-escaped text hide secrets from a line scan; a secret may also straddle two chunks), inside
    the payloads the wire profile declares as enveloped (`profile`, default: the one declared for the
    cassette's api; see `scan_payloads`), and the credentials a stored request still carries by name
    (`policy` says which names)."""
    wire = profile if profile is not None else profile_for(cassette.api)
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
        findings.extend(_response_payloads(response, where, secrets, wire))
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
