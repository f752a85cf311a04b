"""Importing: a cassette from a response body recorded by any other means.

A body saved by another tool (a vcrpy or HAR cassette's text, a ``curl -N`` capture, a vendor SDK's
test fixture) becomes a one-interaction cassette that replays through the api's adapter and serves the
conformance harness. :func:`import_body` is the whole of it — ``cassettes import`` on the command line
and the bundled library's builder both go through it — and :func:`read_body` reads a body file the
way the command does.

Promises:

* The response bytes are the body exactly, whatever the chunking; the body is cut into chunks by
  ``chunking``: ``event`` (default) — one chunk per frame of the api's framing, as its adapter's wire
  profile declares it (a server-sent event, a JSON line, an AWS event-stream message); ``line`` — one
  per line (a chunk ends after each LF); ``size:N`` — every N bytes. A response that is a document
  rather than a stream (a status outside 2xx, or a content type that names a document) is one chunk
  under ``event``, as a server sends an error body.
* Nothing is passed off as recorded: the header says ``"timing": "synthetic"`` (the chunk boundaries
  and their times: the head at 0 ms, then :data:`STEP_MS` apart) and ``"request": "synthetic"`` (see
  :data:`cassettes.model.SYNTHETIC_PARTS`), and ``recorded_at`` is empty.
* The synthetic request is what the api's adapter would send for a one-word prompt to the model (its
  declared request builder, found through the api's installed declaration or the one passed in), at
  ``url`` when one is given; when the declaration has no request builder or it cannot build one
  without configuration (a cloud project, a server address), a neutral JSON request naming the model
  is sent to ``url``, else to a ``.invalid`` host (as is a builder's URL that names no host). The model
  is ``model`` when given, else the one the stream names (a ``model`` or ``modelVersion`` member of a
  payload, or of its ``message`` or ``response`` object), else ``unknown`` in the request and none in
  the header.
* What reaches the cassette passes the recorder's rules: the request as the recorder captures one
  (:func:`cassettes.scrub.capture_request`: allow-listed headers, credentials out of the URL and
  body), response headers allow-listed as the recorder keeps them (the api's ``recorded_headers``
  included), and the secret scan of everything (:func:`cassettes.secret_scan.scan_cassette`: key
  shapes, the credential-like environment): a body carrying a secret is refused with
  :class:`~cassettes.errors.SecretFound`, as the recorder refuses to write one, and never scrubbed
  into something the server did not send.
* A body the api's framing cannot read (bytes that break it: a bad event-stream checksum, no frame
  carrying a payload) is refused with a :class:`~cassettes.errors.CassetteError` saying so. A body
  that ends inside a frame, or without the api's terminal marker, is a cut stream — a legitimate
  recording of a failure — and is imported as it is, with a :class:`BodyWarning` saying so.
* Every other refusal is a ``CassetteError`` whose message fits one line: an api no declaration is
  known for (naming the close ones), an empty body, a status outside 100-599, a chunking that does
  not parse or a size under 1, a body over :data:`MAX_BODY_BYTES`; :func:`read_body` refuses a path
  that is not a regular file (a directory, a FIFO: never opened, never waited on).
"""

from __future__ import annotations

import importlib.metadata
import os
import types
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import IO, Final, cast
from urllib.parse import quote

import httpx

from cassettes.canonical import canonical_json, parse_json
from cassettes.errors import CassetteError, NotACassetteFile
from cassettes.format import MAX_FILE_BYTES, dumps, loads
from cassettes.model import (
    Cassette,
    Chunk,
    End,
    Headers,
    Interaction,
    JSONValue,
    RecordedRequest,
    RecordedResponse,
    header_value,
)
from cassettes.regular_files import open_regular
from cassettes.scrub import DEFAULT_SCRUB, ScrubPolicy, capture_request, filter_headers, scrub_recorded
from cassettes.secret_scan import raise_if_secrets, scan_cassette
from normalize import Context, Model, StreamOptions, UserMessage
from normalize.suggest import did_you_mean
from normalize.wire import ENTRY_POINT_GROUP, FramingError, WireProfile, known_profiles, profile_for

__all__ = [
    "CHUNKINGS",
    "MAX_BODY_BYTES",
    "STEP_MS",
    "UNKNOWN_MODEL",
    "BodyWarning",
    "import_body",
    "model_in_body",
    "parse_chunking",
    "read_body",
    "resolve_api",
    "synthetic_request",
]

#: Milliseconds between two synthetic chunk times (the head at 0, chunk n at ``n * STEP_MS``, the end one
#: step after the last chunk).
STEP_MS: Final = 5
#: The chunkings :func:`parse_chunking` reads (``size:N`` takes a byte count).
CHUNKINGS: Final = ("event", "line", "size:N")
#: The model a synthetic request names when neither the caller nor the stream does.
UNKNOWN_MODEL: Final = "unknown"
#: The largest body imported: half a cassette file's limit, so the cassette it becomes (its text
#: escaped, or base64 for bytes that are not UTF-8) still loads.
MAX_BODY_BYTES: Final = MAX_FILE_BYTES // 2
#: Where a synthetic request goes when nothing says where: a host that can not exist (RFC 2606).
_NOWHERE: Final = "https://synthetic.invalid"
#: The prompt of every synthetic request.
_PROMPT: Final = "Hello"
_JSON: Final = "application/json"


class BodyWarning(UserWarning):
    """An imported body is importable but not a whole stream (it ends inside a frame, or without the
    api's terminal marker): it replays as the cut stream it is."""


# -- the arguments ------------------------------------------------------------------------------------


def parse_chunking(text: str) -> int | str:
    """``"event"`` or ``"line"`` as they are, ``"size:N"`` as the int N (at least 1); ``CassetteError``
    for anything else."""
    if text in ("event", "line"):
        return text
    kind, sep, value = text.partition(":")
    if kind != "size" or not sep:
        raise CassetteError(f"unknown chunking {text!r}; use event, line or size:N (N bytes per chunk)")
    try:
        size = int(value)
    except ValueError:
        raise CassetteError(f"chunking {text!r}: the size must be a whole number of bytes") from None
    if size < 1:
        raise CassetteError(f"chunking {text!r}: the size must be at least 1 byte")
    return size


def _check_status(status: int) -> None:
    if not 100 <= status <= 599:
        raise CassetteError(f"status {status} is not an HTTP status (100-599)")


def read_body(path: str | os.PathLike[str], *, stdin: IO[bytes] | None = None) -> bytes:
    """The bytes of the body file at ``path`` (``"-"``: ``stdin``, default the process's standard input).

    Only a regular file is read: a directory, a FIFO, a socket or a device raises ``CassetteError``
    before it is opened (a FIFO would block for ever). A body over :data:`MAX_BODY_BYTES` is refused
    without reading the rest; a missing or unreadable file raises the ``OSError``.
    """
    if os.fspath(path) == "-":
        source = stdin if stdin is not None else _standard_input()
        data = source.read(MAX_BODY_BYTES + 1)
    else:
        try:
            with open_regular(path) as handle:
                data = handle.read(MAX_BODY_BYTES + 1)
        except NotACassetteFile as exc:
            raise CassetteError(
                f"{exc.path}: it is {exc.kind}; the body must be a regular file (or - for stdin)"
            ) from None
    if len(data) > MAX_BODY_BYTES:
        raise CassetteError(f"{os.fspath(path)}: the body is over {MAX_BODY_BYTES} bytes, the most a cassette holds")
    return data


def _standard_input() -> IO[bytes]:
    import sys  # noqa: PLC0415 - only reading standard input needs it

    return sys.stdin.buffer


# -- the api's declaration --------------------------------------------------------------------------


def _declared_profile(declaration: object) -> WireProfile | None:
    profile = declaration if isinstance(declaration, WireProfile) else getattr(declaration, "profile", None)
    return profile if isinstance(profile, WireProfile) else None


def _installed_declaration(api: str) -> object | None:
    """The declaration (an ``Adapter``) an installed package gives for ``api`` in the adapters' entry
    points, or None. A broken entry point is skipped: the profile registry reports it."""
    try:
        entries = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    except Exception:  # broken distribution metadata: no declaration, a neutral request
        return None
    for entry in entries:
        try:
            value: object = entry.load()
        except Exception:  # reported by normalize.wire.profile_problems, not here
            continue
        if isinstance(value, types.ModuleType):
            value = getattr(value, "ADAPTER", None)
        if getattr(value, "api", None) == api:
            return value
    return None


def resolve_api(api: str, declaration: object | None = None) -> WireProfile:
    """The wire profile to import a body of ``api`` with: ``declaration``'s (an ``Adapter``, a ``WireApi``
    or a ``WireProfile``, whose api must be ``api``), else the one declared for ``api``; ``CassetteError``
    naming the close apis when nobody declares it."""
    if declaration is not None:
        profile = _declared_profile(declaration)
        if profile is None:
            raise CassetteError(
                f"the declaration given is a {type(declaration).__name__}, which declares no wire profile"
            )
        if profile.api != api:
            raise CassetteError(f"the declaration given is for api {profile.api!r}, not {api!r}")
        return profile
    found = profile_for(api)
    if found is None:
        raise CassetteError(
            f"unknown api {api!r}: no installed adapter declares it; {did_you_mean(api, known_profiles(), what='apis')}"
            " (name an adapter that is not installed with --adapter MODULE:ATTR)"
        )
    return found


def _request_builder(declaration: object | None) -> Callable[[Model, Context, StreamOptions], object] | None:
    """The pure ``(model, context, options) -> request`` of a declaration: a ``WireApi``'s
    ``build_request``, or that of the ``WireApi`` whose ``stream`` an ``Adapter`` serves."""
    for holder in (declaration, getattr(getattr(declaration, "stream_fn", None), "__self__", None)):
        build = getattr(holder, "build_request", None)
        if callable(build):
            return cast("Callable[[Model, Context, StreamOptions], object]", build)
    return None


# -- the synthetic request -------------------------------------------------------------------------


def _neutral_request(api: str, model: str, url: str | None) -> httpx.Request:
    """A JSON request naming ``model``, for an api whose adapter cannot say what it sends."""
    body: JSONValue = {"model": model, "stream": True, "messages": [{"role": "user", "content": _PROMPT}]}
    target = url or f"{_NOWHERE}/{quote(api, safe='')}"
    return httpx.Request("POST", target, headers={"content-type": _JSON}, content=canonical_json(body))


def _adapter_request(
    build: Callable[[Model, Context, StreamOptions], object], api: str, model: str, url: str | None
) -> httpx.Request | None:
    """What the adapter's request builder makes for a one-word prompt to ``model`` (at ``url``), or
    None when it cannot build one without more configuration than a bare model gives it."""
    try:
        built = build(
            Model(id=model, api=api, provider=""),
            Context(messages=[UserMessage(content=_PROMPT)]),
            StreamOptions(),
        )
        target = url or getattr(built, "url", None)
        payload = cast("JSONValue", getattr(built, "payload", None))
        headers = cast("Mapping[str, str] | None", getattr(built, "headers", None)) or {}
        if not isinstance(target, str) or not isinstance(payload, dict):
            return None
        if not httpx.URL(target).is_absolute_url:  # a bare model has no base_url: keep the path, not a host
            target = str(httpx.URL(_NOWHERE).join(target))
        sent = {"content-type": _JSON, **{str(k): str(v) for k, v in headers.items()}}
        return httpx.Request("POST", target, headers=sent, content=canonical_json(payload))
    except Exception:  # the declaration's own code: a missing setting or a broken plugin means a neutral request
        return None


def synthetic_request(
    api: str,
    model: str,
    *,
    declaration: object | None = None,
    url: str | None = None,
    policy: ScrubPolicy = DEFAULT_SCRUB,
) -> RecordedRequest:
    """The request an imported cassette stores (see the module docstring), captured as the recorder
    captures a live one: ``declaration``'s request builder (default: the installed declaration of
    ``api``) for a one-word prompt to ``model``, at ``url`` when given; else a neutral JSON request."""
    if declaration is None:
        declaration = _installed_declaration(api)
    build = _request_builder(declaration)
    request = _adapter_request(build, api, model, url) if build is not None else None
    return capture_request(request or _neutral_request(api, model, url), policy)


# -- reading the body ------------------------------------------------------------------------------


def _json_object(payload: bytes | None) -> dict[str, JSONValue] | None:
    value = parse_json(payload) if payload is not None else None
    return value if isinstance(value, dict) else None


def model_in_body(body: bytes, profile: WireProfile) -> str | None:
    """The model a stream names first: a ``model`` or ``modelVersion`` member of a frame's JSON payload
    (out of its envelope), or the ``model`` of its ``message`` or ``response`` object; None when no
    frame names one (or the framing cannot read the body)."""
    try:
        frames = profile.frames(body)
    except Exception:  # a body the framing (or an envelope's code) cannot read names no model
        return None
    for _, payload in frames:
        value = _json_object(payload)
        if value is None:
            continue
        candidates: list[JSONValue] = [value.get("model"), value.get("modelVersion")]
        for nested in ("message", "response"):
            inner = value.get(nested)
            if isinstance(inner, dict):
                candidates.append(inner.get("model"))
        found = next((c for c in candidates if isinstance(c, str) and c), None)
        if found:
            return found
    return None


def _is_stream(status: int, content_type: str, profile: WireProfile) -> bool:
    """Whether the response is a stream the api's framing reads (a 2xx the framing accepts)."""
    return 200 <= status < 300 and profile.framing.accepts(content_type)


def _check_stream(body: bytes, profile: WireProfile, warn: Callable[[str], None]) -> None:
    """Refuse a body the framing cannot read; warn about one that ends inside a frame or without the
    terminal marker (a cut stream)."""
    framing = profile.framing
    cut = False
    try:
        framer = framing.framer()
        framer.feed(body)
        framer.flush()
    except FramingError as exc:
        if exc.kind != "truncated":
            raise CassetteError(
                f"the body is not in the {framing.name} framing the api's adapter declares: {exc}"
                " (an error response: give its status; another api's stream: check the api)"
            ) from None
        cut = True
    frames = profile.frames(body)
    if not any(span.payload is not None for span, _ in frames):
        raise CassetteError(
            f"the body holds no {framing.unit} with a payload in the {framing.name} framing the api's adapter "
            "declares (an error response: give its status and content type; another api's stream: check the api)"
        )
    if cut or not frames[-1][0].complete:
        warn(f"the body ends inside its last {framing.unit} (a cut stream): imported as it is, it replays as cut there")
        return
    ending = profile.ending
    if ending is None or ending.strip is None:
        return
    try:
        marked = bool(profile.terminal_edits(body))
    except Exception:  # the adapter's strip function failed on this body: it can not tell, so no warning
        return
    if not marked:
        warn(
            f"the body ends without the api's terminal marker ({ending.marker}): imported as it is, it replays "
            "as a stream cut there (or as the error it carries)"
        )


def _pieces(body: bytes, chunking: int | str, profile: WireProfile, stream: bool) -> list[bytes]:
    if isinstance(chunking, int):
        return [body[start : start + chunking] for start in range(0, len(body), chunking)]
    if chunking == "line":
        lines = body.split(b"\n")
        return [line + b"\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
    # One chunk per frame for a stream; a document arrives whole, as a server sends an error body.
    return [span.raw for span in profile.framing.spans(body)] if stream else [body]


def _response_headers(
    content_type: str,
    headers: Iterable[tuple[str, str]],
    profile: WireProfile,
    policy: ScrubPolicy,
    warn: Callable[[str], None],
) -> Headers:
    """The content type, then ``headers``, kept as the recorder keeps response headers of this api (a
    header it would not keep is dropped, with a warning naming it, never its value)."""
    # A plugin's declaration is read defensively, as the recorder reads it: one name given as a string.
    listed = cast("object", profile.recorded_headers)
    collection = isinstance(listed, tuple | list | frozenset | set)
    names = [listed] if isinstance(listed, str) else cast("Iterable[object]", listed) if collection else ()
    kept = policy.with_headers(name for name in names if isinstance(name, str))
    given = [
        ("content-type", content_type),
        *((name, value) for name, value in headers if name.lower() != "content-type"),
    ]
    stored = filter_headers(given, kept.response_headers, kept.response_header_prefixes)
    dropped = sorted({name.lower() for name, _ in given} - {name for name, _ in stored})
    if dropped:
        warn(f"response headers the recorder does not keep were left out: {', '.join(dropped)}")
    return stored


def _default_warning(message: str) -> None:
    warnings.warn(message, BodyWarning, stacklevel=3)


def import_body(
    body: bytes,
    *,
    api: str,
    declaration: object | None = None,
    status: int = 200,
    content_type: str | None = None,
    headers: Iterable[tuple[str, str]] = (),
    chunking: int | str = "event",
    model: str | None = None,
    url: str | None = None,
    request: RecordedRequest | None = None,
    name: str | None = None,
    source: Mapping[str, JSONValue] | None = None,
    env: Mapping[str, str] | None = None,
    policy: ScrubPolicy = DEFAULT_SCRUB,
    on_warning: Callable[[str], None] | None = None,
) -> Cassette:
    """A one-interaction cassette holding ``body`` as the response of ``api`` (see the module docstring).

    ``declaration`` names the api's adapter when it is not installed (an ``Adapter``, a ``WireApi`` or a
    ``WireProfile``); ``status`` and ``content_type`` are the response's (default: 200 and the first
    media type of the api's framing, ``application/json`` for a status outside 2xx; a ``content-type``
    in ``headers`` counts as given); ``headers`` adds response headers, kept as the recorder would keep
    them (the others are left out, with a warning). A 2xx whose content type the framing does not accept
    is a document (one chunk under ``event``, with a warning: the adapter reads it as an error).
    ``chunking`` is ``"event"``, ``"line"``, ``"size:N"`` or an int N. ``model`` and ``url`` go into the
    synthetic request, unless ``request`` gives the whole of it (it is then scrubbed as a stored request
    is). ``name`` and ``source`` go into the header. ``env`` is the environment the secret scan reads
    (default ``os.environ``); ``policy`` says what the scrub keeps; warnings go to ``on_warning``
    (default: :func:`warnings.warn` with :class:`BodyWarning`).

    Raises ``CassetteError`` for what cannot be imported (``SecretFound`` when the result would carry a
    secret); nothing is written anywhere: save the result with :func:`cassettes.save`.
    """
    warn = on_warning or _default_warning
    profile = resolve_api(api, declaration)
    _check_status(status)
    size_or_kind = parse_chunking(chunking) if isinstance(chunking, str) else chunking
    if isinstance(size_or_kind, int) and size_or_kind < 1:
        raise CassetteError(f"chunking size {size_or_kind}: the size must be at least 1 byte")
    if not body:
        raise CassetteError(
            "the body is empty: there is nothing to import (an empty response is the empty-body mutation)"
        )
    if len(body) > MAX_BODY_BYTES:
        raise CassetteError(f"the body is over {MAX_BODY_BYTES} bytes, the most a cassette holds")
    ok = 200 <= status < 300
    headers = tuple((name.lower(), value) for name, value in headers)
    given_type = content_type or header_value(headers, "content-type")
    content_type = given_type or (profile.framing.media_types[0] if ok else _JSON)
    stream = _is_stream(status, content_type, profile)
    try:
        if stream:
            _check_stream(body, profile, warn)
        elif ok:
            warn(
                f"a {status} sent as {content_type!r} is not a {profile.framing.name} stream: "
                "the adapter reads the body as an error document"
            )
        found = model or (model_in_body(body, profile) if stream else None)
        pieces = _pieces(body, size_or_kind, profile, stream)
    except CassetteError:
        raise
    except Exception as exc:  # the declaration's own code (its framing, its envelope) failed on this body
        raise CassetteError(
            f"reading the body with the api's wire profile failed: {type(exc).__name__}: {exc}"
        ) from None
    if request is None:
        request = synthetic_request(api, found or UNKNOWN_MODEL, declaration=declaration, url=url, policy=policy)
    else:
        request = scrub_recorded(request, policy)
    chunks = tuple(Chunk(data, STEP_MS * n) for n, data in enumerate(pieces))
    response = RecordedResponse(
        status,
        _response_headers(content_type, headers, profile, policy, warn),
        0,
        chunks,
        End("eof", STEP_MS * len(chunks)),
    )
    extra: dict[str, JSONValue] = {} if name is None else {"name": name}
    extra.update({"timing": "synthetic", "request": "synthetic"})
    cassette = Cassette(
        interactions=(Interaction(request, response),),
        api=api,
        model=found,
        recorded_at=None,
        source=source,
        extra=extra,
    )
    text = dumps(cassette)
    # The result must load back as it is (a chunk too large for a line would not) and carry no secret.
    loads(text, source="the imported cassette")
    raise_if_secrets(scan_cassette(cassette, env=env, serialized=text.encode("utf-8")))
    return cassette
