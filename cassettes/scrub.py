"""What is allowed onto disk: deny-by-default header filtering, URL and body credential removal,
and the list of credentials a request carried.

Credentials are recognised by name, not from a fixed list of known names: a request header, a
query parameter or a JSON / form body field whose name matches `CREDENTIAL_NAME` (key, token,
secret, auth, password, credential, signature, session, cookie; "author" and "authority" are
not "auth") holds one. So a gateway's own key header (`x-portkey-api-key`, `cf-aig-authorization`, `helicone-auth`), an
MCP tool's `authorization` field or `headers: {"X-Api-Key": ...}` object, and `?auth=` are all
credentials without anyone listing them. A few names the pattern misses are added per place
(`code` and `sig` query parameters), and a few it matches are known not to be credentials
(`prompt_cache_key`, which vendors echo back). Names are compared lower-case.

The secrets a live request's headers carry are found fail-closed, by the rule the adapter kit
follows (`normalize.wire.tags`): the value of every header is one unless the header is on a short
public list (`content-type`, `accept`, `user-agent`, `anthropic-version`, `x-stainless-*`, ...),
whatever it is called (`x-gw-pass`, `x-upstream-pwd`, `authorization: Api-Key ...`); values too short
or too plain to tell from innocent text (under 8 characters, a date, a version number) are left out.
So a request from any client — the kit's, which also tags its secrets on the request, or a third
party's, which tags nothing — has every header secret looked for in what is recorded.

* Only allow-listed headers are ever stored, and neither a credential header nor a header holding
  a secret by the rule above can be allow-listed.
* Credential query parameters and URL user info are removed from the URL.
* Credential body fields are removed wherever they appear, at any depth (nested `headers`
  objects, and `headers` lists of `[name, value]` pairs, included), when they hold a string, or
  strings inside a list; a field of that name
  holding an object (an `auth: {...}` block) is kept and scrubbed inside. A string field holding
  an `http(s)` URL loses the URL's credential query parameters and user info.
* Data is not configuration: the conversation (`messages`, `contents`, `input`, `system`, ...),
  tool and output schemas (`input_schema`, `parameters`, `schema`, ...) and tool-call arguments
  and results (`arguments`, `args`, `output`, `response`) are kept exactly as sent. Names there are
  chosen by users and models (a schema property or an argument called `token` is not a
  credential) and their values come back in responses (a thinking block's `signature`), so they
  are never collected as secrets. The secret scan still looks through them for key shapes and
  for every credential value found elsewhere.

A JSON body that holds `NaN` or `Infinity` (what `json.dumps` writes for such floats; not JSON,
strictly) is parsed and scrubbed all the same. A body that parses as neither JSON nor a form is
stored as it is, but a credential-named JSON member or `name=value` pair in its text is still a
credential (`request_credentials` collects it, so the recorder refuses to store the body;
`stored_credentials` names it): a body that can not be parsed never hides a secret that a parsed
one would give away.

The same functions run on live requests at replay time (and on the stored requests, so a cassette
recorded under narrower rules still matches), so a live request carrying a real key still matches
the scrubbed recording. `request_credentials` lists every credential value a live request carries
(every secret header value by the rule above, with the token after an auth scheme, each auth
parameter's value, the decoded parts of HTTP Basic credentials and cookie values; credential query
parameters and body fields): the recorder adds them to the secrets it refuses to write, so an echo
of any of them in a response — in any spelling — stops the recording. `stored_credentials` names the credentials a
stored request still carries, for the secret scan.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from urllib.parse import parse_qsl, unquote, urlencode

import httpx

from cassettes.canonical import NotJSON, canonical_json, canonical_json_lenient, parse_json, parse_json_lenient
from cassettes.errors import CassetteError
from cassettes.line_checks import MAX_DEPTH, depth_within
from cassettes.model import Headers, JSONValue, RecordedRequest, header_value
from normalize.wire.tags import (
    CREDENTIAL_NAME,
    CREDENTIAL_QUERY_PARAMS,
    NOT_CREDENTIALS,
    guarded,
    names_credential,
    public_header,
    secret_parts,
)

__all__ = [
    "CREDENTIAL_HEADERS",
    "CREDENTIAL_NAME",
    "DEFAULT_SCRUB",
    "NEVER_STORED_HEADERS",
    "ScrubPolicy",
    "capture_request",
    "filter_headers",
    "request_credentials",
    "response_headers",
    "scrub_body",
    "scrub_recorded",
    "scrub_url",
    "stored_credentials",
]

#: Request headers known to hold credentials (lower case); every one matches `CREDENTIAL_NAME` too.
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
#: Headers never stored, whatever the allow-list says (request headers whose name matches
#: `CREDENTIAL_NAME` are never stored either).
NEVER_STORED_HEADERS = CREDENTIAL_HEADERS | frozenset(
    {"set-cookie", "openai-organization", "openai-project", "anthropic-organization-id"}
)

# The generic lists name what the built-in adapters' vendors send; an api's own headers (AWS's
# `x-amzn-requestid`, Bedrock's `x-amzn-bedrock-*` token counts) come from its wire profile's
# `recorded_headers`, which the recorder adds (`ScrubPolicy.with_headers`). Signing headers are never
# worth keeping: `authorization` and `x-amz-security-token` are credentials, `x-amz-date` and
# `x-amz-content-sha256` change with every request and tell nothing.
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
# Rate limits (OpenAI-style, Anthropic) and Google's request metadata (`x-goog-*`; a credential header
# of that family, `x-goog-api-key`, is never stored).
_RESPONSE_PREFIXES = ("x-ratelimit-", "anthropic-ratelimit-", "x-goog-")
# Credentials the name pattern misses (an Azure Functions key `code`, a SAS signature `sig`, `pwd`),
# and names it matches that are not credentials (a cache routing hint, a retry key): the kit's too.
_QUERY_PARAMS = CREDENTIAL_QUERY_PARAMS
_BODY_FIELDS = frozenset({"pwd"})
_NOT_CREDENTIALS = NOT_CREDENTIALS
# Subtrees that are data, not configuration (compared lower-case without `_` and `-`).
_DATA_FIELDS = frozenset(
    {
        # the conversation
        "messages",
        "contents",
        "input",
        "system",
        "systeminstruction",
        "instructions",
        "prompt",
        # tool and output schemas, and tool examples
        "inputschema",
        "inputexamples",
        "parameters",
        "parametersjsonschema",
        "schema",
        "jsonschema",
        "responseschema",
        "responsejsonschema",
        # tool-call arguments and results
        "arguments",
        "args",
        "output",
        "response",
    }
)


def _normal(name: str) -> str:
    return name.lower().replace("_", "").replace("-", "")


@dataclass(frozen=True, slots=True)
class ScrubPolicy:
    """Which headers may be stored (by name, or by prefix), and which names hold credentials.

    A name holds a credential when it matches `credential_name` or is listed for its place
    (`query_params`, `body_fields`; request headers add `CREDENTIAL_HEADERS`), unless it is in
    `not_credentials`. Body subtrees under `data_fields` (compared lower-case without `_`/`-`) are
    data and kept as they are. Anything in `NEVER_STORED_HEADERS`, and any request header that
    holds a credential, is dropped even if a caller allow-lists it. Derive a custom policy with
    `dataclasses.replace(DEFAULT_SCRUB, ...)`.
    """

    request_headers: frozenset[str] = _REQUEST_HEADERS
    request_header_prefixes: tuple[str, ...] = ()
    response_headers: frozenset[str] = _RESPONSE_HEADERS
    response_header_prefixes: tuple[str, ...] = _RESPONSE_PREFIXES
    credential_name: re.Pattern[str] = CREDENTIAL_NAME
    query_params: frozenset[str] = _QUERY_PARAMS
    body_fields: frozenset[str] = _BODY_FIELDS
    not_credentials: frozenset[str] = _NOT_CREDENTIALS
    data_fields: frozenset[str] = _DATA_FIELDS

    def holds_credential(self, name: str, listed: frozenset[str] = frozenset()) -> bool:
        """True when a field or parameter called `name` holds a credential (`listed`: the names
        added for its place)."""
        lower = name.lower()
        if lower in self.not_credentials:
            return False
        return lower in listed or self.credential_name.search(lower) is not None

    def credential_header(self, name: str) -> bool:
        """True when request header `name` holds a credential."""
        return self.holds_credential(name, CREDENTIAL_HEADERS)

    def with_headers(self, listed: Iterable[str]) -> ScrubPolicy:
        """This policy keeping the headers `listed` as well, in requests and responses: lower-case
        names, or prefixes ending in `*` (a wire profile's `recorded_headers`). A credential is still
        never stored."""
        entries = [entry.lower() for entry in listed]
        names = {entry for entry in entries if not entry.endswith("*")}
        prefixes = tuple(entry.removesuffix("*") for entry in entries if entry.endswith("*"))
        if not names and not prefixes:
            return self
        return replace(
            self,
            request_headers=self.request_headers | names,
            request_header_prefixes=(*self.request_header_prefixes, *prefixes),
            response_headers=self.response_headers | names,
            response_header_prefixes=(*self.response_header_prefixes, *prefixes),
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


def _url_parts(parsed: httpx.URL, policy: ScrubPolicy) -> tuple[httpx.URL, list[tuple[str, str]]]:
    """`parsed` without credentials, and (where, value) of each one removed."""
    found: list[tuple[str, str]] = []
    if parsed.userinfo:
        userinfo = parsed.userinfo.decode("ascii", "replace")
        found += [("URL user info", unquote(part)) for part in userinfo.split(":")]
        parsed = parsed.copy_with(userinfo=b"")
    pairs = parsed.params.multi_items()
    kept = [(k, v) for k, v in pairs if not policy.holds_credential(k, policy.query_params)]
    if len(kept) != len(pairs):
        found += [(f"query parameter {k}", v) for k, v in pairs if policy.holds_credential(k, policy.query_params)]
        parsed = parsed.copy_with(query=urlencode(kept).encode("ascii") if kept else None)
    return parsed, found


def scrub_url(url: str | httpx.URL, policy: ScrubPolicy | None = None) -> str:
    """`url` without credential query parameters and without user:password."""
    return str(_url_parts(httpx.URL(url), policy or DEFAULT_SCRUB)[0])


_URL_VALUE = re.compile(r"https?://[^?@#]*[?@]", re.IGNORECASE)


def _holds_list(value: JSONValue) -> bool:
    return isinstance(value, list) and any(isinstance(item, str) for item in value)


class _BodyWalk:
    """One pass over a JSON body: the scrubbed copy, and (path, value) of every credential in it."""

    def __init__(self, policy: ScrubPolicy) -> None:
        self.policy = policy
        self.found: list[tuple[str, str]] = []

    def value(self, value: JSONValue, path: str) -> JSONValue:
        if isinstance(value, dict):
            return self.fields(value, path)
        if isinstance(value, list):
            return [self.value(item, f"{path}[{index}]") for index, item in enumerate(value)]
        if isinstance(value, str) and _URL_VALUE.match(value):
            return self.url(value, path)
        return value

    def url(self, value: str, path: str) -> str:
        try:
            parsed, found = _url_parts(httpx.URL(value), self.policy)
        except (httpx.InvalidURL, ValueError, TypeError):
            return value  # not a URL after all: nothing to take from it
        self.found += [(f"{path}, {where}", item) for where, item in found]
        return str(parsed) if found else value

    def header_pairs(self, value: list[JSONValue], path: str) -> list[JSONValue]:
        """Headers given as `[name, value]` pairs: a credential header's pair goes."""
        kept: list[JSONValue] = []
        for index, entry in enumerate(value):
            match entry:
                case [str(name), str(credential)] if self.policy.credential_header(name):
                    self.found.append((f"{path}[{index}]", credential))
                case _:
                    kept.append(self.value(entry, f"{path}[{index}]"))
        return kept

    def fields(self, value: dict[str, JSONValue], path: str) -> dict[str, JSONValue]:
        kept: dict[str, JSONValue] = {}
        for key, item in value.items():
            where = f"{path}.{key}" if path else key
            if _normal(key) in self.policy.data_fields:
                kept[key] = item
            elif _normal(key) == "headers" and isinstance(item, list):
                kept[key] = self.header_pairs(item, where)
            elif not self.policy.holds_credential(key, self.policy.body_fields):
                kept[key] = self.value(item, where)
            elif isinstance(item, str):
                self.found.append((where, item))
            elif isinstance(item, list) and _holds_list(item):
                self.found += [(f"{where}[{n}]", entry) for n, entry in enumerate(item) if isinstance(entry, str)]
                kept[key] = [self.value(entry, where) for entry in item if not isinstance(entry, str)]
            else:
                kept[key] = self.value(item, where)  # an object (or a number) is no secret value itself
        return kept


def _json_body(body: bytes) -> tuple[JSONValue | NotJSON, bool]:
    """The body parsed as JSON, and whether it is strict JSON. A body holding `NaN` or `Infinity`
    (what `json.dumps` writes for such floats) is parsed as well: it must not hide its fields."""
    if not body:
        return NotJSON(), True
    value, strict = parse_json(body), True
    if isinstance(value, NotJSON):
        value, strict = parse_json_lenient(body), False
    if not isinstance(value, NotJSON) and not depth_within(value):
        raise CassetteError(f"the request body is JSON nested more than {MAX_DEPTH} levels deep; it is not scrubbed")
    return value, strict


# In a body that parses as neither JSON nor a form, a credential is still found by its name: a JSON
# member (`"api_key": "…"`, escapes and all) or a `name=value` pair. Such a body is stored unchanged,
# so a value found here makes the recorder refuse the write (fail closed: a body that cannot be
# parsed never hides more than one that can).
_TEXT_MEMBER = re.compile(r'"((?:[^"\\\n]|\\.){1,128})"\s*:\s*"((?:[^"\\\n]|\\.)*)"')
_TEXT_PAIR = re.compile(r"(?:^|(?<=[\s&;?]))([A-Za-z0-9_.-]{1,128})=([^\s&;\"']+)")


def _unescaped(text: str) -> str:
    try:
        value: object = json.loads(f'"{text}"')
    except ValueError:
        return text
    return value if isinstance(value, str) else text


def _text_credentials(body: bytes, policy: ScrubPolicy) -> list[tuple[str, str]]:
    """(name, value) of every credential-named member or pair in the text of an unparsed body."""
    text = body.decode("utf-8", "replace")
    found: list[tuple[str, str]] = []
    for pattern, decode in ((_TEXT_MEMBER, _unescaped), (_TEXT_PAIR, unquote)):
        for match in pattern.finditer(text):
            name = decode(match.group(1))
            if policy.holds_credential(name, policy.body_fields):
                found.append((f"{name} (in a body that is not JSON)", decode(match.group(2))))
    return found


def _form_pairs(body: bytes, content_type: str | None) -> list[tuple[str, str]] | None:
    if not content_type or "x-www-form-urlencoded" not in content_type.lower():
        return None
    try:
        return parse_qsl(body.decode("utf-8"), keep_blank_values=True)
    except UnicodeDecodeError:
        return None


def _scrub_body(body: bytes, content_type: str | None, policy: ScrubPolicy) -> tuple[bytes, list[tuple[str, str]]]:
    """(the body without credentials, (path, value) of each credential it held)."""
    if not body:
        return body, []
    value, strict = _json_body(body)
    if not isinstance(value, NotJSON):
        walk = _BodyWalk(policy)
        scrubbed = walk.value(value, "")
        return (canonical_json(scrubbed) if strict else canonical_json_lenient(scrubbed)), walk.found
    pairs = _form_pairs(body, content_type)
    if pairs is None:
        return body, _text_credentials(body, policy)
    found = [(k, v) for k, v in pairs if policy.holds_credential(k, policy.body_fields)]
    if not found:
        return body, []
    kept = [(k, v) for k, v in pairs if not policy.holds_credential(k, policy.body_fields)]
    return urlencode(kept).encode("ascii"), found


def scrub_body(body: bytes, content_type: str | None, policy: ScrubPolicy | None = None) -> bytes:
    """The body without credential fields; JSON bodies come back in canonical form.

    JSON is recognised by parsing (whatever the content type claims; a body holding `NaN` or
    `Infinity` comes back canonical with those constants kept); form bodies by the
    `application/x-www-form-urlencoded` content type. Other bodies are returned unchanged. JSON
    nested deeper than `MAX_DEPTH` raises `CassetteError`: it can not be scrubbed safely.
    """
    return _scrub_body(body, content_type, policy or DEFAULT_SCRUB)[0]


def _storable_request_header(name: str, value: str, policy: ScrubPolicy) -> bool:
    """True for an allow-listed request header that may be stored: not a credential by name (the
    policy's or the kit's wider one, which adds `pass` and `pwd`), and either public or holding no
    value the secret set guards (a wire profile's `x-amzn-bedrock-*` keeps a short flag like
    `ENABLED`, never a value the recorder would then refuse)."""
    if policy.credential_header(name) or names_credential(name):
        return False
    return not _header_credentials([(name, value)], policy)  # always empty for a public header


def _request_headers(headers: Iterable[tuple[str, str]], policy: ScrubPolicy) -> Headers:
    allowed = filter_headers(headers, policy.request_headers, policy.request_header_prefixes)
    return tuple((name, value) for name, value in allowed if _storable_request_header(name, value, policy))


def capture_request(request: httpx.Request, policy: ScrubPolicy | None = None) -> RecordedRequest:
    """The storable form of a live request whose body has been read (`request.read()`/`aread()`)."""
    policy = policy or DEFAULT_SCRUB
    content_type = request.headers.get("content-type")
    return RecordedRequest(
        method=request.method.upper(),
        url=scrub_url(request.url, policy),
        headers=_request_headers(request.headers.multi_items(), policy),
        body=scrub_body(request.content, content_type, policy),
    )


def scrub_recorded(request: RecordedRequest, policy: ScrubPolicy | None = None) -> RecordedRequest:
    """A stored request scrubbed again under `policy` (replay compares live requests with this, so
    a cassette recorded under narrower rules still matches). A stored body too deep to scrub is
    left as it is."""
    policy = policy or DEFAULT_SCRUB
    try:
        body = scrub_body(request.body, header_value(request.headers, "content-type"), policy)
    except CassetteError:
        body = request.body
    headers = tuple(
        (name, value)
        for name, value in request.headers
        if not (policy.credential_header(name) or names_credential(name))
    )
    return replace(request, url=scrub_url(request.url, policy), headers=headers, body=body)


def _labelled(where: str, parts: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(f"{where}, {part}" if part else where, value) for part, value in parts]


def _credential_values(where: str, value: str) -> list[tuple[str, str]]:
    """The value, and the parts of it an echo may show alone (`normalize.wire.tags.secret_parts`):
    the token after an auth scheme, each auth parameter's value (SigV4's `Credential` and
    `Signature`), the decoded HTTP Basic credentials; those worth guarding (`guarded`: not too short,
    not a date or a version number), as the kit keeps them."""
    return _labelled(where, [(part, text) for part, text in secret_parts(value) if guarded(text)])


def _secret_header(name: str, policy: ScrubPolicy) -> bool:
    """True when the value of request header `name` is a secret: every header not on the public list
    (`normalize.wire.tags.PUBLIC_HEADERS`, the rule the kit follows), and any the policy names."""
    return not public_header(name) or policy.credential_header(name)


def _header_credentials(headers: Iterable[tuple[str, str]], policy: ScrubPolicy) -> list[tuple[str, str]]:
    """(where, value) of every secret in request headers, by the kit's fail-closed rule
    (`normalize.wire.tags.header_secrets`): values too short or too plain to guard are left out."""
    found: list[tuple[str, str]] = []
    for name, value in headers:
        lower = name.lower()
        if _secret_header(lower, policy):
            parts = secret_parts(value, cookie=lower == "cookie")
            found += _labelled(f"request credential ({lower} header)", [(p, t) for p, t in parts if guarded(t)])
    return found


def request_credentials(request: httpx.Request, policy: ScrubPolicy | None = None) -> list[tuple[str, str]]:
    """(where, value) of every credential `request` carries (its body must have been read).

    `where` names the header, parameter or field, never the value.
    """
    policy = policy or DEFAULT_SCRUB
    found = _header_credentials(request.headers.multi_items(), policy)
    for where, value in _url_parts(request.url, policy)[1]:
        found += _credential_values(f"request credential ({where})", value)
    _, fields = _scrub_body(request.content, request.headers.get("content-type"), policy)
    for path, value in fields:
        found += _credential_values(f"request credential (body field {path})", value)
    return found


def stored_credentials(request: RecordedRequest, policy: ScrubPolicy | None = None) -> list[str]:
    """Where a stored request still carries a credential (a non-empty one): names, never values.

    A request the recorder stored has none; one that does was written by hand, by an older
    recorder or with another policy. A body too deeply nested to check is named as well.
    """
    policy = policy or DEFAULT_SCRUB
    try:
        url = httpx.URL(request.url)
    except (httpx.InvalidURL, ValueError, TypeError):
        url = httpx.URL("")
    places = [where for where, value in _url_parts(url, policy)[1] if value]
    places += [
        f"{name} header" for name, _ in request.headers if policy.credential_header(name) or names_credential(name)
    ]
    try:
        _, fields = _scrub_body(request.body, header_value(request.headers, "content-type"), policy)
    except CassetteError:
        return [*places, "body JSON nested too deeply to check"]
    return places + [f"body field {path}" for path, value in fields if value]


def response_headers(headers: Mapping[str, str] | httpx.Headers, policy: ScrubPolicy | None = None) -> Headers:
    """The storable response headers."""
    policy = policy or DEFAULT_SCRUB
    items = headers.multi_items() if isinstance(headers, httpx.Headers) else list(headers.items())
    return filter_headers(items, policy.response_headers, policy.response_header_prefixes)
