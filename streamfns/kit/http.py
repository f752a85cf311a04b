"""The HTTP half of every adapter, whatever its framing: send, sign, retry, read, time out, abort, close.

:func:`run_stream` POSTs an encoded payload and feeds the frames of a 2xx response (cut by the api's
framing: server-sent events, JSON lines, event-stream messages) to the api's decoder, yielding the
builder's events as they come. It owns the rules every adapter shares:

- an abort at any point — while connecting, while backing off between retries, while waiting for
  the next bytes of a silent server or while working through a large read — ends the stream
  ``aborted`` at once, with the partial content; ``StreamOptions.total_timeout`` ends it the same way,
  as ``timeout``, across every attempt;
- ``StreamOptions.progress_timeout`` (default 300 s) bounds the time a 2xx body may go without content:
  its clock restarts only when the decoder turns frames into events for the consumer, so keep-alive
  comments, ``ping`` frames and other frames without content cannot extend it; when it runs out the
  attempt ends ``timeout`` naming it (retried like an idle timeout, only before any output);
- a signing step (when the api has one) runs before each attempt, on the final bytes; its failure ends
  the stream before anything is sent; the signature's secrets join the call's (a renewed token too),
  and its ``origin``, when it gives one, replaces the URL's scheme, host and port for that attempt;
- a **401** before any output, when the signer can renew its login (``unauthorized``), renews it once
  per stream and sends the request again at once, signed afresh, not counted in ``max_retries``; when
  it cannot (it says False, or a second 401 comes) the stream ends ``auth``, its message ending
  ``"; log in again: <login_hint>"`` when the signer gives a hint;
- a non-2xx status becomes an ``error`` built by the api's :class:`~streamfns.kit.ErrorTable`; a 2xx
  whose content type the framing does not accept (JSON, HTML), or whose body holds no frame at all
  but looks like a document, is a ``protocol`` error quoting it; so is a 2xx body that starts like a
  markup page (``<`` after an optional UTF-8 or UTF-16 byte order mark and whitespace: an HTML error or
  login page)
  and gives no content event, whatever the framing made of it (a line no JSON parse takes, a last
  line without its newline, an impossible event-stream prelude) and however its lines break — never
  ``truncated``, never retried; the quote is its first 300 bytes (read on that far, under the idle
  and progress clocks, when the framing stopped earlier), whitespace folded, NULs dropped, redacted;
- retries (``max_retries``) happen only before any content block: on retryable statuses, network
  errors, timeouts, vendor errors the decoder marks retryable and streams cut before their terminal
  marker; the delay honours ``retry-after-ms`` / ``retry-after`` and is abortable; every wait is
  capped by ``max_retry_delay_s`` — a server asking for longer ends the stream at once, and 0 means
  never wait (retry at once, unless the server asks for a delay, which then ends the stream);
- the body is read raw and decoded by :mod:`streamfns.kit.decoding` (the kit asks for
  ``accept-encoding: gzip, deflate`` unless the caller's headers say otherwise): in pieces of at most
  64 KiB, letting the loop run between the pieces of one read, at most 256 MiB in all for a
  compressed body; stacked or unknown content codings and a body over that cap are ``protocol``;
- the decoder stops the read at the vendor's terminal marker; EOF before it is ``truncated``; bytes
  the framing refuses (a bad CRC, a frame over the size limit) are ``protocol``, a body that ends inside
  a frame is ``truncated``; an exception escaping the decoder is a ``protocol`` error that keeps every
  event built before it;
- the response is closed on every path, including a consumer that stops iterating early.

The HTTP library is behind :mod:`streamfns.kit.transport` (httpx by default, aiohttp as an extra, or
the caller's own client: :mod:`streamfns.kit.transports` chooses). Its outcomes, settled the same way
on every transport: a refused or reset connection, a body cut inside a chunk, and a body that fails
to decompress (a gzip CRC) are ``network`` (retryable: the bytes were damaged in transit); a connect
timeout is ``timeout``, and so is a wait on the server longer than the idle timeout (``timeout``,
120 s by default: measured by the kit's own clock, from each send or read until its bytes come, so
it arms no timer per read and holds on a transport that has no timeouts of its own); a URL or header
that cannot be sent is ``config``; a 3xx is ``config`` naming the ``location`` (redirects are not
followed: a POST must not be silently re-sent elsewhere).
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, cast

from normalize import AssistantMessageEvent, ErrorInfo, ErrorKind, MessageBuilder, Model, Relay, StreamOptions
from normalize.secret_forms import MASK, masked_headers, masked_repr, masked_url
from normalize.wire import FrameTooLarge, Framing, FramingError
from normalize.wire.tags import API_EXTENSION, SECRETS_EXTENSION
from streamfns.kit.decoder import Decoder, DecoderFactory
from streamfns.kit.decoding import (
    ACCEPT_ENCODING,
    PIECE_BYTES,
    BodyReader,
    BodyRefused,
    ContentDecoder,
    content_decoder,
)
from streamfns.kit.failure import StreamFailure
from streamfns.kit.hooks import call_hook
from streamfns.kit.keys import redact_message
from streamfns.kit.scope import Aborted, Expired, Idle, Scope, Stalled
from streamfns.kit.shapes import ShortcutReads
from streamfns.kit.signing import Signature
from streamfns.kit.transport import HttpRequest, HttpResponse, Transport, TransportError
from streamfns.kit.transports import TransportChoiceError, transport_for

if TYPE_CHECKING:
    from streamfns.kit.errors import ErrorTable
    from streamfns.kit.telemetry import StreamTelemetry

__all__ = ["DEFAULT_CONNECT_TIMEOUT_S", "DEFAULT_IDLE_TIMEOUT_S", "StreamCall", "run_stream"]

DEFAULT_CONNECT_TIMEOUT_S = 15.0
DEFAULT_IDLE_TIMEOUT_S = 120.0
_MAX_ERROR_BODY = 64 * 1024
#: How much of a body is kept to quote it when it turns out not to be an event stream.
_HEAD_BYTES = 300
#: The byte order marks a page may start with, and the encoding of the text after each: UTF-8, and
#: UTF-16 (little- and big-endian) — a page after a UTF-16 mark is still a page, not a cut stream.
_BOMS: tuple[tuple[bytes, str], ...] = (
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)
#: The whitespace skipped before a body's first mark (ASCII only, as a framing's own whitespace is).
_SPACE = " \t\n\r\x0b\x0c"
#: The failures a framing makes of a page sent instead of a stream (see ``_a_page_instead``).
_PAGE_MISREAD: frozenset[ErrorKind] = frozenset({"protocol", "truncated"})


@dataclass(slots=True, kw_only=True)
class StreamCall:
    """One prepared call: where to send what, and how to read the answer."""

    api: str
    url: str
    headers: dict[str, str]
    body: bytes
    framing: Framing[Any]
    #: Makes the decoder; each attempt gets a fresh one, so nothing a failed attempt decoded (ids,
    #: open blocks, half a response) leaks into the retry.
    decoder: DecoderFactory[Any]
    errors: ErrorTable
    end_marker: str
    vendor: str
    #: Signs one attempt (None: nothing to sign); may raise StreamFailure.
    sign: Callable[[], Awaitable[Signature]] | None = None
    #: After a 401 before any output: renews the signer's login, True when a retry may succeed (None:
    #: the signer cannot); may raise StreamFailure. Called at most once per stream.
    unauthorized: Callable[[], Awaitable[bool]] | None = None
    #: How the user logs in again (the signer's ``login_hint``), said when a stream ends on a 401.
    login_hint: str | None = None
    #: Credentials sent with the request; every error message is redacted of them (a signature's
    #: secrets join them).
    secrets: list[str] = field(default_factory=list[str])
    #: The stream's telemetry, told of each retry (None: nobody listens).
    observer: StreamTelemetry | None = None
    #: What the request costs relative to the model's rates (WireRequest.price_multiplier): applied to
    #: the builder before the first attempt and again after each reset for a retry, which forgets it.
    price_multiplier: float = 1.0

    def __repr__(self) -> str:
        # The key header, the URL's credentials and the secrets show masked, as pydantic's SecretStr
        # shows a secret (the fields themselves are untouched).
        return masked_repr(
            self,
            url=masked_url(self.url),
            headers=masked_headers(self.headers),
            secrets=[MASK for _ in self.secrets],
        )


def _transport_failure(exc: TransportError, vendor: str) -> StreamFailure:
    """A transport's failure, said the same way whatever the transport (see :mod:`streamfns.kit.transport`)."""
    return StreamFailure.of(exc.kind, f"{vendor} {exc.what}: {exc.detail}")


def _backoff(attempt: int) -> float:
    return min(0.5 * 2**attempt, 8.0) * (1 - random.random() * 0.25)


def retry_delay(info: ErrorInfo, attempt: int, options: StreamOptions) -> tuple[float | None, str]:
    """``(seconds, "")`` to wait before retrying after ``info`` on ``attempt`` (0-based), or
    ``(None, note)`` when the failure must end the stream; ``note`` explains a refusal worth saying.

    Every wait is at most ``options.max_retry_delay_s``, 0 included (0: never wait): our own back-off
    is shortened to it, and a longer delay the server asks for ends the stream at once (waiting less
    than it asked would only be refused again)."""
    if not info.retryable or attempt >= options.max_retries:
        return None, ""
    cap = options.max_retry_delay_s
    requested = info.retry_after_s
    if requested is None or math.isnan(requested):  # none asked (NaN orders nothing: read as none)
        return min(_backoff(attempt), cap), ""
    requested = max(0.0, requested)
    if requested > cap:
        return None, f" (the server asked to retry after {requested:g}s, over the {cap:g}s cap)"
    return requested, ""


async def run_stream(
    call: StreamCall, builder: MessageBuilder, model: Model, options: StreamOptions
) -> AsyncGenerator[Sequence[AssistantMessageEvent] | Relay, None]:
    """Run one streaming call (see the module docstring); yields batches of builder events."""
    idle = options.timeout or DEFAULT_IDLE_TIMEOUT_S
    connect = options.connect_timeout or min(idle, DEFAULT_CONNECT_TIMEOUT_S)
    try:
        transport, owned = transport_for(options.http_client, options.transport)
    except TransportChoiceError as exc:
        builder.fail(ErrorInfo.of("config"), f"{call.vendor} request not sent: {exc}")
        _scrub(builder, call)  # the one choke point: a client's repr in the message may carry a header
        yield builder.drain()
        return
    scope = Scope(options.signal, options.total_timeout, options.progress_timeout, idle)
    if call.price_multiplier != 1.0:
        builder.price_multiplier(call.price_multiplier)
    try:
        attempt = 0
        renewed = False  # whether the signer's login was renewed after a 401 (once per stream)
        while True:
            try:
                # One attempt, in this generator itself (no generator of its own per attempt, per read
                # or per body: each would be an object, a frame and a weak reference held for the
                # stream's life). The response is closed in the finally: if our consumer stops early,
                # closing this generator closes it now, not whenever the collector finalizes it.
                response, content_type = await _send(
                    call, model=model, options=options, transport=transport, timeouts=(connect, idle), scope=scope
                )
                try:
                    builder.start()
                    if builder.events:
                        yield builder.drain()
                    reading = _start_reading(response, call, builder, model, scope)
                    scope.watch_progress()
                    try:
                        # The stream awaits reading.next_batch directly for each read (the steady state
                        # costs one coroutine); it resumes us once reading stops, and says why.
                        yield Relay(reading.next_batch, steps=reading)
                        while reading.stopped is None:  # a consumer that did not take the relay: drive it here
                            batch = await reading.next_batch()
                            if batch is not None:
                                yield batch
                    finally:
                        scope.unwatch_progress()
                    last = await _settle(reading, response, call, scope, content_type)
                    if last is not None:
                        if builder.finished:
                            _scrub(builder, call)
                        yield last
                finally:
                    await response.aclose()
                if builder.finished:
                    return
                # The body ended without the terminal marker.
                failure = StreamFailure.of(
                    "truncated",
                    f"{call.vendor} stream ended before {call.end_marker}",
                )
            except StreamFailure as exc:
                failure = exc
            except Idle:
                scope.idle_over()
                failure = StreamFailure.of(
                    "timeout", f"{call.vendor} sent nothing within the idle timeout: no bytes for {idle:g}s"
                )
            except Stalled:
                failure = StreamFailure.of(
                    "timeout",
                    f"{call.vendor} stream sent no content for {options.progress_timeout:g}s (the progress_timeout; "
                    "keep-alives and frames without content do not extend it)",
                )
            except (Aborted, Expired) as interruption:
                _interrupted(builder, call, options, interruption, None)
                yield builder.drain()
                return
            # Only for a signer that logs in (one that renews, or says how to log in): a key's 401 is
            # read by the api's error table as it always was.
            if failure.info.status == 401 and not builder.output_started and (call.unauthorized or call.login_hint):
                if call.unauthorized is not None and not renewed:
                    renewed = True
                    try:
                        again = await scope.run(call.unauthorized())
                    except StreamFailure as exc:
                        again, failure = False, exc
                        hint = call.login_hint
                        if exc.info.kind == "auth" and hint and hint not in exc.message:
                            # Renewing failed outright: the way back is still a new login.
                            failure = StreamFailure(exc.info, f"{exc.message}; log in again: {hint}")
                    except (Aborted, Expired) as interruption:
                        _interrupted(builder, call, options, interruption, failure)
                        yield builder.drain()
                        return
                    # Renewed: sent again at once, signed afresh; a login that expired is no transient
                    # failure, so this retry is not one of max_retries.
                    if again and builder.reset_for_retry():
                        if call.price_multiplier != 1.0:
                            builder.price_multiplier(call.price_multiplier)
                        continue
                if failure.info.status == 401:
                    failure = _login_again(failure, call.login_hint)
            delay, note = retry_delay(failure.info, attempt, options)
            if delay is None or not builder.reset_for_retry():
                builder.fail(failure.info, failure.message + note)
                _scrub(builder, call)
                yield builder.drain()
                return
            if call.price_multiplier != 1.0:
                builder.price_multiplier(call.price_multiplier)  # the reset forgot it; the call's rates stand
            if call.observer is not None:
                call.observer.retrying(failure.info, attempt + 1, delay)
            try:
                await scope.run(asyncio.sleep(delay))
            except (Aborted, Expired) as interruption:
                _interrupted(builder, call, options, interruption, failure)
                yield builder.drain()
                return
            attempt += 1
    finally:
        scope.close()
        if owned:
            await transport.aclose()


def _login_again(failure: StreamFailure, hint: str | None) -> StreamFailure:
    """A 401 the signer could not get past: ``auth``, never retried, saying how to log in again."""
    info = failure.info
    ended = ErrorInfo.of("auth", status=info.status, code=info.code, retry_after_s=info.retry_after_s)
    return StreamFailure(ended, failure.message + (f"; log in again: {hint}" if hint else ""))


def _scrub(builder: MessageBuilder, call: StreamCall) -> None:
    """Cut and redact the terminal message, whatever ended it (:func:`~streamfns.kit.keys.redact_message`:
    the error message, the raw stop reason, every string of the ``ErrorInfo``): a failure's message and
    code, and vendor text that reached it through ``builder.stop(error_message=...)``."""
    redact_message(builder.message, call.secrets)


def _interrupted(
    builder: MessageBuilder, call: StreamCall, options: StreamOptions, reason: Exception, waiting: StreamFailure | None
) -> None:
    """End the stream for an abort, or for the total timeout (``waiting``: the failure being retried)."""
    if isinstance(reason, Aborted):
        builder.abort(options.signal.reason if options.signal else None)
    else:
        message = f"{call.vendor} stream exceeded the total timeout of {options.total_timeout:g}s"
        if waiting is not None:
            message += f" while waiting to retry after: {waiting.message}"
        builder.fail(ErrorInfo.of("timeout"), message)
    _scrub(builder, call)


async def _send(
    call: StreamCall,
    *,
    model: Model,
    options: StreamOptions,
    transport: Transport,
    timeouts: tuple[float, float],
    scope: Scope,
) -> tuple[HttpResponse, str]:
    """Sign and send one attempt's request, and read its answer's head: the response of a 2xx that
    the framing accepts, and its content type. Anything else raises (a :class:`StreamFailure` for the
    status, the content type, the transport or the caller's hook), and its response is closed."""
    vendor = call.vendor
    headers = call.headers
    if "accept-encoding" not in headers:
        # Said explicitly, so no client default (httpx adds br or zstd when their packages are
        # installed) asks for a coding the kit does not decode; a caller's own value is kept.
        headers = {**headers, "accept-encoding": ACCEPT_ENCODING}
    url = call.url
    if call.sign is not None:
        signature = await scope.run(call.sign())
        # Each attempt's own: a token renewed after a 401 joins the set the old one is in.
        call.secrets.extend(secret for secret in signature.secrets if secret not in call.secrets)
        headers = {**headers, **{name.lower(): value for name, value in signature.headers.items()}}
        if signature.origin is not None:
            url = _with_origin(url, signature.origin)
            if call.observer is not None and url != call.url:
                call.observer.requested(url, call.secrets)  # the span names the host actually called
    request = HttpRequest(
        url=url,
        headers=headers,
        body=call.body,
        connect_timeout=timeouts[0],
        idle_timeout=timeouts[1],
        extensions={API_EXTENSION: call.api, SECRETS_EXTENSION: tuple(call.secrets)},
    )
    try:
        # Connecting is bounded by the connect timeout: the idle clock allows it, then bounds the head.
        response: HttpResponse = await scope.read(transport.send(request), timeouts[0])
    except TransportError as exc:
        raise _transport_failure(exc, vendor) from None
    try:
        content_type = await _head_of(response, call, model=model, options=options, scope=scope)
    except BaseException:
        await response.aclose()
        raise
    return response, content_type


async def _head_of(
    response: HttpResponse, call: StreamCall, *, model: Model, options: StreamOptions, scope: Scope
) -> str:
    """The content type of an answer the kit reads as a stream (a 2xx the framing accepts), after the
    caller's ``on_response`` hook; raises a :class:`StreamFailure` for anything else."""
    vendor = call.vendor
    if options.on_response is not None:
        try:
            await scope.run(call_hook(options.on_response, response.status, response.headers, model))
        except (Aborted, Expired):
            raise
        except Exception as exc:  # a caller's hook failing is reported, not raised
            raise StreamFailure.of("config", f"on_response raised {type(exc).__name__}: {exc}") from None
    status = response.status
    if not 200 <= status < 300:
        raw = await _read_limited(response, scope, vendor)
        raise call.errors.from_body(status, response.headers, raw)
    content_type = response.headers.get("content-type", "").lower()
    try:
        accepted = call.framing.accepts(content_type)
    except Exception as exc:
        raise _framing_bug(call, exc) from None
    if not accepted:
        raw = await _read_limited(response, scope, vendor)
        raise _not_a_stream(call, status, content_type, raw)
    return content_type


def _with_origin(url: str, origin: str) -> str:
    """``url`` with its ``scheme://host[:port]`` replaced by ``origin`` (checked by the kit before:
    ``streamfns.kit.wire``); the path, query and fragment are kept."""
    start = url.find("://")
    start = start + 3 if start >= 0 else 0
    ends = [found for found in (url.find(mark, start) for mark in "/?#") if found >= 0]
    return origin + url[min(ends) :] if ends else origin


def _not_a_stream(call: StreamCall, status: int, content_type: str, head: bytes) -> StreamFailure:
    excerpt = " ".join(_head_text(head).split())
    what = "an event stream" if call.framing.unit == "event" else _a(f"{call.framing.name} stream")
    return StreamFailure(
        ErrorInfo.of("protocol", status=status),
        f"{call.vendor} answered {status} with {content_type or 'no content type'}, not {what}: {excerpt}",
    )


def _head_text(head: bytes) -> str:
    """The first ``_HEAD_BYTES`` of a body after its byte order mark, as text to quote: decoded in the
    mark's encoding (UTF-8 without one), NULs dropped (UTF-16 without a mark reads as a NUL between
    characters: a quote shows the characters)."""
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            return head[len(bom) : len(bom) + _HEAD_BYTES].decode(encoding, "replace").replace("\x00", "")
    return head[:_HEAD_BYTES].decode("utf-8", "replace").replace("\x00", "")


def _first_mark(head: bytes) -> str:
    """The first character of a body after an optional byte order mark and whitespace ("" for none),
    which tells a document (``{``, ``[``, ``<``) from a stream. After a UTF-16 mark the body is read
    as UTF-16; without one, ``\\x00<`` is a UTF-16 big-endian ``<`` (``<\\x00``, little-endian, is
    already one). No other NUL is skipped: an event-stream prelude starts with NULs of its length."""
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            return head[len(bom) : len(bom) + _HEAD_BYTES].decode(encoding, "replace").lstrip(_SPACE)[:1]
    rest = head.lstrip(_SPACE.encode())
    return "<" if rest.startswith(b"\x00<") else rest[:1].decode("latin-1")


def _looks_like_a_document(head: bytearray) -> bool:
    mark = _first_mark(bytes(head))
    return mark != "" and mark in "{[<"


async def _quote_more(reading: _Reading, scope: Scope) -> None:
    """Read on to fill the quoted head of a page the framing stopped on early (its first line, an
    event-stream prelude): at most ``_HEAD_BYTES`` in all, under the progress and idle clocks, so a
    server that drips the rest costs no more than a body without content would. An abort or the total
    timeout still lands; any other trouble just ends the quote where it is."""
    head = reading.head
    if len(head) >= _HEAD_BYTES:
        return
    scope.watch_progress()
    try:
        while len(head) < _HEAD_BYTES:
            piece = await reading.next_piece()
            if piece is None:
                return
            head += piece[: _HEAD_BYTES - len(head)]
    except (Idle, Stalled):
        scope.idle_over()
    except (TransportError, BodyRefused):
        pass
    finally:
        scope.unwatch_progress()


def _a_page_instead(head: bytearray, builder: MessageBuilder) -> bool:
    """Whether a 2xx body that failed is a markup page (an HTML error or login page, an XML error)
    rather than a stream: it starts with ``<`` after an optional byte order mark (UTF-8 or UTF-16) and
    whitespace (see ``_first_mark``), and gave no content event. Framing-independent: no JSON line, no
    event-stream prelude and no server-sent event starts with ``<`` (a ``<`` line is a field the SSE
    parser ignores)."""
    return not builder.output_started and _first_mark(bytes(head)) == "<"


def _a(noun: str) -> str:
    """``an event`` / ``a line`` / ``an aws-eventstream stream``."""
    return f"{'an' if noun[:1] in 'aeiou' else 'a'} {noun}"


def _body(response: HttpResponse, scope: Scope, coding: ContentDecoder | None = None) -> BodyReader:
    """The response body as decoded pieces (:mod:`streamfns.kit.decoding`), by ``coding`` when it is
    known already, else by the response's ``content-encoding``; raises ``BodyRefused`` for a content
    coding the kit does not decode."""
    decoder = coding if coding is not None else content_decoder(response.header_values("content-encoding"))
    return BodyReader(response.read, decoder, scope.read)


async def _read_limited(response: HttpResponse, scope: Scope, vendor: str) -> bytes:
    """The head of a body that is not a stream (an error body, a document), at most 64 KiB. The status
    says what happened: a body that cannot be decoded is quoted as far as it could be (maybe not at all)."""
    chunks: list[bytes] = []
    size = 0
    try:
        body = _body(response, scope)
        while size < _MAX_ERROR_BODY:
            piece = await body.next()
            if piece is None:
                break
            chunks.append(piece)
            size += len(piece)
    except BodyRefused:
        pass
    except TransportError as exc:
        raise _transport_failure(exc, vendor) from None
    return b"".join(chunks)[:_MAX_ERROR_BODY]


def _start_reading(
    response: HttpResponse, call: StreamCall, builder: MessageBuilder, model: Model, scope: Scope
) -> _Reading:
    """The attempt's reading of a 2xx body: a fresh decoder, the framing's framer and the body's
    content coding; raises a :class:`StreamFailure` when one cannot be had."""
    decoder = _make_decoder(call, builder, model)
    try:
        framer = call.framing.framer()
    except Exception as exc:  # a third party's framing is code like any other: its failure is reported
        raise _framing_bug(call, exc) from None
    codings = response.header_values("content-encoding")
    try:
        # None for the usual body, which has no coding: read without a decoder, unless a read is too
        # long for one piece (see _Reading).
        coding = content_decoder(codings) if codings else None
    except BodyRefused as exc:
        raise StreamFailure.of(exc.kind, f"{call.vendor} {exc}") from None
    return _Reading(response, coding, framer=framer, decoder=decoder, builder=builder, call=call, scope=scope)


async def _settle(
    reading: _Reading, response: HttpResponse, call: StreamCall, scope: Scope, content_type: str
) -> Sequence[AssistantMessageEvent] | None:
    """What the attempt's reading ended on, once it stopped: the last events to hand over (None:
    none), or the failure raised (see ``_Reading``). The body's end flushes the framer and tells the
    decoder; a page sent instead of a stream is said to be one, quoted."""
    stopped, failure, head, seen = reading.stopped, reading.failure, reading.head, reading.seen
    if stopped == "read":
        if isinstance(failure, TransportError):
            raise _transport_failure(failure, call.vendor) from None
        if isinstance(failure, BodyRefused):
            raise StreamFailure.of(failure.kind, f"{call.vendor} {failure}") from None
        assert failure is not None
        raise failure  # an abort, a deadline, the idle or progress clock: run_stream settles it
    builder = reading.builder
    decoder = reading.decoder
    try:
        if stopped == "feed":
            assert failure is not None
            _framing_failed(failure, call, decoder, builder, seen=seen, head=head, response=response)
            return builder.drain()
        if stopped == "deliver":
            assert failure is not None
            raise failure
        if stopped == "finished":
            return builder.drain() if builder.events else None
        try:
            frames = reading.framer.flush()
        except Exception as exc:
            _framing_failed(exc, call, decoder, builder, seen=seen, head=head, response=response)
            return builder.drain()
        if not seen and not frames and _looks_like_a_document(head):
            raise _not_a_stream(call, response.status, content_type, bytes(head))
        try:
            _deliver(frames, call, decoder, builder)
        except StreamFailure as exc:
            if exc.info.kind != "protocol":
                raise
            # The body ended inside its last frame: it was cut short, not malformed.
            raise StreamFailure.of(
                "truncated", f"{call.vendor} stream ended inside {_a(call.framing.unit)}, before {call.end_marker}"
            ) from None
        if not builder.finished:
            try:
                decoder.on_eof()
            except StreamFailure:
                raise
            except Exception as exc:  # as in _deliver
                raise _decoder_failure(call, exc) from None
    except StreamFailure as exc:
        # Whatever the framing made of a markup page (one line a JSON parse refused, a line cut at EOF,
        # a prelude with an impossible length), it was a page, not a stream cut short: said so, quoted,
        # and not retried.
        if exc.info.kind in _PAGE_MISREAD and _a_page_instead(head, builder):
            await _quote_more(reading, scope)
            raise _not_a_stream(call, response.status, content_type, bytes(head)) from None
        raise
    if not builder.finished and _a_page_instead(head, builder):
        # It ended without its terminal marker and without an event: a page, not a truncated stream.
        raise _not_a_stream(call, response.status, content_type, bytes(head))
    return builder.drain() if builder.events else None


class _Reading:
    """The steady state of one body: read, frame, decode, hand the events over. :meth:`next_batch` is
    the one coroutine per read (the stream awaits it through a :class:`~normalize.Relay`); it never
    raises: what stopped it is kept in ``stopped`` (``eof``, ``finished``, or the stage that failed:
    ``read``, ``feed``, ``deliver``) and ``failure``, for ``_settle`` to settle.

    It holds as few objects as it can (each is one more for the garbage collector to walk, a thousand
    streams at a time): the usual body, which has no content coding, is read with no
    :class:`~streamfns.kit.decoding.BodyReader` until a read is too long for one piece."""

    __slots__ = (
        "_asked",
        "_batch_end",
        "_body",
        "_call",
        "_coding",
        "_failed",
        "_heading",
        "_read",
        "_response",
        "_run_stage",
        "_scope",
        "_shortcut_reads",
        "_taken",
        "builder",
        "decoder",
        "failure",
        "framer",
        "head",
        "seen",
        "stopped",
    )

    def __init__(
        self,
        response: HttpResponse,
        coding: ContentDecoder | None,
        *,
        framer: Any,
        decoder: Decoder[Any],
        builder: MessageBuilder,
        call: StreamCall,
        scope: Scope,
    ) -> None:
        self._response = response
        #: The body's content coding (None: it has none).
        self._coding = coding
        #: The reader that decodes the body (made when it is needed: a coded body, a read too long for
        #: one piece, a quote).
        self._body: BodyReader | None = None
        #: A body without a coding (the usual one) is read here directly, one read one piece, with no
        #: BodyReader frame per read: through the library's own read when the response offers it
        #: (awaited with no coroutine of the transport's around it, a microsecond an event), else
        #: through its ``read``. None: every read goes through the reader.
        self._read: Callable[[], Awaitable[Any]] | None = None
        #: The direct read's other two parts (see DirectRead); ``_failed`` None: ``_read`` is ``read``.
        self._taken: Callable[[Any], bytes | None] | None = None
        self._failed: Callable[[Exception], bytes | Exception] | None = None
        if coding is None or coding.coding == "identity":
            direct = response.direct_read()
            if direct is None:
                self._read = response.read
            else:
                self._read, self._taken, self._failed = direct
        self._scope = scope
        self.framer = framer
        #: Which reads the decoder's shortcut takes (a framer without lone gives it none).
        self._shortcut_reads = ShortcutReads.of(framer)
        self.decoder = decoder
        #: The decoder's on_batch_end for the shortcut's path, None when it is Decoder's own no-op (a
        #: call an event saved: the shortcut's is the steady state's path). Looked up once, as the
        #: hook's docstring says; one that cannot be read is called by name, to fail where it runs.
        inherited = getattr(type(decoder), "on_batch_end", None) is vars(Decoder)["on_batch_end"]
        own = "on_batch_end" in getattr(decoder, "__dict__", ())
        self._batch_end: Callable[[], None] | None = None
        if not inherited or own:
            try:
                self._batch_end = decoder.on_batch_end
            except AttributeError:
                self._batch_end = self._end_batch_by_name
        self.builder = builder
        self._call = call
        #: The body's first bytes, kept to quote a document sent instead of a stream.
        self.head = bytearray()
        self._heading = True  # until head holds _HEAD_BYTES
        #: Whether any frame was cut from the body.
        self.seen = False
        self.stopped: str | None = None
        self.failure: Exception | None = None
        #: The step of _read_runs under way (took reports a failure as that step's).
        self._run_stage = "feed"
        #: Whether the consumer asked for more since the last read: the next restarts the progress clock.
        self._asked = True

    def _end_batch_by_name(self) -> None:
        self.decoder.on_batch_end()

    def _reader(self) -> BodyReader:
        """The body's reader, made on first use."""
        body = self._body
        if body is None:
            body = self._body = _body(self._response, self._scope, self._coding)
        return body

    async def next_piece(self) -> bytes | None:
        """The body's next decoded piece, past the framer (None at its end): for quoting."""
        return await self._reader().next()

    async def next_batch(self) -> Sequence[AssistantMessageEvent] | None:
        """The events of the next read that made any, or None once reading stopped (see the class):
        the steps put together, as the stream does in the steady state (see RelaySteps)."""
        while True:
            awaiting = self.begin()
            if awaiting is None:
                return await self._next_by_reader()
            try:
                got = await awaiting
            except asyncio.CancelledError:
                if self.cancelled():
                    raise
                return None
            except Exception as exc:
                batch = self.failed(exc)
            else:
                batch = self.took(got)
            if batch is None or batch:
                return batch

    async def _next_by_reader(self) -> Sequence[AssistantMessageEvent] | None:
        """:meth:`next_batch` for what the steps do not read: nothing once stopped, else a body read
        through its reader (a coded body, or the rest of a read too long for one piece)."""
        if self.stopped is not None:
            return None
        if self._asked:
            # Content was handed over, and the consumer asks for more: the progress clock restarts (the
            # time the consumer held the stream was its own, not the server's). A direct read's
            # begin_read restarts it, at the same reading of the clock.
            self._asked = False
            self._scope.progress()
        while True:
            try:
                chunk = await self._reader().next()
            except Exception as exc:  # settled by _settle, once run_stream resumes
                self.stopped = "read"
                self.failure = exc
                return None
            if chunk is None:
                self.stopped = "eof"
                return None
            batch = self.took(chunk, as_read=True)
            if batch is None or batch:
                return batch

    # -- the steps (normalize.RelaySteps): the steady state's read, with no coroutine of the kit's ------

    def begin(self) -> Awaitable[Any] | None:
        """Begin a direct read (the scope's wait begun, with the progress clock restarted when the
        consumer asked for more): the library's read to await; None once stopped, or when the body is
        read through its reader (:meth:`next_batch` reads it)."""
        read = self._read
        if read is None or self.stopped is not None:
            return None
        try:
            self._scope.begin_read(self._asked)
            self._asked = False
            return read()
        except Exception as exc:  # what already happened (an abort, the deadline, a clock that ran out)
            self.stopped = "read"
            self.failure = exc
            return None

    def cancelled(self) -> bool:
        """The read was cancelled: False when the scope did it (what fired is kept as the failure), True
        when the cancellation is somebody else's and goes on."""
        scope = self._scope
        try:
            scope.landed()
        except Exception as exc:  # the scope's own firing, taken back from the task
            self.stopped = "read"
            self.failure = exc
            return False
        finally:
            scope.end_read()
        return True

    def failed(self, exc: Exception) -> Sequence[AssistantMessageEvent] | None:
        """The read raised ``exc``: what it means (a direct read's ``failed`` says), kept as the failure."""
        self._scope.end_read()
        failed = self._failed
        if failed is not None:
            try:
                outcome = failed(exc)
            except Exception as undescribed:  # a transport that broke DirectRead's promise: its own failure
                outcome = undescribed
            if isinstance(outcome, bytes):
                # Bytes as the response's read gives them: ``b""``, the body's end (an async
                # iterator's StopAsyncIteration).
                return self.took(outcome, as_read=True)
            exc = outcome
        self.stopped = "read"
        self.failure = exc
        return None

    def took(self, got: Any, as_read: bool = False) -> Sequence[AssistantMessageEvent] | None:
        """What a read brought — a direct read's result, or (``as_read``) bytes as the response's read
        gives them, a piece of the reader's: its events, ``()`` when it made none yet, None once
        reading stopped (at the terminal, the body's end, or a failure kept in ``stopped`` and
        ``failure``)."""
        self._scope.end_read()
        stage = "read"
        try:
            taken = self._taken
            if taken is None or as_read:
                chunk = cast("bytes", got)
            else:
                chunk = taken(got)
                if chunk is None:
                    return ()  # a result that carries no bytes (aiohttp's mark of a chunk's end): read on
            if len(chunk) > PIECE_BYTES:
                # Rare (a body held in memory): the reader cuts it, and reads the rest itself.
                self._reader().cut(chunk)
                self._read = self._taken = self._failed = None
                return ()
            if not chunk:
                self.stopped = "eof"
                return None
        except Exception as exc:  # settled by _settle, once run_stream resumes
            self.stopped = stage
            self.failure = exc
            return None
        builder = self.builder
        stage = "feed"
        try:
            if self._heading:
                # Past the first frame too: a page whose first line is a frame is still quoted whole.
                self.head += chunk[: _HEAD_BYTES - len(self.head)]
                self._heading = len(self.head) < _HEAD_BYTES
            shortcut = self.decoder.shortcut
            shortcut_reads = self._shortcut_reads
            pieces = None
            if shortcut is not None and shortcut_reads is not None:
                # The usual read of real traffic: one frame the decoder's shape reads (see Shortcut).
                stage = "shortcut"
                pieces = shortcut_reads.pieces(chunk, shortcut)
            if pieces is not None and shortcut is not None:
                # What its on_event would do with the frame, and then the batch's end (as _deliver).
                self.seen = True
                stage = "sink"
                shortcut.take(pieces if shortcut.whole else pieces[0])
                batch_end = self._batch_end
                if batch_end is not None and not builder.finished:
                    stage = "batch end"
                    batch_end()
            else:
                stage = "feed"
                end = None
                if shortcut_reads is not None:
                    shortcut_reads.fed()
                    if shortcut is not None:
                        end = shortcut_reads.run_end(chunk, shortcut)
                if end is None:
                    frames = self.framer.feed(chunk)
                    if not frames:
                        return ()
                    self.seen = True
                    stage = "deliver"
                    _deliver(frames, self._call, self.decoder, builder)
                else:
                    stage = "runs"
                    self._read_runs(chunk, end)
            if builder.events:
                # Content: the progress clock restarts when the consumer asks for more (the top of
                # next_batch), so its own time in between is not counted either.
                if builder.finished:
                    # Vendor text may reach the terminal message without a StreamFailure.
                    _scrub(builder, self._call)
                    self.stopped = "finished"
                self._asked = True  # handed over: the next read is the consumer's next ask
                return builder.drain()
            if builder.finished:
                self.stopped = "finished"
                return None
            return ()
        except Exception as exc:  # settled by _settle, once run_stream resumes
            if stage == "runs":
                stage = self._run_stage  # the step of _read_runs that failed
            if stage in _SHORTCUT_STAGES:
                try:
                    exc = self._shortcut_failed(stage, exc)
                except Exception as undescribed:  # an exception whose message itself raises: kept as is
                    exc = undescribed
                stage = "deliver"
            self.stopped = stage
            self.failure = exc
            return None

    def _read_runs(self, chunk: bytes, end: bytes) -> None:
        """A read of several events while the decoder holds a shortcut whose events the framer can cut
        out of a read (``end`` ends one: see :meth:`ShortcutReads.run`). From where the framer is at an
        event boundary, the events in a row that the shortcut reads are applied as a lone read's event
        is (its sink: no framing, no frame, no ``on_event``). An event it does not read — or the part
        of one the framer holds, completed — is fed alone (up to the next event end) and delivered,
        and the walk goes on with the shortcut the decoder holds then; once it holds none, the rest of
        the read is fed whole. Every event is looked at once. The read's batch ends once, after all
        its events, as when the whole read is delivered; a failing step reports as the same step of
        a lone read or of a fed one. With one event per read, lone reads never come here."""
        shortcut_reads = self._shortcut_reads
        assert shortcut_reads is not None
        try:
            self._walk_runs(chunk, end, shortcut_reads)
        finally:
            shortcut_reads.read_over()  # the read is not kept past its walk

    def _walk_runs(self, chunk: bytes, end: bytes, shortcut_reads: ShortcutReads) -> None:
        builder = self.builder
        decoder = self.decoder
        size = len(chunk)
        at = 0
        applied = False  # whether any event was applied (the batch ends only then, as _deliver's)
        while at < size:
            shortcut = decoder.shortcut
            cut = size  # no shortcut: the rest of the read is fed whole
            if shortcut is not None:
                # A shape that fails is the decoder's failure; once this read applied events, their
                # batch ends first, as a failing sink's does.
                self._run_stage = "sink" if applied else "shortcut"
                found, at = shortcut_reads.run(chunk, shortcut, at)
                if found:
                    self.seen = applied = True
                    self._run_stage = "sink"
                    take = shortcut.run_take
                    whole = shortcut.whole
                    for pieces in found:
                        take(pieces if whole else pieces[0])
                        if builder.finished:  # as _deliver: nothing after the terminal is applied
                            return
                    if at >= size:
                        break
                next_end = chunk.find(end, at)
                if next_end >= 0:
                    cut = next_end + len(end)
            self._run_stage = "feed"
            frames = self.framer.feed(chunk[at:cut] if at or cut < size else chunk)
            at = cut
            if frames:
                self.seen = applied = True
                self._run_stage = "deliver"
                _deliver(frames, self._call, decoder, builder, batch_end=False)
                if builder.finished:
                    return
        if applied and not builder.finished:
            batch_end = self._batch_end
            if batch_end is not None:
                self._run_stage = "batch end"
                batch_end()

    def _shortcut_failed(self, stage: str, exc: Exception) -> Exception:
        """A failure on the shortcut's path, as :func:`_deliver` reports one: after a failing event the
        batch's end still runs (the decoder may hold content to apply), and what is not a
        :class:`StreamFailure` is the decoder's failure (a bug, or a value it did not expect), with the
        events built so far. The shortcut's test of a read, and the kit's own, are reported the same way."""
        if stage == "shortcut":
            return _decoder_failure(self._call, exc)  # the shortcut's test of a read failed, whatever it raised
        if stage == "sink" and not self.builder.finished:
            try:
                self.decoder.on_batch_end()
            except Exception as later:  # it replaces the first, as a finally's would
                exc = later
        return exc if isinstance(exc, StreamFailure) else _decoder_failure(self._call, exc)


#: The stages of next_batch on the shortcut's path (its failures are reported as _deliver's).
_SHORTCUT_STAGES: Final = frozenset({"shortcut", "sink", "batch end"})


def _framing_failed(
    exc: Exception,
    call: StreamCall,
    decoder: Decoder[Any],
    builder: MessageBuilder,
    *,
    seen: bool,
    head: bytearray,
    response: HttpResponse,
) -> None:
    """A framer step raised ``exc``: the frames it completed before the bad bytes still count, and
    when one of them ended the stream this returns; otherwise it raises the failure."""
    if not isinstance(exc, FramingError):
        raise _framing_bug(call, exc) from None
    _deliver(exc.frames, call, decoder, builder)
    if not builder.finished:
        raise _framing_failure(call, exc, seen=seen, head=head, response=response) from None


def _framing_failure(
    call: StreamCall,
    exc: FramingError,
    *,
    seen: bool,
    head: bytearray,
    response: HttpResponse,
) -> StreamFailure:
    """Bytes the framing refused: a document sent instead of a stream (nothing framed yet, and it
    starts like one), else ``protocol`` or ``truncated`` as the framing says."""
    if not seen and not exc.frames and not isinstance(exc, FrameTooLarge) and _looks_like_a_document(head):
        return _not_a_stream(call, response.status, response.headers.get("content-type", ""), bytes(head))
    kind: ErrorKind = "truncated" if exc.kind == "truncated" else "protocol"
    return StreamFailure.of(kind, f"{call.vendor}: {exc}")


def _framing_bug(call: StreamCall, exc: Exception) -> StreamFailure:
    """A framing that raised something else than a ``FramingError``: a ``protocol`` failure, as a
    decoder's (the events built before it stay; the message is redacted like every other)."""
    return StreamFailure.of(
        "protocol",
        f"{call.vendor} framing failed: {type(exc).__name__}: {exc}",
    )


def _make_decoder(call: StreamCall, builder: MessageBuilder, model: Model) -> Decoder[Any]:
    """A fresh decoder for this attempt; a factory that fails or makes something else than a
    :class:`~streamfns.kit.Decoder` is the adapter's mistake (``config``), reported, not raised."""
    try:
        made = cast("object", call.decoder(builder, model))  # typed, but a third party's factory may lie
    except StreamFailure:
        raise
    except Exception as exc:
        raise StreamFailure.of(
            "config", f"{call.vendor} decoder could not be made: {type(exc).__name__}: {exc}"
        ) from None
    if not isinstance(made, Decoder):
        raise StreamFailure.of(
            "config",
            f"{call.vendor} decoder factory returned a {type(made).__name__}, not a streamfns.kit.Decoder "
            "(subclass it: it declares on_event and the optional hooks)",
        )
    return cast("Decoder[Any]", made)


def _deliver(
    frames: Sequence[Any], call: StreamCall, decoder: Decoder[Any], builder: MessageBuilder, *, batch_end: bool = True
) -> None:
    """Hand ``frames`` to the decoder, then (``batch_end``) end the read's batch; with ``batch_end``
    False the caller ends it, once, after the read's other events (see _Reading.next_batch's runs)."""
    on_event = decoder.on_event
    try:
        delivered = False
        try:
            for frame in frames:
                on_event(frame)
                if builder.finished:
                    return
            delivered = True
        finally:
            # The events of one read reach the consumer together, after this: a decoder may apply
            # once per read what only the last event decides (see Decoder.on_batch_end). A failing
            # event ends the read here, so its batch ends here too.
            if (batch_end or not delivered) and not builder.finished:
                decoder.on_batch_end()
    except StreamFailure:
        raise
    except Exception as exc:  # a decoder bug or a value it did not expect must not lose the stream
        raise _decoder_failure(call, exc) from None


def _decoder_failure(call: StreamCall, exc: Exception) -> StreamFailure:
    """An unexpected exception from the decoder, as a ``protocol`` failure (the events built stay)."""
    return StreamFailure.of(
        "protocol",
        f"{call.vendor} decoder failed: {type(exc).__name__}: {exc}",
    )
