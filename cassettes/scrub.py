"""What is allowed onto disk: deny-by-default header filtering, URL and body credential removal,
and the list of credentials a request carried.

Only allow-listed headers are ever stored; credential headers (authorization, x-api-key, ...)
can not be allow-listed at all. Credential query parameters (`key`, `api-key`, ...) and
credential JSON / form body fields (`api_key`, `token`, `authorization_token`, ...) holding a
string are removed wherever they appear (a field of that name holding an object, such as a tool
schema's `token` property, is kept and scrubbed inside). The same functions run on live requests
at replay time, so a live request carrying a real key still matches the scrubbed recording.

`request_credentials` lists every credential value a live request carries (header values and the
token after an auth scheme, the decoded parts of HTTP Basic credentials, cookies, URL user info,
credential query parameters and body fields): the recorder adds them to the secrets it refuses to
write, so an echo of any of them in a response — in any spelling — stops the recording.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote, urlencode

import httpx

from cassettes.canonical import NotJSON, canonical_json, parse_json
from cassettes.errors import CassetteError
from cassettes.model import Headers, JSONValue, RecordedRequest
from cassettes.records import MAX_DEPTH, depth_within

__all__ = [
    "CREDENTIAL_HEADERS",
    "DEFAULT_SCRUB",
    "NEVER_STORED_HEADERS",
    "ScrubPolicy",
    "capture_request",
    "filter_headers",
    "request_credentials",
    "response_headers",
    "scrub_body",
    "scrub_url",
]

#: Request headers whose values are credentials (lower case).
CREDENTIAL_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "ocp-apim-subscription-key",
        "x-amz-security-token",
        "cookie",
    }
)
NEVER_STORED_HEADERS = CREDENTIAL_HEADERS | frozenset(
    {"set-cookie", "openai-organization", "openai-project", "anthropic-organization-id"}
)

_REQUEST_HEADERS = frozenset({"content-type", "anthropic-version", "anthropic-beta", "openai-beta"})
_RESPONSE_HEADERS = frozenset(
    {
        "content-type",
        "retry-after",
        "retry-after-ms",
        "x-should-retry",
        "request-id",
        "x-request-id",
        "anthropic-version",
        "openai-beta",
    }
)
_RESPONSE_PREFIXES = ("x-ratelimit-", "anthropic-ratelimit-")
_QUERY_PARAMS = frozenset(
    {
        "key",
        "api_key",
        "apikey",
        "api-key",
        "x-goog-api-key",
        "subscription-key",
        "access_token",
        "token",
        "client_secret",
    }
)
_BODY_FIELDS = frozenset(
    {
        "key",
        "token",
        "api_key",
        "apikey",
        "access_token",
        "authorization_token",
        "id_token",
        "refresh_token",
        "client_secret",
        "password",
    }
)


@dataclass(frozen=True, slots=True)
class ScrubPolicy:
    """Which headers may be stored and which URL / body fields are removed.

    Names are compared lower-case. Anything in `NEVER_STORED_HEADERS` is dropped even if a
    caller allow-lists it. Derive a custom policy with `dataclasses.replace(DEFAULT_SCRUB, ...)`.
    """

    request_headers: frozenset[str] = _REQUEST_HEADERS
    response_headers: frozenset[str] = _RESPONSE_HEADERS
    response_header_prefixes: tuple[str, ...] = _RESPONSE_PREFIXES
    query_params: frozenset[str] = _QUERY_PARAMS
    body_fields: frozenset[str] = _BODY_FIELDS


DEFAULT_SCRUB = ScrubPolicy()
"""The default policy: the allow-lists and credential names above."""


def filter_headers(
    headers: Iterable[tuple[str, str]], allowed: frozenset[str], prefixes: tuple[str, ...] = ()
) -> Headers:
    """The allow-listed headers, names lower-cased, order and repeats kept."""
    kept: list[tuple[str, str]] = []
    for name, value in headers:
        lower = name.lower()
        if lower in NEVER_STORED_HEADERS:
            continue
        if lower in allowed or lower.startswith(prefixes):
            kept.append((lower, value))
    return tuple(kept)


def scrub_url(url: str | httpx.URL, policy: ScrubPolicy | None = None) -> str:
    """`url` without credential query parameters and without user:password."""
    policy = policy or DEFAULT_SCRUB
    parsed = httpx.URL(url)
    if parsed.userinfo:
        parsed = parsed.copy_with(userinfo=b"")
    pairs = parsed.params.multi_items()
    kept = [(k, v) for k, v in pairs if k.lower() not in policy.query_params]
    if len(kept) != len(pairs):
        parsed = parsed.copy_with(query=urlencode(kept).encode("ascii") if kept else None)
    return str(parsed)


def _is_credential(name: str, value: JSONValue, names: frozenset[str]) -> bool:
    return isinstance(value, str) and name.lower() in names


def _drop_fields(value: JSONValue, names: frozenset[str]) -> JSONValue:
    if isinstance(value, dict):
        return {k: _drop_fields(v, names) for k, v in value.items() if not _is_credential(k, v, names)}
    if isinstance(value, list):
        return [_drop_fields(v, names) for v in value]
    return value


def _body_fields(value: JSONValue, names: frozenset[str], path: str, out: list[tuple[str, str]]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, str) and _is_credential(key, item, names):
                out.append((f"{path}.{key}".lstrip("."), item))
            else:
                _body_fields(item, names, f"{path}.{key}", out)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _body_fields(item, names, f"{path}[{index}]", out)


def _json_body(body: bytes) -> JSONValue | NotJSON:
    value = parse_json(body) if body else NotJSON()
    if not isinstance(value, NotJSON) and not depth_within(value):
        raise CassetteError(f"the request body is JSON nested more than {MAX_DEPTH} levels deep; it is not scrubbed")
    return value


def _form_pairs(body: bytes, content_type: str | None) -> list[tuple[str, str]] | None:
    if not content_type or "x-www-form-urlencoded" not in content_type.lower():
        return None
    try:
        return parse_qsl(body.decode("utf-8"), keep_blank_values=True)
    except UnicodeDecodeError:
        return None


def scrub_body(body: bytes, content_type: str | None, policy: ScrubPolicy | None = None) -> bytes:
    """The body without credential fields; JSON bodies come back in canonical form.

    JSON is recognised by parsing (whatever the content type claims); form bodies by the
    `application/x-www-form-urlencoded` content type. Other bodies are returned unchanged. JSON
    nested deeper than `MAX_DEPTH` raises `CassetteError`: it can not be scrubbed safely.
    """
    if not body:
        return body
    policy = policy or DEFAULT_SCRUB
    value = _json_body(body)
    if not isinstance(value, NotJSON):
        return canonical_json(_drop_fields(value, policy.body_fields))
    pairs = _form_pairs(body, content_type)
    if pairs is None:
        return body
    return urlencode([(k, v) for k, v in pairs if k.lower() not in policy.body_fields]).encode("ascii")


def capture_request(request: httpx.Request, policy: ScrubPolicy | None = None) -> RecordedRequest:
    """The storable form of a live request whose body has been read (`request.read()`/`aread()`)."""
    policy = policy or DEFAULT_SCRUB
    content_type = request.headers.get("content-type")
    return RecordedRequest(
        method=request.method.upper(),
        url=scrub_url(request.url, policy),
        headers=filter_headers(request.headers.multi_items(), policy.request_headers),
        body=scrub_body(request.content, content_type, policy),
    )


def _header_credentials(name: str, value: str) -> list[tuple[str, str]]:
    where = f"request credential ({name} header)"
    if name == "cookie":
        return [(f"{where} cookie {k.strip()}", v) for k, _, v in (c.partition("=") for c in value.split(";"))]
    found = [(where, value)]
    scheme, _, token = value.strip().partition(" ")
    if token and scheme.isalpha():
        found.append((where, token.strip()))
        if scheme.lower() == "basic":
            try:
                decoded = base64.b64decode(token.strip(), validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError):
                decoded = ""
            found += [(where, decoded), (where, decoded.partition(":")[2])]
    return found


def request_credentials(request: httpx.Request, policy: ScrubPolicy | None = None) -> list[tuple[str, str]]:
    """(where, value) of every credential `request` carries (its body must have been read).

    `where` names the header, parameter or field, never the value.
    """
    policy = policy or DEFAULT_SCRUB
    found: list[tuple[str, str]] = []
    for name, value in request.headers.multi_items():
        if name.lower() in CREDENTIAL_HEADERS:
            found += _header_credentials(name.lower(), value)
    userinfo = request.url.userinfo.decode("ascii", "replace")
    if userinfo:
        found += [("request credential (URL user info)", unquote(part)) for part in userinfo.split(":")]
    for name, value in request.url.params.multi_items():
        if name.lower() in policy.query_params:
            found.append((f"request credential (query parameter {name})", value))
    body = request.content
    value = _json_body(body)
    fields: list[tuple[str, str]] = []
    if not isinstance(value, NotJSON):
        _body_fields(value, policy.body_fields, "", fields)
    else:
        pairs = _form_pairs(body, request.headers.get("content-type"))
        fields = [(k, v) for k, v in pairs or () if k.lower() in policy.body_fields]
    found += [(f"request credential (body field {path})", item) for path, item in fields]
    return found


def response_headers(headers: Mapping[str, str] | httpx.Headers, policy: ScrubPolicy | None = None) -> Headers:
    """The storable response headers."""
    policy = policy or DEFAULT_SCRUB
    items = headers.multi_items() if isinstance(headers, httpx.Headers) else list(headers.items())
    return filter_headers(items, policy.response_headers, policy.response_header_prefixes)
