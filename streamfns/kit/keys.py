"""API keys: where an adapter finds one, how it is sent, and keeping it out of every message.

A key is looked up in ``StreamOptions.api_key`` first, then in the environment variables its
:class:`ApiKey` rule names, and trimmed. It is checked before anything is sent, and the checks never
quote it. Every vendor string the message a stream ends with carries outside its content —
``error_message``, ``raw_stop_reason``, every string of its ``ErrorInfo`` (``code`` …), ``response_id``,
``response_model``, ``service_tier`` — passes through one choke point, :func:`redact_message`: cut at
:data:`MAX_ERROR_TEXT` bytes (:data:`MAX_ID_TEXT` for the ids; vendor text can be megabytes: a hostile
error line) and redacted by :func:`redact`, which blanks the key in every spelling the cassette
recorder refuses to write: raw, re-cased, hex, base64 at any alignment, escaped for JSON, Python, URL
or HTML (in part, in full, or twice). :func:`redact` streams over the text (linear time, bounded
memory, whatever the text is made of) and, when it cuts, reads only as far past the cut as an echo
starting before it could reach, so no piece of a secret is left at the cut.

The key is not the only secret: :func:`credentials_in` gives every secret a request's headers carry,
by the fail-closed rule of :mod:`normalize.wire.tags` (the value of every header not on a short
public list — ``x-gw-pass``, ``helicone-auth``, ``authorization: Api-Key …`` alike — and the parts
an echo may show alone), and :func:`credentials_in_url` those of its URL (``?key=…``, user info);
the cassette recorder applies the same rules. The kit redacts every error message of that set and
tags each request with it, so a message and a recording guard the same secrets.

Two naming rules shared by adapters: :func:`provider_key_env` (the ``<PROVIDER>_API_KEY`` variable
of a provider without a known one) and :func:`prompt_cache_key` (a session id as a length-capped
prompt-cache key).
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from urllib.parse import quote, quote_plus

from normalize import AssistantMessage
from normalize.secret_forms import EchoScanner, needles
from normalize.wire.tags import header_secrets, query_secrets
from streamfns.kit.failure import StreamFailure

__all__ = [
    "MAX_ERROR_TEXT",
    "MAX_ID_TEXT",
    "PROMPT_CACHE_KEY_MAX",
    "ApiKey",
    "credentials_in",
    "credentials_in_url",
    "prompt_cache_key",
    "provider_key_env",
    "redact",
    "redact_message",
    "secret_forms",
]

#: Shorter strings are not redacted: blanking every "test" in a message would help nobody.
_MIN_SECRET = 8
#: How many secrets' search terms are kept (see _search_terms): a process's keys and tokens in use.
_TERMS_CACHED = 64
_REDACTED = "[redacted]"
#: The most UTF-8 bytes of text a message keeps in each string a failure leaves on it (the error
#: message, the raw stop reason, the error code): vendor text past it is cut, before it is redacted,
#: and the cut is marked (:func:`redact_message`).
MAX_ERROR_TEXT = 64 * 1024
#: The most UTF-8 bytes a message keeps of each short vendor string it names the response by
#: (``response_id``, ``response_model``, ``service_tier``), and the most characters a telemetry span
#: keeps of an id: the vendor chooses them, and a hostile server must not make them megabytes long.
MAX_ID_TEXT = 256
#: Text is encoded and scanned in pieces of this many characters: a long text is never copied whole.
_PIECE_CHARS = 16 * 1024
#: The longest UTF-8 character: a cut backs off at most this far to keep characters whole.
_LONGEST_CHARACTER = 4
#: What starts an escape the views decode (:mod:`normalize.secret_forms`): text without one is its only view.
_ESCAPE_START = re.compile(r"[\\%&]")
_ENV_UNSAFE = re.compile(r"[^A-Z0-9]+")
#: The longest ``prompt_cache_key`` OpenAI accepts (and the default cap of :func:`prompt_cache_key`).
PROMPT_CACHE_KEY_MAX = 64
#: Marks a prompt-cache key derived from a session id too long to send as is.
_CACHE_KEY_PREFIX = "sfn_"


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiKey:
    """How an api takes its key.

    ``env`` lists the environment variables to try, in order, when ``StreamOptions.api_key`` is
    not set; ``header`` is the request header the key goes in, prefixed by ``scheme`` and a space
    (``Authorization: Bearer <key>``) or bare when ``scheme`` is None (``x-api-key: <key>``). With
    ``required=False`` (a local server) a missing key sends no header instead of failing.
    """

    env: tuple[str, ...] = ()
    header: str = "authorization"
    scheme: str | None = "Bearer"
    required: bool = True

    def resolve(self, explicit: str | None, vendor: str) -> str | None:
        """The key to send (None: none needed and none given).

        Raises :class:`StreamFailure` of kind ``auth`` when a required key is missing or cannot be
        sent in a header; the message names where the key was looked for, never the key.
        """
        raw = explicit or next((os.environ[name] for name in self.env if os.environ.get(name)), "")
        key = raw.strip()
        if not key:
            if not self.required:
                return None
            where = " or ".join(["StreamOptions.api_key", *(f"the {name} variable" for name in self.env)])
            raise StreamFailure.of("auth", f"no {vendor} API key: set {where}")
        if not (key.isascii() and key.isprintable()):
            # Said without quoting the key: a key read from a file with stray bytes must not leak.
            raise StreamFailure.of("auth", f"the {vendor} API key contains characters that cannot be sent")
        return key

    def headers(self, key: str | None) -> dict[str, str]:
        """The header carrying ``key`` (none for ``None``)."""
        if key is None:
            return {}
        return {self.header.lower(): f"{self.scheme} {key}" if self.scheme else key}


def provider_key_env(provider: str) -> tuple[str, ...]:
    """The environment variable holding the key of ``provider`` when nothing better is known, as
    ``ApiKey.env`` takes it: ``(<PROVIDER>_API_KEY,)``.

    The provider name is upper-cased (so ``Acme`` and ``acme`` share a variable), every run of
    characters other than ASCII letters and digits becomes one ``_``, and ``_`` at either end is
    dropped: ``my-gateway`` → ``MY_GATEWAY_API_KEY``, ``-edge-`` → ``EDGE_API_KEY``. Empty when no
    letter or digit is left: no variable is guessed, the key must be given explicitly.
    """
    stem = _ENV_UNSAFE.sub("_", provider.upper()).strip("_")
    return (f"{stem}_API_KEY",) if stem else ()


def prompt_cache_key(session_id: str, max_length: int = PROMPT_CACHE_KEY_MAX) -> str:
    """``session_id`` as a prompt-cache key of at most ``max_length`` characters.

    A session id that fits is sent as is; a longer one becomes ``sfn_`` and a SHA-256 hex digest of
    it filling the rest, so the same session always gets the same key and different sessions
    (practically) never share one. Raises ``ValueError`` for a cap too small to hold a digest.
    """
    if len(session_id) <= max_length:
        return session_id
    digest_length = max_length - len(_CACHE_KEY_PREFIX)
    if digest_length < 16:
        raise ValueError(f"a prompt-cache key cap of {max_length} characters leaves no room for a digest")
    digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()
    return _CACHE_KEY_PREFIX + digest[:digest_length]


def credentials_in(headers: Mapping[str, str]) -> list[str]:
    """Every secret ``headers`` carry, in order, each once (:func:`normalize.wire.tags.header_secrets`).

    Fail-closed: the value of every header is a secret unless its name is public (``content-type``,
    ``accept``, ``user-agent``, ``anthropic-version``, ``anthropic-beta``, ``openai-beta``,
    ``x-stainless-*``, … — :data:`normalize.wire.tags.PUBLIC_HEADERS`), with the parts an echo may
    show alone: the token after any auth scheme (``Bearer``, ``Api-Key``, ``Token``), each
    ``name=value`` parameter (``Token token=…``), the decoded HTTP Basic credentials, each cookie's
    value. Values under 8 characters, dates and version numbers are left out: they cannot be told
    from innocent text, and a credential is never only that.
    """
    return list(dict.fromkeys(secret.value for secret in header_secrets(headers.items())))


def credentials_in_url(url: str) -> list[str]:
    """The credentials ``url`` carries, in order, each once (:func:`normalize.wire.tags.query_secrets`):
    its user info, and each query parameter whose name says it holds one (``?key=…``, ``?api-key=…``,
    ``?code=…``), as the cassette recorder finds them."""
    return list(dict.fromkeys(value for _, value in query_secrets(url)))


def _base64_forms(secret: bytes) -> set[str]:
    # A secret inside a longer base64 text is encoded differently at each of the three byte
    # alignments; keep, for each, only the characters that depend on the secret's bytes alone.
    forms: set[str] = {base64.b64encode(secret).decode()}
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + secret).decode()
        skip = -(-offset * 8 // 6)
        stop = (offset + len(secret)) * 8 // 6
        forms.add(encoded[skip:stop])
    forms |= {form.translate(str.maketrans("+/", "-_")) for form in forms}
    return {form.rstrip("=") for form in forms} | forms


def secret_forms(secret: str) -> set[str]:
    """The spellings of ``secret`` to look for in text (see the module docstring); empty for short ones."""
    if len(secret) < _MIN_SECRET:
        return set()
    as_json = json.dumps(secret)[1:-1]
    raw = secret.encode("utf-8", "surrogatepass")
    forms = {
        secret,
        repr(secret)[1:-1],
        as_json,
        as_json.replace("/", "\\/"),
        json.dumps(secret, ensure_ascii=True)[1:-1],
        "".join(f"\\u{ord(ch):04x}" for ch in secret),
        "".join(f"\\u{ord(ch):04X}" for ch in secret),
        # Bytes, so a key holding a lone surrogate (an environment variable with a byte that is not
        # UTF-8, read through surrogateescape) is spelled as it would be sent, not refused.
        quote(raw, safe=""),
        quote_plus(raw, safe=""),
    }
    forms |= _base64_forms(raw)
    return {form for form in forms if len(form) >= _MIN_SECRET}


def redact(text: str, secrets: Iterable[str], *, limit: int | None = None) -> str:
    """``text`` with every spelling of every secret blanked out (``[redacted]``); with ``limit``, also
    cut to its first ``limit`` UTF-8 bytes (never inside a character) and the cut marked
    (``… [cut: N more bytes]``).

    A secret is searched for as the cassette recorder searches a body (:mod:`normalize.secret_forms`):
    raw, re-cased, hex or base64 at any alignment, inside JSON, URL and HTML escapes decoded once and
    twice (a key escaped only in part, or escaped twice), and in the text spellings of
    :func:`secret_forms`; each echo's whole stretch of the original text is blanked, adjacent echoes as
    one. Secrets under 8 characters are not searched for.

    Linear time and bounded working memory whatever ``text`` holds (a hostile text of nothing but
    escapes included): the text is scanned as a stream (:class:`normalize.secret_forms.EchoScanner`).
    With ``limit``, the text is read only as far past the cut as an echo that starts before it could
    reach: an echo the cut goes through is blanked whole, so no piece of a secret is left at the cut.
    """
    return _Redactor(secrets)(text, limit)


def redact_message(message: AssistantMessage, secrets: Iterable[str]) -> None:
    """Cut and redact, in place, every vendor string ``message`` carries outside its content:
    ``error_message``, ``raw_stop_reason`` and every string field of ``error_info`` (``code`` …;
    ``kind`` is one of ours), each cut to :data:`MAX_ERROR_TEXT` UTF-8 bytes; ``response_id``,
    ``response_model`` and ``service_tier``, each cut to :data:`MAX_ID_TEXT`. All are blanked of
    ``secrets`` by :func:`redact`.

    The kit calls it on every message a stream ends with, whatever ended it: the one choke point
    between vendor text (an HTTP error body, an in-stream error event, a stop reason, the ids a
    ``message_start`` names) and the caller. A short string without an escape costs one search per
    spelling of each secret.
    """
    redactor = _redactor_of(tuple(secrets))
    if message.response_id:
        message.response_id = redactor(message.response_id, MAX_ID_TEXT)
    if message.response_model:
        message.response_model = redactor(message.response_model, MAX_ID_TEXT)
    if message.service_tier:
        message.service_tier = redactor(message.service_tier, MAX_ID_TEXT)
    if message.error_message:
        message.error_message = redactor(message.error_message, MAX_ERROR_TEXT)
    if message.raw_stop_reason:
        message.raw_stop_reason = redactor(message.raw_stop_reason, MAX_ERROR_TEXT)
    info = message.error_info
    if info is not None:
        for field in dataclasses.fields(info):
            value: object = getattr(info, field.name)
            if field.name != "kind" and isinstance(value, str) and value:
                setattr(info, field.name, redactor(value, MAX_ERROR_TEXT))


@functools.lru_cache(maxsize=_TERMS_CACHED)
def _search_terms(secret: str) -> tuple[tuple[bytes, ...], tuple[bytes, ...]]:
    """The byte strings :class:`_Redactor` looks for to find ``secret``: its needles (raw, re-cased,
    hex, base64) and its text spellings (:func:`secret_forms`).

    Cached: every stream ends by redacting its message with its key, and for a real key (100-odd
    characters) these cost about 80 µs, a tenth of a short stream's CPU; the same key comes back
    call after call. The cache holds the terms of the last :data:`_TERMS_CACHED` secrets, which the
    process holds anyway (in its options and clients) while it uses them."""
    return (
        tuple(needle for needle, _ in needles(secret.encode("utf-8", "surrogatepass"))),
        tuple(form.encode("utf-8", "surrogatepass") for form in secret_forms(secret)),
    )


@functools.lru_cache(maxsize=_TERMS_CACHED)
def _any_term(terms: tuple[bytes, ...]) -> re.Pattern[bytes] | None:
    """One pattern found wherever any of ``terms`` occurs (None when there is none to find): a text
    that holds none is told so in one scan instead of one search per term. Cached as
    :func:`_search_terms` is: the same terms come back call after call."""
    if not terms:
        return None
    return re.compile(b"|".join(re.escape(term) for term in terms))


@functools.lru_cache(maxsize=_TERMS_CACHED)
def _redactor_of(secrets: tuple[str, ...]) -> _Redactor:
    """The redactor of ``secrets``, made once per set: every stream of a process ends through
    :func:`redact_message` with the same few key sets (a redactor reads its needles, never changes them)."""
    return _Redactor(secrets)


class _Redactor:
    """:func:`redact` for one set of secrets, its needles computed once for several texts."""

    __slots__ = ("_any", "_needles", "_spellings", "_terms")

    def __init__(self, secrets: Iterable[str]) -> None:
        needles: list[bytes] = []
        spellings: list[bytes] = []
        for secret in dict.fromkeys(secret for secret in secrets if len(secret) >= _MIN_SECRET):
            found, spelled = _search_terms(secret)
            needles += found
            spellings += spelled
        # Tuples: a redactor is shared (_redactor_of) and never changes.
        self._needles = tuple(needles)
        self._spellings = tuple(spellings)
        #: Every needle and spelling once, for _plain (which runs for each field of a message).
        self._terms = tuple(dict.fromkeys([*needles, *spellings]))
        self._any = _any_term(self._terms)

    def __call__(self, text: str, limit: int | None = None) -> str:
        if limit is not None and limit < _LONGEST_CHARACTER:
            raise ValueError(f"a redaction limit of {limit} bytes cannot hold a character")
        size = None if limit is None else _utf8_length(text)
        cut = size is not None and limit is not None and size > limit
        if not self._needles and not cut:
            return text
        if not cut and len(text) <= _PIECE_CHARS and not _ESCAPE_START.search(text):
            # The usual message: short, no escape to decode, so no view but the text itself.
            return self._plain(text)
        scanner = EchoScanner(self._needles, raw=self._spellings) if self._needles else None
        writer = _Blanker()
        # While reading, write out only what no cut can affect: a character straddling the cut is
        # dropped whole, once the byte after the cut is known.
        safe = None if limit is None or not cut else limit - _LONGEST_CHARACTER
        finished = False
        for piece in _pieces(text):
            writer.take(piece, scanner.feed(piece) if scanner is not None else [])
            settled = scanner.settled if scanner is not None else writer.fed
            if safe is not None and limit is not None and settled > limit:
                finished = True  # every echo starting before the cut is known: the rest is never read
                break
            writer.settle(settled if safe is None else min(settled, safe))
        if not finished and scanner is not None:
            writer.take(b"", scanner.close())
        if not cut or limit is None or size is None:
            writer.settle(writer.fed)
            return writer.text()
        writer.settle(writer.boundary(limit))
        return f"{writer.text()}… [cut: {size - writer.written:,} more bytes]"

    def _plain(self, text: str) -> str:
        """``text`` redacted when it holds no escape: every needle looked for in it directly."""
        data = text.encode("utf-8", "surrogatepass")
        found = self._any
        if found is None or found.search(data) is None:
            return text  # the usual field (an id, a stop reason): no term in it, told in one scan
        spans: list[tuple[int, int]] = []
        for needle in self._terms:
            at = data.find(needle)
            while at >= 0:
                spans.append((at, at + len(needle)))
                at = data.find(needle, at + 1)
        if not spans:
            return text
        writer = _Blanker()
        writer.take(data, spans)
        writer.settle(len(data))
        return writer.text()


class _Blanker:
    """The text written out with its echoes blanked, as far as the scanner has settled it: the text
    not yet written is held (a few pieces at most), the pieces written are kept as bytes."""

    __slots__ = ("_blank", "_held", "_pending", "_written", "fed", "written")

    def __init__(self) -> None:
        self._held = bytearray()  # the text from offset `written` on, as far as it was fed
        self._pending: list[tuple[int, int]] = []  # echoes not written yet
        self._written: list[bytes] = []
        self._blank = False  # whether what was written last is a blank (an adjacent echo joins it)
        #: The text offset written up to; bytes taken in so far.
        self.written = 0
        self.fed = 0

    def take(self, piece: bytes, spans: list[tuple[int, int]]) -> None:
        self._held += piece
        self.fed += len(piece)
        self._pending += spans

    def boundary(self, offset: int) -> int:
        """``offset``, moved back to the start of the character it falls in (the text is held there)."""
        held, base = self._held, self.written
        while offset > base and offset - base < len(held) and held[offset - base] & 0xC0 == 0x80:
            offset -= 1
        return offset

    def settle(self, upto: int) -> None:
        """Write the text out to offset ``upto``, blanking every echo that starts before it (and the
        whole of it, when it runs on past ``upto``)."""
        pending = self._pending
        pending.sort()
        held, base = self._held, self.written
        written = base
        out = bytearray()
        done = 0
        for begin, end in pending:
            if begin >= upto:
                break
            done += 1
            if begin > written or (begin == written and not self._blank):
                out += held[written - base : begin - base]
                out += _REDACTED_BYTES
                self._blank = True
                written = end
            elif end > written:
                written = end  # overlaps or touches the blank before: one blank
        del pending[:done]
        if written < upto:
            out += held[written - base : upto - base]
            written = upto
            self._blank = False
        if out:
            self._written.append(bytes(out))
        del held[: written - base]
        self.written = written

    def text(self) -> str:
        blanked = b"".join(self._written)
        try:
            return blanked.decode("utf-8", "surrogatepass")  # lone surrogates elsewhere stay as they were
        except UnicodeDecodeError:  # a blanked span cut a multi-byte character: never raise here
            return blanked.decode("utf-8", "replace")


_REDACTED_BYTES = _REDACTED.encode()


def _pieces(text: str) -> Iterator[bytes]:
    """``text`` as UTF-8 (lone surrogates kept), a piece at a time."""
    for start in range(0, len(text), _PIECE_CHARS):
        yield text[start : start + _PIECE_CHARS].encode("utf-8", "surrogatepass")


def _utf8_length(text: str) -> int:
    """The length of ``text`` in UTF-8 bytes, without encoding it whole (``isascii`` costs nothing)."""
    if text.isascii():
        return len(text)
    return sum(len(piece) for piece in _pieces(text))
