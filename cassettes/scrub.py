"""What is allowed onto disk: deny-by-default header filtering, URL and body credential removal.

Only allow-listed headers are ever stored; credential headers (authorization, x-api-key, ...)
can not be allow-listed at all. Credential query parameters (`key`, `api_key`, ...) and
credential JSON / form body fields (`api_key`, `access_token`, ...) are removed wherever they
appear. The same functions run on live requests at replay time, so a live request carrying a
real key still matches the scrubbed recording.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from urllib.parse import parse_qsl, urlencode

import httpx

from cassettes.canonical import NotJSON, canonical_json, parse_json
from cassettes.model import Headers, JSONValue, RecordedRequest

__all__ = [
    "DEFAULT_SCRUB",
    "NEVER_STORED_HEADERS",
    "ScrubPolicy",
    "capture_request",
    "filter_headers",
    "response_headers",
    "scrub_body",
    "scrub_url",
]

NEVER_STORED_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "cookie",
        "set-cookie",
        "x-amz-security-token",
        "openai-organization",
        "openai-project",
        "anthropic-organization-id",
    }
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
_QUERY_PARAMS = frozenset({"key", "api_key", "apikey", "api-key", "access_token", "token", "client_secret"})
_BODY_FIELDS = frozenset(
    {"api_key", "apikey", "access_token", "id_token", "refresh_token", "client_secret", "password"}
)


@dataclass(frozen=True, slots=True)
class ScrubPolicy:
    """Which headers may be stored and which URL / body fields are removed.

    Names are compared lower-case. Anything in `NEVER_STORED_HEADERS` is dropped even if a
    caller allow-lists it.
    """

    request_headers: frozenset[str] = _REQUEST_HEADERS
    response_headers: frozenset[str] = _RESPONSE_HEADERS
    response_header_prefixes: tuple[str, ...] = _RESPONSE_PREFIXES
    query_params: frozenset[str] = _QUERY_PARAMS
    body_fields: frozenset[str] = _BODY_FIELDS

    def allowing(self, headers: Iterable[str]) -> ScrubPolicy:
        """A copy that also stores `headers` (on requests and responses)."""
        extra = frozenset(h.lower() for h in headers)
        return replace(
            self, request_headers=self.request_headers | extra, response_headers=self.response_headers | extra
        )


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


def _drop_fields(value: JSONValue, names: frozenset[str]) -> JSONValue:
    if isinstance(value, dict):
        return {k: _drop_fields(v, names) for k, v in value.items() if k.lower() not in names}
    if isinstance(value, list):
        return [_drop_fields(v, names) for v in value]
    return value


def scrub_body(body: bytes, content_type: str | None, policy: ScrubPolicy | None = None) -> bytes:
    """The body without credential fields; JSON bodies come back in canonical form.

    JSON is recognised by parsing (whatever the content type claims); form bodies by the
    `application/x-www-form-urlencoded` content type. Other bodies are returned unchanged.
    """
    if not body:
        return body
    policy = policy or DEFAULT_SCRUB
    value = parse_json(body)
    if not isinstance(value, NotJSON):
        return canonical_json(_drop_fields(value, policy.body_fields))
    if content_type and "x-www-form-urlencoded" in content_type.lower():
        try:
            pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True)
        except UnicodeDecodeError:
            return body
        kept = [(k, v) for k, v in pairs if k.lower() not in policy.body_fields]
        return urlencode(kept).encode("ascii")
    return body


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


def response_headers(headers: Mapping[str, str] | httpx.Headers, policy: ScrubPolicy | None = None) -> Headers:
    """The storable response headers."""
    policy = policy or DEFAULT_SCRUB
    items = headers.multi_items() if isinstance(headers, httpx.Headers) else list(headers.items())
    return filter_headers(items, policy.response_headers, policy.response_header_prefixes)
