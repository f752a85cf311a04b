"""``WireApi``: a wire api declared as data, and the StreamFn it becomes.

An adapter supplies only what is its vendor's: the request builder (model, context, options → URL,
payload, headers; pure), the framing (server-sent events by default; JSON lines; the AWS event
stream; or its own), the decoder (frames → builder calls; pure), the error table, the key rule or a
signing step, and how its stream ends. The StreamFn it becomes, :attr:`WireApi.stream_fn` (the one
name a package exports: ``stream_my_api = WIRE.stream_fn``), keeps the whole contract around them,
in this order:

1. the arguments are checked (:func:`normalize.request_problem`): a caller's mistake ends the stream
   ``config`` / ``invalid_request`` naming the field, before anything is sent;
2. an already-aborted signal ends it ``aborted``, sending nothing;
3. the request is built; ``Model.compat`` mistakes are ``config``, any other failure to build it is
   ``invalid_request`` (before the key, so a mistyped flag is not reported as a missing key);
4. the key is resolved and checked (``auth`` when missing or unsendable; never quoted; a key rule
   that raises is ``config``) — unless the model's provider has a provider signer
   (:mod:`streamfns.kit.provider_auth`, a subscription login) and ``options.api_key`` is not given:
   then that signer authenticates the call in place of the key rule and the api's own signer (a
   provider signer that cannot be loaded is ``config``); ``on_payload`` may replace the payload; it
   must encode as strict JSON;
5. headers are merged: the key header, the builder's, ``model.headers``, then ``options.headers``
   (where ``None`` removes one); headers listed in ``joined_headers`` combine as comma lists;
   ``content-type: application/json`` is added when no layer names a content type;
6. :func:`streamfns.kit.http.run_stream` signs (each attempt, when there is a signer; its ``origin``
   checked, its secrets joining the call's), sends, retries, reads frames, times out and closes; a 401
   before any output asks a signer that has ``unauthorized`` once to renew its login and retries at
   once (see :mod:`streamfns.kit.signing`).

When an OpenTelemetry tracer or meter provider is configured, the stream is traced
(:mod:`streamfns.kit.telemetry`: one GenAI span and the client metrics); otherwise that costs one
lookup per stream and nothing per event.

The declaration also yields the api's :class:`~normalize.wire.WireProfile` (:attr:`WireApi.profile`):
its framing, ending, envelope, error samples and recordings, which the conformance harness and the
cassette tools read.

Steps 1–5 run as the StreamFn is called (they are pure: nothing is sent, and no hook awaited, before
the consumer first reads), except ``on_payload``, which is awaited on the first read with what follows
it; the stream's source is then the kit's own generator for the call, with none around it (each
generator a stream holds is an object, its frame and a weak reference for the collector to walk, a
thousand streams at a time). Calling :attr:`WireApi.stream_fn` never raises and the stream never
raises while iterated: a failure of steps 1–5 is the stream's error, read as its first events.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import math
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Generic, Protocol, TypeVar, cast

from normalize import (
    AssistantMessageEvent,
    AssistantMessageEventStream,
    Context,
    ErrorInfo,
    MessageBuilder,
    Model,
    Relay,
    StreamOptions,
    request_problem,
)
from normalize.secret_forms import masked_headers, masked_repr, masked_url
from normalize.wire import SSE, Ending, Envelope, ErrorSample, Feature, Framing, WireProfile
from streamfns.kit.compat import CompatError
from streamfns.kit.decoder import Decoder, DecoderFactory
from streamfns.kit.errors import ErrorTable
from streamfns.kit.failure import StreamFailure
from streamfns.kit.hooks import call_hook
from streamfns.kit.hosts import endpoint_url
from streamfns.kit.keys import ApiKey, credentials_in, credentials_in_url, redact, redact_message
from streamfns.kit.provider_auth import ProviderSignerError, provider_signer
from streamfns.kit.signing import Signature, Signer, SigningRequest
from streamfns.kit.telemetry import StreamTelemetry
from streamfns.kit.telemetry import start as start_telemetry

if TYPE_CHECKING:
    from streamfns.kit.http import StreamCall

__all__ = ["Decoder", "DecoderFactory", "RequestBuilder", "WireApi", "WireRequest"]

FrameT = TypeVar("FrameT")


@dataclass(frozen=True, slots=True)
class WireRequest:
    """What to POST: the full URL, the JSON payload, and the api's own headers (no key, no
    ``model.headers``/``options.headers``: the kit adds those)."""

    url: str
    payload: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict[str, str])
    price_multiplier: float = 1.0
    """What this request costs relative to the model's catalog rates, when where it goes decides it
    (a regional endpoint billed above the global one): the response's usage is priced at the rates
    times this (:meth:`normalize.MessageBuilder.price_multiplier`, set before the first attempt and
    again for each retry; a decoder that learns a billing tier from the response replaces it). Finite
    and not negative, else the request is not sent."""

    def __repr__(self) -> str:
        # A builder may put a credential in the URL (`?key=`) or a header: shown masked, as pydantic's
        # SecretStr shows a secret (the fields themselves are untouched).
        return masked_repr(self, url=masked_url(self.url), headers=masked_headers(self.headers))


#: ``(model, context, options) → WireRequest``; pure (no I/O, no clock, no state), with one allowance:
#: when the model names no ``base_url``, where the request goes may be read from the environment the
#: way the vendor's own tools read it (``OLLAMA_HOST``; ``AWS_ENDPOINT_URL_*`` and the AWS region, the
#: shared config's read once per profile; ``GOOGLE_CLOUD_PROJECT``/``GOOGLE_CLOUD_LOCATION``), per
#: call, so a changed variable takes effect
#: as it does for those tools. Nothing else of the environment is read; credentials are the key rule's
#: or the signer's. May raise
#: :class:`~streamfns.kit.CompatError` or ``ValueError``/``TypeError`` for what it cannot send.
RequestBuilder = Callable[[Model, Context, StreamOptions], WireRequest]


class BoundStream(Protocol):
    """:attr:`WireApi.stream_fn`: a StreamFn that returns its stream at once (never awaitable)."""

    def __call__(
        self, model: Model, context: Context, options: StreamOptions | None = None, /
    ) -> AssistantMessageEventStream: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class WireApi(Generic[FrameT]):
    """A wire api, declared (see the module docstring).

    ``api`` is the registry name (``model.api``); ``vendor`` labels messages ("Anthropic"); ``key`` is
    an :class:`ApiKey` rule, or a function of the model choosing one (a provider-specific variable or
    header), or None when ``signer`` alone authenticates; ``framing`` cuts the body into the frames
    ``decoder`` takes; ``ending`` says how the stream ends (an :class:`~normalize.wire.Ending`, or just
    the marker's name, which the ``truncated`` messages quote); ``signer`` signs each attempt (see
    :mod:`streamfns.kit.signing`). ``envelope``, ``error_body``, ``stream_error``, ``recordings``,
    ``keepalive`` and ``recorded_headers`` describe the api's bytes for the harness and the cassettes
    (see :class:`~normalize.wire.WireProfile`); the headers ``errors`` reads an error type from are
    recorded too, so a replayed error reads as the live one did.
    """

    api: str
    vendor: str
    key: ApiKey | Callable[[Model], ApiKey] | None
    build_request: RequestBuilder
    decoder: DecoderFactory[FrameT]
    errors: ErrorTable
    ending: Ending | str
    framing: Framing[FrameT] = SSE  # pyright: ignore[reportAssignmentType] - SSE is the default framing
    signer: Signer | None = None
    joined_headers: frozenset[str] = frozenset()
    envelope: Envelope | None = None
    error_body: Callable[[int, str], ErrorSample] | None = None
    stream_error: Callable[[str], bytes] | None = None
    recordings: Mapping[Feature, str] = field(default_factory=dict[Feature, str])
    keepalive: frozenset[str] = frozenset()
    recorded_headers: tuple[str, ...] = ()
    #: The api's bytes as the harness and the cassettes read them (derived from the fields above).
    profile: WireProfile = field(init=False, repr=False, compare=False)
    #: The api's StreamFn (see the module docstring), bound once: the one object a package exports
    #: (``stream_my_api = WIRE.stream_fn``) and its declaration names (``Adapter.from_wire``).
    stream_fn: BoundStream = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.key is None and self.signer is None:
            raise ValueError(f"WireApi {self.api!r} needs a key rule or a signer")
        ending = Ending(self.ending) if isinstance(self.ending, str) else self.ending
        object.__setattr__(self, "ending", ending)
        profile = WireProfile(
            api=self.api,
            framing=self.framing,
            ending=ending,
            envelope=self.envelope,
            error_body=self.error_body,
            stream_error=self.stream_error,
            recordings=dict(self.recordings),
            keepalive=frozenset(self.keepalive),
            recorded_headers=tuple(
                dict.fromkeys(name.lower() for name in (*self.recorded_headers, *self.errors.type_headers))
            ),
        )
        object.__setattr__(self, "profile", profile)
        # A bound method made once: each read of a method makes a new object, and the registry, the
        # catalog and the harness recognise a package's StreamFn by identity.
        object.__setattr__(self, "stream_fn", self._stream)

    @property
    def end_marker(self) -> str:
        """The terminal marker's name, as messages quote it."""
        ending = self.ending
        return ending if isinstance(ending, str) else ending.marker

    def __repr__(self) -> str:
        return f"WireApi({self.api!r})"

    def _stream(
        self, model: Model, context: Context, options: StreamOptions | None = None, /
    ) -> AssistantMessageEventStream:
        """Stream one response; never raises (see the module docstring). Reached as :attr:`stream_fn`."""
        known = model if isinstance(model, Model) else None  # pyright: ignore[reportUnnecessaryIsInstance]
        # Once per stream, never per event: None unless a tracer or meter provider listens.
        observer = start_telemetry(self.api, model, context, options)
        batches = _batches(self, model, context, options, observer)
        if observer is not None:
            batches = observer.traced(batches)
        return AssistantMessageEventStream.from_batches(batches, model=known)


#: The request body's encoder, made once (``json.dumps`` with options makes one per call). NaN and
#: Infinity are not JSON, and no vendor accepts them.
_BODY_JSON: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _merge_headers(wire: WireApi[Any], layers: Sequence[Mapping[str, str | None]]) -> dict[str, str]:
    merged: dict[str, str] = {}
    joined = wire.joined_headers
    typed = False
    for layer in layers:
        for name, value in layer.items():
            key = name.lower()
            if key == "content-type":
                typed = True
            if value is None:
                merged.pop(key, None)
            elif key in joined and merged.get(key):
                parts = [*merged[key].split(","), *value.split(",")]
                merged[key] = ",".join(dict.fromkeys(part.strip() for part in parts if part.strip()))
            else:
                merged[key] = value
    # The body is always JSON: said unless a layer said otherwise (or removed the header on purpose).
    if not typed:
        merged["content-type"] = "application/json"
    return merged


#: What preparing a stream gives: the call and the options it runs with (ready to send), or the events
#: of a stream that ended before anything was sent.
_Prepared = tuple["StreamCall", StreamOptions] | list[AssistantMessageEvent]


@dataclass(slots=True)
class _Draft:
    """A request built and authenticated, its payload not yet encoded (``on_payload`` may replace it)."""

    request: WireRequest
    options: StreamOptions
    signer: Signer | None
    rule: ApiKey | None
    key: str | None
    given: list[str]
    multiplier: float


def _batches(
    wire: WireApi[Any],
    model: Model,
    context: Context,
    options: StreamOptions | None,
    observer: StreamTelemetry | None,
) -> AsyncGenerator[Sequence[AssistantMessageEvent] | Relay, None]:
    """The stream's source. The request is prepared here, as the StreamFn is called (building it is
    pure; nothing is sent before the consumer reads), so the source is the kit's own generator for the
    call (:func:`~streamfns.kit.http.run_stream`) with none of ours around it: one more would be an
    object and a weak reference held for the stream's life, for the collector to walk a thousand
    streams at a time. An ``on_payload`` hook, which may be async, is awaited when the consumer first
    reads. Whatever preparing raises unforeseen is raised there too (the stream turns it into its
    error event): calling the StreamFn never raises."""
    try:
        builder = MessageBuilder(model if isinstance(model, Model) else None)  # pyright: ignore[reportUnnecessaryIsInstance]
        draft = _draft(wire, model, context, options, builder)
        if not isinstance(draft, _Draft):
            return _once(draft)
        if draft.options.on_payload is not None:
            return _hooked(wire, model, draft, builder, observer)
        prepared = _ready(wire, model, draft, payload=draft.request.payload, builder=builder, observer=observer)
    except Exception as exc:  # the never-raise contract: raised where the stream reports it
        return _raising(exc)
    return _source(prepared, builder, model)


def _source(
    prepared: _Prepared, builder: MessageBuilder, model: Model
) -> AsyncGenerator[Sequence[AssistantMessageEvent] | Relay, None]:
    """The source of a prepared stream: the kit's reading of its call, or its events if it ended."""
    from streamfns.kit.http import run_stream  # noqa: PLC0415 - httpx loads on the first call, not at import

    if isinstance(prepared, list):
        return _once(prepared)
    call, options = prepared
    return run_stream(call, builder, model, options)


async def _once(events: list[AssistantMessageEvent]) -> AsyncGenerator[Sequence[AssistantMessageEvent], None]:
    """A stream that ended before its request was sent: its events, once."""
    yield events


async def _raising(exc: Exception) -> AsyncGenerator[Sequence[AssistantMessageEvent], None]:
    """A source that raises ``exc`` when first read (see :func:`_batches`)."""
    raise exc
    yield ()  # pragma: no cover - makes this an async generator


async def _hooked(
    wire: WireApi[Any], model: Model, draft: _Draft, builder: MessageBuilder, observer: StreamTelemetry | None
) -> AsyncGenerator[Sequence[AssistantMessageEvent] | Relay, None]:
    """The source of a stream whose payload passes the caller's ``on_payload`` hook first."""
    opts = draft.options
    payload = draft.request.payload
    assert opts.on_payload is not None
    try:
        replaced = await call_hook(opts.on_payload, payload, model)
    except Exception as exc:  # a caller's hook failing is reported, not raised
        said = f"on_payload raised {type(exc).__name__}: {exc}"
        yield _failed(builder, ErrorInfo.of("config"), said, wire=wire, model=model, options=opts, key=draft.key)
        return
    if isinstance(replaced, dict):
        payload = cast("dict[str, Any]", replaced)
    batches = _source(_ready(wire, model, draft, payload=payload, builder=builder, observer=observer), builder, model)
    try:
        while True:
            try:
                # Handed on with no local of ours holding it: the steady state's Relay, yielded once
                # and kept by the stream, would otherwise stay referenced here for the stream's life.
                yield await anext(batches)
            except StopAsyncIteration:
                return
    finally:
        aclose = getattr(batches, "aclose", None)
        if aclose is not None:
            await aclose()


def _draft(
    wire: WireApi[Any], model: Model, context: Context, options: StreamOptions | None, builder: MessageBuilder
) -> _Draft | list[AssistantMessageEvent]:
    """Steps 1–4 of the module docstring up to ``on_payload``: the request built and its key found,
    or the events of the stream that this ended."""
    problem = request_problem(model, context, options)
    if problem is not None:
        kind, message = problem
        said = f"{wire.vendor} request not sent: {message}"
        return _failed(builder, ErrorInfo.of(kind), said, wire=wire, model=model, options=options)
    opts = options if options is not None else StreamOptions()
    signal = opts.signal
    if signal is not None and signal.aborted:
        builder.abort(signal.reason)
        return builder.drain()
    # What the caller handed over is secret from the start (the same fail-closed rule as below). Every
    # failure from before the request is sent — a builder, a key rule or a hook that failed quoting a
    # header value, the key or the base URL — ends through _failed: the one cut and secret set.
    given = _given_secrets(model, opts)
    try:
        # The request first: a mistyped compat flag is the real problem, not the key it may choose.
        request = _build(wire, model, context, opts)
        signer = _provider_signer(wire, model) if opts.api_key is None else None
        if signer is None:
            signer = wire.signer
            rule = _key_rule(wire, model)
        else:
            rule = None  # the provider's login authenticates: no key is looked for
        key = rule.resolve(opts.api_key, wire.vendor) if rule is not None else None
    except StreamFailure as failure:
        return _failed(builder, failure.info, failure.message, wire=wire, model=model, options=opts)
    multiplier = request.price_multiplier
    # Typed float, but a third party's builder may hand anything: a bool, a string, NaN.
    if type(multiplier) not in (int, float) or not 0 <= multiplier < math.inf:
        problem = f"price_multiplier {multiplier!r} is not a finite, non-negative number"
        said = f"{wire.vendor} request not sent: {problem}"
        return _failed(builder, ErrorInfo.of("config"), said, wire=wire, model=model, options=opts, key=key)
    return _Draft(request, opts, signer, rule, key, given, float(multiplier))


def _ready(
    wire: WireApi[Any],
    model: Model,
    draft: _Draft,
    *,
    payload: dict[str, Any],
    builder: MessageBuilder,
    observer: StreamTelemetry | None,
) -> _Prepared:
    """Steps 4–5 of the module docstring from ``payload`` (the request's, or what ``on_payload`` made
    of it): the call ready to send, or the events of the stream that this ended."""
    from streamfns.kit.http import StreamCall  # noqa: PLC0415 - httpx loads on the first call, not at import

    opts, request, key, rule, signer = draft.options, draft.request, draft.key, draft.rule, draft.signer
    try:
        # Lone surrogates were scrubbed by transform_messages; "replace" is a last line of defence.
        body = _BODY_JSON.encode(payload).encode("utf-8", "replace")
    except (TypeError, ValueError) as exc:
        said = f"the {wire.vendor} payload is not valid JSON: {exc}"
        return _failed(builder, ErrorInfo.of("config"), said, wire=wire, model=model, options=opts, key=key)
    key_headers = rule.headers(key) if rule is not None else {}
    headers = _merge_headers(wire, [key_headers, request.headers, model.headers or {}, opts.headers or {}])
    # One secret set, fail-closed (normalize.wire.tags): the key as given and as sent, every header value
    # the key rule, the builder, model.headers or options.headers supplied that is not on the public
    # list, and the URL's credentials. Every message is redacted of it and the request tagged with it.
    secrets = [
        *(sent for sent in (key,) if sent),
        *draft.given,
        *credentials_in(headers),
        *credentials_in_url(request.url),
    ]
    sign = unauthorized = None
    if signer is not None:  # the request as the signer sees it: made only for one
        signing = SigningRequest(
            method="POST", url=request.url, headers=dict(headers), body=body, model=model, options=opts
        )
        sign = _signing(wire, signer, signing, secrets)
        unauthorized = _renewing(wire, signer, signing, secrets)
    call = StreamCall(
        api=wire.api,
        url=request.url,
        headers=headers,
        body=body,
        framing=wire.framing,
        decoder=wire.decoder,
        errors=wire.errors,
        end_marker=wire.end_marker,
        vendor=wire.vendor,
        sign=sign,
        unauthorized=unauthorized,
        login_hint=_login_hint(signer),
        secrets=list(dict.fromkeys(secrets)),
        observer=observer,
        price_multiplier=draft.multiplier,
    )
    if observer is not None:
        observer.requested(request.url, call.secrets)
    return call, opts


def _provider_signer(wire: WireApi[Any], model: Model) -> Signer | None:
    """The model's provider's signer (None: it has none); one that cannot be loaded is ``config``."""
    try:
        return provider_signer(model.provider)
    except ProviderSignerError as exc:
        raise StreamFailure.of("config", f"{wire.vendor} request not sent: {exc}") from None


def _is_async(function: object) -> bool:
    """Whether calling ``function`` makes a coroutine: an ``async def`` function, or an object whose
    ``__call__`` is one (a signer class with state: a login, a token cache)."""
    call = getattr(function, "__call__", None)  # noqa: B004 - the method itself is inspected, not callability
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(call)


def _login_hint(signer: Signer | None) -> str | None:
    """The signer's ``login_hint`` (see :mod:`streamfns.kit.signing`), when it has a usable one."""
    hint = getattr(signer, "login_hint", None)
    return hint.strip() if isinstance(hint, str) and hint.strip() else None


def _renewing(
    wire: WireApi[Any], signer: Signer | None, request: SigningRequest, secrets: Sequence[str]
) -> Callable[[], Awaitable[bool]] | None:
    """The call's "renew the login after a 401" step: the signer's ``unauthorized`` (None when it has
    none). Its failure is the stream's: a StreamFailure as it is (redacted), anything else ``auth``."""
    renew = getattr(signer, "unauthorized", None)
    if renew is None or not callable(renew):
        return None

    async def unauthorized() -> bool:
        try:
            again = renew(request)
            if inspect.isawaitable(again):
                again = await again
        except StreamFailure as failure:
            raise StreamFailure(failure.info, redact(failure.message, secrets)) from None
        except Exception as exc:  # a refresh that failed is reported, not raised
            detail = redact(f"{type(exc).__name__}: {exc}", secrets)
            raise StreamFailure.of("auth", f"cannot renew the {wire.vendor} login: {detail}") from None
        return again is True

    return unauthorized


def _signing(
    wire: WireApi[Any], signer: Signer | None, request: SigningRequest, secrets: Sequence[str]
) -> Callable[[], Awaitable[Signature]] | None:
    """The signing step of one call (None when there is no signer)."""
    if signer is None:
        return None
    return _Signing(wire, signer, request, secrets)


class _Signing:
    """One call's signing step: ``await step()`` signs its request (once per attempt). An object of its
    own rather than a closure: a call keeps it for its whole life (a retry signs again), and a closure
    over five names is seven objects for the collector to walk per stream (the function, its cells and
    their tuple), this one."""

    __slots__ = ("_is_async", "_request", "_secrets", "_signer", "_wire")

    def __init__(self, wire: WireApi[Any], signer: Signer, request: SigningRequest, secrets: Sequence[str]) -> None:
        self._wire = wire
        self._signer = signer
        self._request = request
        self._secrets = secrets
        self._is_async = _is_async(signer)

    async def __call__(self) -> Signature:
        wire, signer, request, secrets = self._wire, self._signer, self._request, self._secrets
        signature: object
        try:
            if self._is_async:
                signature = await cast("Awaitable[object]", signer(request))
            else:
                # A credential chain may block on the network (STS, the instance metadata service): in a
                # thread, so an abort or the total timeout still lands while it works.
                signature = await asyncio.to_thread(signer, request)
                if inspect.isawaitable(signature):
                    signature = await signature
        except StreamFailure as failure:
            raise StreamFailure(failure.info, redact(failure.message, secrets)) from None
        except CompatError as exc:
            raise StreamFailure.of("config", f"{wire.vendor} request not sent: {exc}") from None
        except Exception as exc:  # no credentials, a token that cannot be refreshed: reported, not raised
            detail = redact(f"{type(exc).__name__}: {exc}", secrets)
            raise StreamFailure.of("auth", f"cannot sign the {wire.vendor} request: {detail}") from None
        problem = _signature_problem(signature)
        if problem is not None:
            raise StreamFailure.of("config", f"the {wire.vendor} signer returned {problem}")
        signature = cast("Signature", signature)
        # Every header value the signer supplied is a secret too, by the same fail-closed rule (a token in
        # Authorization, a gateway password in a header of its own), whether or not it lists it.
        carried = credentials_in(signature.headers)
        origin = _checked_origin(wire, signature.origin)
        return Signature(dict(signature.headers), (*signature.secrets, *carried), origin)


def _checked_origin(wire: WireApi[Any], origin: object) -> str | None:
    """A signature's ``origin``, checked as an endpoint without a path (``scheme://host[:port]``,
    normalized); anything else is ``config``, before anything is sent."""
    if origin is None:
        return None
    if not isinstance(origin, str):
        kind = type(origin).__name__
        raise StreamFailure.of("config", f"the {wire.vendor} signer returned an origin that is a {kind}")
    try:
        checked = endpoint_url(origin, source=f"the {wire.vendor} signer's origin")
    except CompatError as exc:
        raise StreamFailure.of("config", f"{wire.vendor} request not sent: {exc}") from None
    if checked.count("/") != 2:  # scheme:// and nothing after the authority
        raise StreamFailure.of(
            "config",
            f"{wire.vendor} request not sent: the signer's origin has a path; an origin is scheme://host[:port]",
        )
    return checked


def _signature_problem(signature: object) -> str | None:
    """What is wrong with what a signer returned (None: a usable Signature)."""
    if not isinstance(signature, Signature):
        return f"a {type(signature).__name__}, not a streamfns.kit.Signature"
    headers = cast("object", signature.headers)
    if not isinstance(headers, Mapping) or not all(
        isinstance(name, str) and isinstance(value, str)
        for name, value in cast("Mapping[object, object]", headers).items()
    ):
        return "headers that are not a mapping of strings to strings"
    secrets = cast("object", signature.secrets)
    if not isinstance(secrets, tuple | list) or not all(
        isinstance(secret, str) for secret in cast("Sequence[object]", secrets)
    ):
        return "secrets that are not a tuple of strings"
    return None


def _failed(
    builder: MessageBuilder,
    info: ErrorInfo,
    message: str,
    *,
    wire: WireApi[Any],
    model: object,
    options: object,
    key: str | None = None,
) -> list[AssistantMessageEvent]:
    """End a stream that failed before its request was sent, and return its events: through
    :func:`~streamfns.kit.keys.redact_message`, the choke point every later failure passes
    (``streamfns.kit.http``), so the message is cut to ``MAX_ERROR_TEXT`` and redacted of every secret
    it may quote (:func:`_failure_secrets`). ``key`` is the key once resolved."""
    builder.fail(info, message)
    redact_message(builder.message, _failure_secrets(wire, model, options, key))
    return builder.drain()


def _failure_secrets(wire: WireApi[Any], model: object, options: object, key: str | None) -> list[str]:
    """Every secret a failure from before the request may quote: the key (as resolved, or, before it
    is, the one resolving would find, in ``StreamOptions.api_key`` or the environment: a hook may read
    it there), what the caller handed over (:func:`_given_secrets`) and the credentials of
    ``model.base_url``. Computed only when a stream fails; never raises (``model`` and ``options`` may
    be the very arguments found wrong)."""
    found = [key] if key else _known_key(wire, model, options)
    found.extend(_given_secrets(model, options))
    base_url = getattr(model, "base_url", None)
    if isinstance(base_url, str) and base_url:
        with contextlib.suppress(Exception):
            found.extend(credentials_in_url(base_url))
    return found


def _known_key(wire: WireApi[Any], model: object, options: object) -> list[str]:
    """The key a stream would send, when one can be found without failing (none otherwise)."""
    explicit = getattr(options, "api_key", None)
    try:
        rule = _key_rule(wire, cast("Model", model))
        found = rule.resolve(explicit if isinstance(explicit, str) else None, wire.vendor) if rule else None
    except Exception:  # no key, or a key rule that fails: nothing to redact beyond what was given
        return []
    return [found] if found else []


def _given_secrets(model: object, options: object) -> list[str]:
    """The secrets the caller handed over before anything is built: the key option, and every header
    value of ``model.headers``, ``options.headers`` and the caller's own HTTP client that is not public
    (:func:`~streamfns.kit.keys.credentials_in`). A client's default headers never pass through the
    kit's merge, but a server may echo them all the same. Never raises: a layer that is not a mapping
    (arguments :func:`normalize.request_problem` refused) is skipped."""
    client = getattr(options, "http_client", None)
    found: list[str] = []
    api_key = getattr(options, "api_key", None)
    if isinstance(api_key, str) and api_key:
        found.append(api_key)
    for layer in (getattr(model, "headers", None), getattr(options, "headers", None), getattr(client, "headers", None)):
        if isinstance(layer, Mapping):
            items = cast("Mapping[object, object]", layer).items()
            with contextlib.suppress(Exception):
                found.extend(credentials_in({str(name): str(value) for name, value in items if value is not None}))
    return found


def _key_rule(wire: WireApi[Any], model: Model) -> ApiKey | None:
    if wire.key is None or isinstance(wire.key, ApiKey):
        return wire.key
    try:
        return wire.key(model)
    except CompatError as exc:
        raise StreamFailure.of("config", f"{wire.vendor} request not sent: {exc}") from None
    except Exception as exc:  # a key rule that fails is the adapter's configuration, reported not raised
        raise StreamFailure.of("config", f"cannot choose the {wire.vendor} key: {type(exc).__name__}: {exc}") from None


def _build(wire: WireApi[Any], model: Model, context: Context, options: StreamOptions) -> WireRequest:
    try:
        return wire.build_request(model, context, options)
    except CompatError as exc:
        raise StreamFailure.of("config", f"{wire.vendor} request not sent: {exc}") from None
    except Exception as exc:  # the never-raise contract: a request we cannot build is an error event
        # Not redacted here: the caller ends the stream through _failed, which cuts and redacts.
        detail = f"{type(exc).__name__}: {exc}"
        raise StreamFailure.of("invalid_request", f"cannot build the {wire.vendor} request: {detail}") from None
