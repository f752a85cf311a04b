"""API keys: where an adapter finds one, how it is sent, and keeping it out of every message.

A key is looked up in ``StreamOptions.api_key`` first, then in the environment variables its
:class:`ApiKey` rule names, and trimmed. It is checked before anything is sent, and the checks never
quote it. Every error message a stream ends with is passed through :func:`redact`, which blanks the
key in every spelling the cassette recorder refuses to write: raw, re-cased, hex, base64 at any
alignment, escaped for JSON, Python, URL or HTML (in part, in full, or twice).

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
import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import quote, quote_plus

from normalize.secret_forms import needles, views
from normalize.wire.tags import header_secrets, query_secrets
from streamfns.kit.failure import StreamFailure

__all__ = [
    "PROMPT_CACHE_KEY_MAX",
    "ApiKey",
    "credentials_in",
    "credentials_in_url",
    "prompt_cache_key",
    "provider_key_env",
    "redact",
    "secret_forms",
]

#: Shorter strings are not redacted: blanking every "test" in a message would help nobody.
_MIN_SECRET = 8
_REDACTED = "[redacted]"
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
    forms = {
        secret,
        repr(secret)[1:-1],
        as_json,
        as_json.replace("/", "\\/"),
        json.dumps(secret, ensure_ascii=True)[1:-1],
        "".join(f"\\u{ord(ch):04x}" for ch in secret),
        "".join(f"\\u{ord(ch):04X}" for ch in secret),
        quote(secret, safe=""),
        quote_plus(secret, safe=""),
    }
    forms |= _base64_forms(secret.encode("utf-8", "surrogatepass"))
    return {form for form in forms if len(form) >= _MIN_SECRET}


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every spelling of every secret blanked out.

    Known text spellings (:func:`secret_forms`) are replaced first, longest first; then the text is
    searched as the cassette recorder searches a body (:mod:`normalize.secret_forms`): raw, re-cased,
    hex or base64 at any alignment, inside JSON, URL and HTML escapes decoded once and twice (a key
    escaped only in part, or escaped twice), and the matching stretch of the original text is blanked.
    """
    wanted = [secret for secret in secrets if len(secret) >= _MIN_SECRET]
    if not wanted:
        return text
    forms: set[str] = set()
    for secret in wanted:
        forms |= secret_forms(secret)
    for form in sorted(forms, key=len, reverse=True):
        if form in text:
            text = text.replace(form, _REDACTED)
    data = text.encode("utf-8", "surrogatepass")
    spans: list[tuple[int, int]] = []
    targets = {needle for secret in wanted for needle, _ in needles(secret.encode("utf-8", "surrogatepass"))}
    for view in views(data):
        for needle in targets:
            at = view.data.find(needle)
            while at >= 0:
                spans.append(view.source_span(at, at + len(needle)))
                at = view.data.find(needle, at + 1)
    if not spans:
        return text
    merged: list[tuple[int, int]] = []
    for begin, end in sorted(spans):
        if merged and begin <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((begin, end))
    pieces: list[bytes] = []
    position = 0
    for begin, end in merged:  # one pass: a message full of echoes stays linear
        pieces += [data[position:begin], _REDACTED.encode()]
        position = end
    pieces.append(data[position:])
    blanked = b"".join(pieces)
    try:
        return blanked.decode("utf-8", "surrogatepass")  # lone surrogates elsewhere stay as they were
    except UnicodeDecodeError:  # a blanked span cut a multi-byte character: never raise here
        return blanked.decode("utf-8", "replace")
