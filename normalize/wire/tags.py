"""Request extensions by which an adapter tells the HTTP layer below it what it is sending, and the one
rule that says which request headers carry secrets.

The kit puts these on every ``httpx.Request`` it sends (``request.extensions``), so a transport that
wraps the real one — the cassette recorder — learns what the URL cannot tell it: the wire api that
made the request, and the credentials it was sent or signed with (the key, every secret header value,
a signer's secret key and session token), which must never be written to disk. Plain strings and
tuples, so the reader needs nothing of the kit.

**The secret header rule** (:func:`header_secrets`) is fail-closed, and both readers apply it: the kit
to the headers the key rule, the request builder, ``model.headers``, ``options.headers`` and a signer
supply (it redacts every error message of them and tags the request with them), and the recorder to
every request it sees (so a third party's client, which tags nothing, is covered the same way):

* the value of every header is a secret, whatever the header is called (``x-gw-pass``,
  ``helicone-auth``, ``authorization: Api-Key …``), **unless** its name is in
  :data:`PUBLIC_HEADERS` (or starts with one of :data:`PUBLIC_HEADER_PREFIXES` and names no
  credential): headers HTTP or a vendor defines whose values describe the client, the body or the api
  version and grant nothing;
* besides the whole value, the parts an echo may show alone are secrets too: the token after an auth
  scheme (``Bearer``, ``Api-Key``, ``Token``), each ``name=value`` auth parameter's value and the part
  of it before a ``/`` (``Token token=…``, SigV4's ``Credential=…/…`` and ``Signature=…``; not
  SigV4's ``SignedHeaders=content-type;host;…``, a list of header names that grants nothing), the
  decoded ``user:password`` of HTTP Basic credentials and the password alone, each cookie's value;
* a value (or part) is not registered when it cannot be told from innocent text: shorter than
  :data:`MIN_SECRET_CHARS` characters ("true", a 4-digit id: blanking every echo of it would blank
  ordinary words, and the recorder would refuse every recording that says it), or wholly an ISO-8601
  date or date-time or a version number (``2023-06-01``, ``20260101T000000Z``, ``1.2.3``: dates and
  versions recur in every error body, and a credential is never only that). Such a value is still
  never stored: the recorder stores a request header only when it is allow-listed, public or named
  like no credential (:func:`names_credential`), and holding no value worth guarding.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from collections.abc import Iterable
from typing import Final, NamedTuple
from urllib.parse import parse_qsl, unquote, urlsplit

__all__ = [
    "API_EXTENSION",
    "CREDENTIAL_NAME",
    "CREDENTIAL_QUERY_PARAMS",
    "MIN_SECRET_CHARS",
    "NOT_CREDENTIALS",
    "PUBLIC_HEADERS",
    "PUBLIC_HEADER_PREFIXES",
    "SECRETS_EXTENSION",
    "HeaderSecret",
    "guarded",
    "header_secrets",
    "names_credential",
    "public_header",
    "query_secrets",
    "secret_parts",
]

#: ``str``: the wire api (``model.api``) whose adapter made the request.
API_EXTENSION: Final = "streamfns.api"
#: ``tuple[str, ...]``: the credentials the request carries (:func:`header_secrets` of its headers,
#: the key as given) and those it was signed with (a signer's secret key, its session token).
SECRETS_EXTENSION: Final = "streamfns.secrets"

#: Request headers whose values are not secrets (lower case). Each is here for a reason:
#: ``accept``, ``accept-encoding``, ``connection``, ``content-length``, ``content-type``, ``host`` and
#: ``user-agent`` are HTTP's own (httpx sends them on every request; they describe the client and the
#: body; the host is in the URL anyway); ``anthropic-version``, ``anthropic-beta`` and
#: ``openai-beta`` choose an api version or feature and vendors echo them; ``x-amz-date`` and
#: ``x-amz-content-sha256`` are SigV4's timestamp and body hash, public by design and quoted back in
#: AWS's signature-mismatch errors; ``idempotency-key``, ``x-request-id``, ``x-client-request-id``,
#: ``traceparent`` and ``tracestate`` are ids a client makes up for retries and tracing, which servers
#: echo by design (in a response header the recorder stores) and which grant nothing. A name missing
#: here only costs redaction of its value's echoes (or a refused recording); a name wrongly here leaks.
PUBLIC_HEADERS: Final = frozenset(
    {
        "accept",
        "accept-encoding",
        "connection",
        "content-length",
        "content-type",
        "host",
        "user-agent",
        "anthropic-version",
        "anthropic-beta",
        "openai-beta",
        "x-amz-date",
        "x-amz-content-sha256",
        "idempotency-key",
        "x-request-id",
        "x-client-request-id",
        "traceparent",
        "tracestate",
        # The client names the subscription backends require (OpenAI Codex, GitHub Copilot).
        "originator",
        "editor-version",
        "editor-plugin-version",
        "copilot-integration-id",
        "copilot-vision-request",
        "openai-intent",
        "x-initiator",
    }
)
#: Header name prefixes whose values are not secrets: the vendor SDKs' telemetry (``x-stainless-os``,
#: ``x-stainless-retry-count``, …). A prefixed name that says it holds a credential is not public.
PUBLIC_HEADER_PREFIXES: Final = ("x-stainless-",)
#: Shorter values are not secrets to look for (the same bound as ``normalize.secret_forms.MIN_SECRET_BYTES``;
#: header values are ASCII, so characters are bytes).
MIN_SECRET_CHARS: Final = 8

#: A query parameter (and, for the cassette scrubber, a body field or a header) whose name matches holds
#: a credential: key, token, secret, auth, password, credential, signature, session, cookie ("author"
#: and "authority" are not "auth").
CREDENTIAL_NAME: Final = re.compile(
    r"key|token|secret|auth(?!or(?!i[sz]))|passw(?:or)?d|credential|signature|session|cookie", re.IGNORECASE
)
#: Query parameters that hold a credential although `CREDENTIAL_NAME` misses them: an Azure Functions
#: key (``code``), a SAS signature (``sig``), a password (``pwd``).
CREDENTIAL_QUERY_PARAMS: Final = frozenset({"code", "sig", "pwd"})
#: Names `CREDENTIAL_NAME` matches that are not credentials: a cache routing hint and a retry key,
#: which servers echo back (as secrets they would make every such recording fail).
NOT_CREDENTIALS: Final = frozenset({"prompt_cache_key", "idempotency-key", "idempotency_key"})

# A header name under a public prefix that says it holds a credential is not public.
_CREDENTIAL_WORD = re.compile(rf"{CREDENTIAL_NAME.pattern}|pass|pwd", re.IGNORECASE)
# Values that recur in innocent text and are never a credential by themselves: an ISO-8601 date or
# date-time (extended or basic format, as SigV4 writes it), or a version number.
_PLAIN = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
    r"|\d{8}T\d{6}Z?"
    r"|v?\d+(?:\.\d+){1,3}",
    re.IGNORECASE,
)
# An HTTP auth scheme (an RFC 9110 token): `Bearer`, `Basic`, `Api-Key`, `AWS4-HMAC-SHA256`.
_AUTH_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9._-]*")
# One `name=value` auth parameter (RFC 9110 `auth-param`, the value a token or a quoted string).
#: SigV4's list of signed header names (``SignedHeaders=content-type;host;x-amz-date``), cut out
#: before the parameters are read: the names are public, and one of them would otherwise read as a value.
_SIGNED_HEADERS = re.compile(r"(?<![A-Za-z0-9_.-])SignedHeaders\s*=\s*[A-Za-z0-9;_.-]*", re.IGNORECASE)
_AUTH_PARAM = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*("[^"]*"|[^\s,;"]*)')


#: How many headers' secrets :func:`header_secrets` keeps (a process's key headers in use, and room
#: for headers that change each call).
_HEADERS_CACHED = 512


class HeaderSecret(NamedTuple):
    """One secret a request header carries: the header's lower-case ``name``, which ``part`` of its
    value (``""`` for the whole value or the token after the auth scheme; an auth parameter's name;
    ``cookie <name>``), and the ``value``."""

    name: str
    part: str
    value: str


def names_credential(name: str) -> bool:
    """True when a header ``name`` says it holds a credential (``key``, ``token``, ``auth``, ``pass``,
    ``pwd``, …): such a header is never public and its value, however short, is never stored."""
    return _CREDENTIAL_WORD.search(name) is not None and name.lower() not in NOT_CREDENTIALS


def public_header(name: str) -> bool:
    """True when request header ``name`` holds no secret (see :data:`PUBLIC_HEADERS`)."""
    lower = name.lower()
    if lower in PUBLIC_HEADERS:
        return True
    return lower.startswith(PUBLIC_HEADER_PREFIXES) and not names_credential(lower)


def guarded(value: str) -> bool:
    """True when ``value`` is worth guarding as a secret: at least :data:`MIN_SECRET_CHARS` characters
    once trimmed, and not wholly a date, a date-time or a version number."""
    trimmed = value.strip()
    return len(trimmed) >= MIN_SECRET_CHARS and _PLAIN.fullmatch(trimmed) is None


def _params(text: str) -> list[tuple[str, str]]:
    """The ``name=value`` pieces of ``text`` (separated by commas or semicolons), leniently: a piece
    that is not one is skipped, so a parameter is never lost to its neighbour's odd spelling (a
    base64 token's ``=`` padding reads as an empty value, which is too short to matter). SigV4's
    ``SignedHeaders`` (header names joined by ``;``) is public: its names are no secret."""
    found: list[tuple[str, str]] = []
    for piece in re.split(r"[,;]", _SIGNED_HEADERS.sub("", text)):
        match = _AUTH_PARAM.fullmatch(piece.rstrip())
        if match is not None:
            found.append((match.group(1), match.group(2).strip('"')))
    return found


def secret_parts(value: str, *, cookie: bool = False) -> list[tuple[str, str]]:
    """(part, text) of every secret in one header value (see the module docstring), unfiltered: the
    whole value, the token after an auth scheme, each auth parameter's value (and what precedes a
    ``/`` in it), the decoded HTTP Basic credentials; for a ``cookie`` header the whole value and
    each cookie's value."""
    found = [("", value.strip())]
    if cookie:
        return found + [
            (f"cookie {name.strip()}", text.strip()) for name, _, text in (c.partition("=") for c in value.split(";"))
        ]
    scheme, _, token = value.strip().partition(" ")
    token = token.strip()
    if token and _AUTH_SCHEME.fullmatch(scheme):
        found.append(("", token))
        params = _params(token)
    else:
        params = _params(value)  # `key=…` with no scheme: a gateway's own spelling
    for name, text in params:
        found.append((name, text))
        if "/" in text:  # a scoped credential (`AKID/20260101/us-east-1/…`): its id alone
            found.append((name, text.partition("/")[0]))
    if token and scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(token, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            decoded = ""
        found += [("", decoded), ("", decoded.partition(":")[2])]
    return found


def header_secrets(headers: Iterable[tuple[str, str]]) -> list[HeaderSecret]:
    """Every secret the request headers ``headers`` carry, by the fail-closed rule of the module
    docstring: each value (and part) of a header not in :data:`PUBLIC_HEADERS` that is worth guarding
    (:func:`guarded`), in order, without repeats. Never includes a value of a public header."""
    found: dict[HeaderSecret, None] = {}
    for name, value in headers:
        for secret in _secrets_of_header(name.lower(), value):  # none, for most (public) headers
            found[secret] = None
    return list(found)


@functools.lru_cache(maxsize=_HEADERS_CACHED)
def _secrets_of_header(lower: str, value: str) -> tuple[HeaderSecret, ...]:
    """:func:`header_secrets` of one header (``lower``: its name in lower case). Cached: a process sends
    the same key headers call after call, and reading them cost several µs a header a call; a header
    that changes each call (a signature) only churns the cache. It holds the secrets of the last
    :data:`_HEADERS_CACHED` headers, which the process sent anyway."""
    if public_header(lower):
        return ()
    found: dict[HeaderSecret, None] = {}
    for part, text in secret_parts(value, cookie=lower == "cookie"):
        if guarded(text):
            found.setdefault(HeaderSecret(lower, part, text.strip()), None)
    return tuple(found)


def query_secrets(url: str) -> list[tuple[str, str]]:
    """(where, value) of every credential in ``url``: the user name and password of its user info,
    and each query parameter whose name says it holds one (:data:`CREDENTIAL_NAME`,
    :data:`CREDENTIAL_QUERY_PARAMS`, not :data:`NOT_CREDENTIALS`: ``?key=…``, ``?api-key=…``,
    ``?code=…``) with its parts (:func:`secret_parts`), kept when :func:`guarded`. Query values are
    found by name, not fail-closed: the rest of a URL is stored in a recording and quoted in messages.
    An unparsable URL has none."""
    return list(_query_secrets(url))


@functools.lru_cache(maxsize=_HEADERS_CACHED)
def _query_secrets(url: str) -> tuple[tuple[str, str], ...]:
    """:func:`query_secrets`, cached: a process calls the same URLs again and again."""
    try:
        parts = urlsplit(url)
        userinfo = [unquote(part) for part in parts.netloc.rpartition("@")[0].split(":") if "@" in parts.netloc]
    except ValueError:
        return ()
    found = [("URL user info", value) for value in userinfo]
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        lower = name.lower()
        if lower not in NOT_CREDENTIALS and (lower in CREDENTIAL_QUERY_PARAMS or CREDENTIAL_NAME.search(lower)):
            found += [
                (f"query parameter {name}" + (f", {part}" if part else ""), text) for part, text in secret_parts(value)
            ]
    return tuple(dict.fromkeys((where, value) for where, value in found if guarded(value)))
