"""The HTTP half of every SSE adapter: send, retry, read, time out, abort, close.

:func:`run_sse` POSTs a JSON payload and feeds the server-sent events of a 200 response to a vendor
decoder, yielding the builder's events as they come. It owns the rules every adapter shares:

- nothing is sent when the signal is already aborted; an abort at any later point — while
  connecting, while backing off between retries, or while waiting for the next bytes of a silent
  server — ends the stream ``aborted`` at once, with the partial content;
- a non-2xx status becomes an ``error`` with the vendor's message and an :class:`ErrorInfo` whose
  kind comes from the status and the vendor's error type; a 200 that is not an event stream is a
  ``protocol`` error;
- retries (``max_retries``) happen only before any content block: on 408/409/429/5xx/529, network
  errors, timeouts, vendor errors the decoder marks retryable and streams cut before their terminal
  marker; the delay honours ``retry-after-ms`` / ``retry-after``, is capped by ``max_retry_delay_s``
  (a longer requested delay fails at once) and is abortable;
- the decoder stops the read at the vendor's terminal marker; EOF before it is ``truncated``;
- the response is closed on every path, including a consumer that stops iterating early.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import functools
import inspect
import json
import random
import ssl
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import httpx

from normalize import (
    AssistantMessageEvent,
    ErrorInfo,
    ErrorKind,
    MessageBuilder,
    Model,
    StreamOptions,
    sleep_unless_aborted,
)
from normalize.abort import AbortSignal
from streamfns._sse import ServerSentEvent, SSEDecoder, SSEEventTooLarge

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT_S",
    "DEFAULT_IDLE_TIMEOUT_S",
    "ErrorBodyParser",
    "SseRequest",
    "StreamFailure",
    "parse_retry_after",
    "run_sse",
]

DEFAULT_CONNECT_TIMEOUT_S = 15.0
DEFAULT_IDLE_TIMEOUT_S = 120.0
_MAX_ERROR_BODY = 64 * 1024
_RETRYABLE_STATUSES = frozenset({408, 409, 429, 529})


class StreamFailure(Exception):
    """Raised by a decoder to end the stream with ``info`` and ``message`` (retried if allowed)."""

    def __init__(self, info: ErrorInfo, message: str) -> None:
        super().__init__(message)
        self.info = info
        self.message = message


#: (status, headers, body) → the failure to report for a non-2xx response.
ErrorBodyParser = Callable[[int, httpx.Headers, bytes], StreamFailure]


@dataclass(slots=True, kw_only=True)
class SseRequest:
    """What to send, and how to read the answer.

    ``on_event`` is the vendor decoder: it calls the builder for content, calls ``builder.finish()``
    at the terminal marker (which stops the read) and raises :class:`StreamFailure` for vendor
    errors. ``end_marker`` names the missing marker in the ``truncated`` message.
    """

    url: str
    headers: dict[str, str]
    payload: dict[str, Any]
    on_event: Callable[[ServerSentEvent], None]
    parse_error: ErrorBodyParser
    end_marker: str
    vendor: str
    #: The credential sent with the request; it is blanked out of every error message.
    secret: str | None = None


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """The server's requested delay in seconds, from ``retry-after-ms`` or ``retry-after``."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _status_retryable(status: int, headers: Mapping[str, str]) -> bool:
    """Whether a status may succeed on retry; the vendor's ``x-should-retry`` header decides first."""
    should = headers.get("x-should-retry")
    if should in ("true", "false"):
        return should == "true"
    return status in _RETRYABLE_STATUSES or status >= 500


def _transport_failure(exc: httpx.HTTPError, vendor: str, *, output_started: bool) -> StreamFailure:
    kind: ErrorKind
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.LocalProtocolError):
        # The request itself cannot be sent (a bad base_url scheme, an illegal header value):
        # repeating it cannot help.
        return StreamFailure(ErrorInfo.of("config"), f"{vendor} request could not be sent: {type(exc).__name__}: {exc}")
    if isinstance(exc, httpx.TimeoutException):
        kind = "timeout"
        what = "timed out" if not isinstance(exc, httpx.ReadTimeout) else "sent nothing within the idle timeout"
    else:
        kind = "network"
        what = "connection failed"
    detail = str(exc) or type(exc).__name__
    return StreamFailure(
        ErrorInfo.of(kind, output_started=output_started), f"{vendor} {what}: {type(exc).__name__}: {detail}"
    )


class _Aborted(Exception):
    pass


class _AbortScope:
    """Turns an abort into ``_Aborted`` at whichever of our awaits is pending, at no cost per read.

    On abort it cancels the task that is awaiting :meth:`run` — only while it awaits there, so the
    cancellation always lands in our read and never in the consumer's own code — then takes the
    cancellation back (``Task.uncancel``). This is the mechanism of ``asyncio.timeout``; it replaces
    racing every read against the signal, which would cost a task per network chunk.
    """

    __slots__ = ("_fired", "_loop", "_remove", "_signal", "_task")

    def __init__(self, signal: AbortSignal | None) -> None:
        self._signal = signal
        self._loop = asyncio.get_running_loop()
        self._task: asyncio.Task[Any] | None = None
        self._fired = False
        self._remove = signal.add_callback(self._on_abort) if signal is not None else None

    def _on_abort(self, _signal: AbortSignal) -> None:
        # abort() may run on another thread; the cancellation itself happens on the loop.
        if not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._cancel)

    def _cancel(self) -> None:
        task = self._task
        if task is not None and not self._fired:
            self._fired = True
            task.cancel()

    async def run(self, awaitable: Awaitable[Any]) -> Any:
        """Await ``awaitable``; raise ``_Aborted`` instead if the signal aborts first (or already has)."""
        signal = self._signal
        if signal is None:
            return await awaitable
        if signal.aborted:
            if inspect.iscoroutine(awaitable):
                awaitable.close()
            raise _Aborted
        self._task = asyncio.current_task()
        try:
            return await awaitable
        except asyncio.CancelledError:
            task = self._task
            if self._fired and task is not None and task.uncancel() == 0:
                raise _Aborted from None
            raise
        finally:
            self._task = None

    def close(self) -> None:
        """Stop listening to the signal."""
        if self._remove is not None:
            self._remove()


async def _call_hook(hook: Any, *args: Any) -> Any:
    result = hook(*args)
    if inspect.isawaitable(result):
        result = await result
    return result


def _redact(text: str, secret: str | None) -> str:
    """``text`` with ``secret`` blanked out, raw or escaped (vendors and libraries quote keys back)."""
    if not secret or len(secret) < 8:
        return text
    for form in {secret, repr(secret)[1:-1], json.dumps(secret)[1:-1]}:
        text = text.replace(form, "[redacted]")
    return text


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    # Building a verifying SSL context costs ~50 ms; every client this module creates shares one.
    return httpx.create_ssl_context()


def _encode(payload: dict[str, Any]) -> bytes:
    # Lone surrogates are scrubbed by transform_messages; "replace" is a last line of defence.
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "replace")


def _backoff(attempt: int) -> float:
    return min(0.5 * 2**attempt, 8.0) * (1 - random.random() * 0.25)


async def run_sse(
    request: SseRequest, builder: MessageBuilder, model: Model, options: StreamOptions
) -> AsyncGenerator[Sequence[AssistantMessageEvent], None]:
    """Run one streaming call (see the module docstring); yields batches of builder events."""
    signal = options.signal
    if signal is not None and signal.aborted:
        builder.abort(signal.reason)
        yield builder.drain()
        return
    payload: dict[str, Any] = request.payload
    if options.on_payload is not None:
        try:
            replaced = await _call_hook(options.on_payload, payload, model)
        except Exception as exc:  # a caller's hook failing is reported, not raised
            builder.fail(ErrorInfo.of("config"), f"on_payload raised {type(exc).__name__}: {exc}")
            yield builder.drain()
            return
        if isinstance(replaced, dict):
            payload = cast("dict[str, Any]", replaced)
    body = _encode(payload)  # pyright: ignore[reportUnknownArgumentType]
    idle = options.timeout or DEFAULT_IDLE_TIMEOUT_S
    connect = options.connect_timeout or min(idle, DEFAULT_CONNECT_TIMEOUT_S)
    timeout = httpx.Timeout(connect=connect, read=idle, write=idle, pool=connect)
    owned = options.http_client is None
    client = options.http_client or httpx.AsyncClient(timeout=timeout, verify=_ssl_context())
    scope = _AbortScope(signal)
    try:
        attempt = 0
        while True:
            failure: StreamFailure | None = None
            try:
                attempt_events = _attempt(
                    request=request,
                    builder=builder,
                    model=model,
                    options=options,
                    client=client,
                    body=body,
                    limits=timeout,
                    scope=scope,
                )
                # aclosing: if our consumer stops early, the attempt's finally closes the response now,
                # not whenever the garbage collector finalizes the suspended generator.
                async with contextlib.aclosing(attempt_events) as batches:
                    async for batch in batches:
                        yield batch
                if builder.finished:
                    return
            except StreamFailure as exc:
                failure = exc
            except _Aborted:
                builder.abort(signal.reason if signal else None)
                yield builder.drain()
                return
            if failure is None:  # the body ended without the terminal marker
                failure = StreamFailure(
                    ErrorInfo.of("truncated", output_started=builder.output_started),
                    f"{request.vendor} stream ended before {request.end_marker}",
                )
            delay = await _retry_delay(failure, attempt, builder, options)
            if delay is None:
                builder.fail(failure.info, _redact(failure.message, request.secret))
                yield builder.drain()
                return
            if await sleep_unless_aborted(delay, signal):
                builder.abort(signal.reason if signal else None)
                yield builder.drain()
                return
            attempt += 1
    finally:
        scope.close()
        if owned:
            await client.aclose()


async def _retry_delay(
    failure: StreamFailure, attempt: int, builder: MessageBuilder, options: StreamOptions
) -> float | None:
    """Seconds to wait before retrying, or None when this failure must end the stream."""
    info = failure.info
    if not info.retryable or attempt >= options.max_retries or not builder.reset_for_retry():
        return None
    requested = info.retry_after_s
    if requested is not None:
        cap = options.max_retry_delay_s
        if cap and requested > cap:
            failure.message = (
                f"{failure.message} (the server asked to retry after {requested:g}s, over the {cap:g}s cap)"
            )
            return None
        return requested
    return _backoff(attempt)


async def _attempt(
    *,
    request: SseRequest,
    builder: MessageBuilder,
    model: Model,
    options: StreamOptions,
    client: httpx.AsyncClient,
    body: bytes,
    limits: httpx.Timeout,
    scope: _AbortScope,
) -> AsyncGenerator[Sequence[AssistantMessageEvent], None]:
    try:
        http_request = client.build_request("POST", request.url, headers=request.headers, content=body, timeout=limits)
    except (httpx.InvalidURL, httpx.UnsupportedProtocol, httpx.LocalProtocolError, ValueError) as exc:
        raise StreamFailure(
            ErrorInfo.of("config"), f"{request.vendor} request could not be built: {type(exc).__name__}: {exc}"
        ) from None
    try:
        response: httpx.Response = await scope.run(client.send(http_request, stream=True))
    except httpx.HTTPError as exc:
        raise _transport_failure(exc, request.vendor, output_started=False) from None
    try:
        if options.on_response is not None:
            try:
                await _call_hook(options.on_response, response.status_code, response.headers, model)
            except Exception as exc:  # a caller's hook failing is reported, not raised
                raise StreamFailure(ErrorInfo.of("config"), f"on_response raised {type(exc).__name__}: {exc}") from None
        if not 200 <= response.status_code < 300:
            raw = await _read_limited(response, scope, request.vendor)
            failure = request.parse_error(response.status_code, response.headers, raw)
            failure.info.status = response.status_code
            if failure.info.retry_after_s is None:
                failure.info.retry_after_s = parse_retry_after(response.headers)
            # The vendor's x-should-retry overrides what its error type suggested.
            if "x-should-retry" in response.headers:
                failure.info.retryable = _status_retryable(response.status_code, response.headers)
            else:
                failure.info.retryable = failure.info.retryable or _status_retryable(
                    response.status_code, response.headers
                )
            raise failure
        content_type = response.headers.get("content-type", "").lower()
        if "json" in content_type or "html" in content_type:
            raw = await _read_limited(response, scope, request.vendor)
            excerpt = raw[:300].decode("utf-8", "replace")
            raise StreamFailure(
                ErrorInfo.of("protocol", status=response.status_code),
                f"{request.vendor} answered {response.status_code} with {content_type or 'no content type'}, "
                f"not an event stream: {excerpt}",
            )
        builder.start()
        if builder.events:
            yield builder.drain()
        async with contextlib.aclosing(_read_events(response, request, builder, scope)) as batches:
            async for batch in batches:
                yield batch
    finally:
        await response.aclose()


async def _read_limited(response: httpx.Response, scope: _AbortScope, vendor: str) -> bytes:
    chunks: list[bytes] = []
    size = 0
    iterator = response.aiter_bytes()
    try:
        while size < _MAX_ERROR_BODY:
            try:
                chunk: bytes = await scope.run(anext(iterator))
            except StopAsyncIteration:
                break
            chunks.append(chunk)
            size += len(chunk)
    except httpx.HTTPError as exc:
        raise _transport_failure(exc, vendor, output_started=False) from None
    return b"".join(chunks)[:_MAX_ERROR_BODY]


async def _read_events(
    response: httpx.Response,
    request: SseRequest,
    builder: MessageBuilder,
    scope: _AbortScope,
) -> AsyncGenerator[Sequence[AssistantMessageEvent], None]:
    decoder = SSEDecoder()
    on_event = request.on_event
    iterator = response.aiter_bytes()
    while True:
        try:
            chunk: bytes = await scope.run(anext(iterator))
        except StopAsyncIteration:
            break
        except httpx.HTTPError as exc:
            raise _transport_failure(exc, request.vendor, output_started=builder.output_started) from None
        try:
            events = decoder.feed(chunk)
        except SSEEventTooLarge as exc:
            # The events completed before the oversized one still count (one may even be the end).
            _deliver(exc.events, on_event, builder)
            if builder.finished:
                yield builder.drain()
                return
            raise StreamFailure(ErrorInfo.of("protocol", output_started=builder.output_started), str(exc)) from None
        _deliver(events, on_event, builder)
        if builder.events:
            yield builder.drain()
        if builder.finished:
            return
    try:
        events = decoder.flush()
    except SSEEventTooLarge as exc:
        raise StreamFailure(ErrorInfo.of("protocol", output_started=builder.output_started), str(exc)) from None
    try:
        _deliver(events, on_event, builder)
    except StreamFailure as exc:
        if exc.info.kind != "protocol":
            raise
        # The body ended inside its last event: it was cut short, not malformed.
        raise StreamFailure(
            ErrorInfo.of("truncated", output_started=builder.output_started),
            f"{request.vendor} stream ended inside an event, before {request.end_marker}",
        ) from None
    if builder.events:
        yield builder.drain()


def _deliver(
    events: Sequence[ServerSentEvent], on_event: Callable[[ServerSentEvent], None], builder: MessageBuilder
) -> None:
    for sse in events:
        on_event(sse)
        if builder.finished:
            return
