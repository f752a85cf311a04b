"""Recording: a transport that tees a real transport's bytes into a cassette file as they arrive.

Promises:

* The caller sees every chunk as soon as the real transport yields it; nothing is buffered.
* Records are written as they happen (body chunks once scanned, below) to `<path>.partial`,
  which `CassetteWriter` holds locked (see `cassettes.files`): a second recorder of the same path
  fails at once with `CassetteLocked`. When the transport is closed the writer adds the completion footer and
  renames the file over `path`; until then `path` keeps its old content, and a process that dies
  mid-recording leaves only the partial file, which says on load that it was cut off.
* Each body gets the end it really had. A body that raises gets `reset` (`timeout` for read
  timeouts). A body the caller closes before its end — every adapter stops reading at the
  vendor's terminal marker — is drained first, within `drain_timeout_s` and `drain_max_bytes`:
  the rest is recorded, then `eof` when the server finished, otherwise `client_closed` (which
  replays as a clean end: the recorded client did not need more). A caller that is cancelled
  mid-read gets `client_closed` at once, without draining.
* Only scrubbed data is written (see `cassettes.scrub`), and everything is secret-scanned before
  it is written: for key shapes, for the credential-like environment, and for every credential
  the requests carried (`cassettes.scrub.request_credentials`), in every spelling
  (`cassettes.secret_scan`). On a hit nothing more is written, the partial file is deleted, `path`
  stays as it was and `SecretFound` is raised (and kept in `CassetteWriter.failure`). The whole
  file is scanned once more, with every secret seen, before it replaces `path`.
* Body chunks are scanned in batches, so the scan stays linear however finely a body is chunked
  (`cassettes.secret_scan.BodyScanner`); a chunk record reaches the partial file once its batch is
  scanned: at once for the first chunk and for one that follows a pause, else within a scan window
  (about 1 KB) of bytes, and at the body's end.
* Payloads the wire profile declares as enveloped (`WireProfile.envelope`: Claude on Bedrock's base64
  `{"bytes": …}` in each event-stream message) are opened and looked inside as well, frame by frame
  (`cassettes.secret_scan.PayloadScanner`), so an echo the envelope's own encoding hides is refused
  like any other (`SecretFound`); a chunk record waits until every frame it touches has been opened.
  Fail closed: a frame the framing does not read (a bad CRC, an impossible length) or whose envelope
  does not open (bad base64) can not be checked, so the recording stops there with `UncheckedPayload`
  (a `CassetteError`) and nothing is written, as for a secret. A stream that really ended inside its
  last frame (a reset, a timeout, a caller that stopped) is still recorded: the cut frame has no whole
  payload to open, so its bytes are scanned raw and looked through as base64 text at every alignment
  (the decodable prefix of its inner payload).
* The header names the wire api of the adapter that made the first request (the kit tags every
  request with it: ``normalize.wire.tags``), unless the writer was given one; credentials the adapter
  tagged the request with (a signer's secrets) are refused like those its headers carry; the headers
  its wire profile lists (`WireProfile.recorded_headers`) are kept beside the generic ones.
* Bodies are recorded decoded: `accept-encoding: identity` is sent, and a gzip/deflate body
  sent anyway is decompressed for the record (the caller still gets the bytes the server sent).
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
import zlib
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, Literal, cast

import httpx

from cassettes.canonical import parse_json
from cassettes.errors import CassetteError, SecretFinding, SecretFound
from cassettes.files import PartialFile, load
from cassettes.format import (
    chunk_record,
    dump_line,
    end_record,
    footer_record,
    header_record,
    iter_lines,
    loads,
    request_record,
    response_head_record,
)
from cassettes.model import Cassette, Chunk, End, EndKind, Headers, JSONValue, RecordedRequest, RecordedResponse
from cassettes.scrub import DEFAULT_SCRUB, ScrubPolicy, capture_request, request_credentials, response_headers
from cassettes.secret_scan import (
    BodyScanner,
    PayloadScanner,
    SecretSet,
    UncheckedPayload,
    enveloped_framing,
    scan_bytes,
    scan_decoded,
    scan_lines,
)
from normalize.wire import DEFAULT_MAX_FRAME_BYTES, Envelope, Framing, profile_for
from normalize.wire.tags import API_EXTENSION, SECRETS_EXTENSION

__all__ = ["CassetteWriter", "RecordingTransport"]

#: How long a body the caller closed early is still read, to learn how it really ended.
DRAIN_TIMEOUT_S = 1.0
#: How many more bytes such a body may bring before the recorder stops reading it.
DRAIN_MAX_BYTES = 1024 * 1024


def _now_ms(start: float) -> float:
    return round((time.monotonic() - start) * 1000, 1)


#: What stops a recording: a secret found, or a payload that could not be opened to be checked.
_REFUSALS = (SecretFound, UncheckedPayload)


@dataclass(slots=True)
class _OpenBody:
    """An interaction whose body is still arriving: its scanners (raw bytes; enveloped payloads when
    the profile declares them), the chunks not checked yet (held back from the file), where the first
    of them starts in the body, how many bytes were fed, and the time of its latest chunk."""

    scanner: BodyScanner
    t_ms: float
    payloads: PayloadScanner | None = None
    held: list[Chunk] = field(default_factory=list[Chunk])
    held_from: int = 0
    fed: int = 0

    def checked(self) -> int:
        """How many bytes from the body's start every scan has checked."""
        scanned = self.fed - self.scanner.pending
        return scanned if self.payloads is None else min(scanned, self.payloads.checked)


class CassetteWriter:
    """Writes cassette records to `<path>.partial` as they happen; `close()` completes the file.

    Creating a writer takes the file's lock (`CassetteLocked` when another writer holds it).
    `mode="new"` replaces the file's content with this session's interactions; `mode="append"`
    keeps the interactions already in the file and numbers new ones after them. A session that
    records nothing leaves an existing file alone. The header (api, model) is written with the
    first interaction; missing values are guessed from that request. `env` (default `os.environ`)
    is where credential-like variables are read, once, when the writer is created. `scrub` (give
    it the transport's policy) says which names hold credentials for the final scan, which refuses
    a stored request that still carries one.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        mode: Literal["new", "append"] = "new",
        api: str | None = None,
        model: str | None = None,
        source: Mapping[str, JSONValue] | None = None,
        extra: Mapping[str, JSONValue] | None = None,
        env: Mapping[str, str] | None = None,
        scrub: ScrubPolicy = DEFAULT_SCRUB,
    ) -> None:
        self.path = Path(path)
        self.scrub = scrub
        self._partial = PartialFile.acquire(self.path)
        try:
            # Read under the lock: nobody can replace the file between this read and our commit.
            has_content = mode == "append" and self.path.exists() and self.path.stat().st_size > 0
            self._existing: Cassette | None = load(self.path) if has_content else None
        except BaseException:
            self._partial.discard()
            raise
        self._header = Cassette(api=api, model=model, source=source, extra=dict(extra or {}))
        self.secrets = SecretSet.from_env(env)
        self._started = False
        self._count = len(self._existing.interactions) if self._existing else 0
        self._open: dict[int, _OpenBody] = {}  # unfinished interactions
        self._lock = threading.Lock()
        self.failure: SecretFound | UncheckedPayload | None = None

    @property
    def api(self) -> str | None:
        """The wire api the writer was given (None: it is learned from the first request)."""
        return self._header.api

    def _start(self, first: RecordedRequest, api: str | None) -> None:
        if self._started:
            return
        self._started = True
        if self._existing is not None:
            self._partial.write("".join(iter_lines(self._existing, footer=False)).encode("utf-8"))
            return
        header = self._header
        body = parse_json(first.body)
        model = header.model or (body.get("model") if isinstance(body, dict) else None)
        header = replace(
            header,
            api=header.api or api,
            model=model if isinstance(model, str) else None,
            recorded_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        )
        self._partial.write(dump_line(header_record(header)).encode("utf-8"))

    def _refuse(self, reason: list[SecretFinding] | UncheckedPayload) -> None:
        """Stop recording: discard the partial file and raise (secrets found, or a payload unchecked)."""
        self.failure = reason if isinstance(reason, UncheckedPayload) else SecretFound(reason)
        self._open.clear()
        self._partial.discard()
        raise self.failure

    def _write(self, lines: Iterable[str]) -> None:
        self._partial.write("".join(lines).encode("utf-8"))

    def begin(
        self,
        request: RecordedRequest,
        status: int,
        headers: Headers,
        t_ms: float,
        *,
        credentials: Iterable[tuple[str, str]] = (),
        api: str | None = None,
        enveloped: tuple[Framing[Any], Envelope] | None = None,
    ) -> int | None:
        """Write the request and response head of a new interaction; its index (None after a refusal
        or once the writer is closed). `credentials` — (where, value) pairs the live request carried —
        join the secrets this recording refuses to write, from this interaction on. `api` is the wire
        api of the adapter that made the request (the header's, when the writer was given none).
        `enveloped` — the framing and envelope of a body whose payloads the wire profile declares as
        enveloped (`cassettes.secret_scan.enveloped_framing`) — has every payload opened and checked
        before its bytes are written."""
        with self._lock:
            if self.failure is not None or not self._partial.active:
                return None
            for where, value in credentials:
                self.secrets.add(where, value)
            index = self._count
            lines = [
                dump_line(request_record(index, request)),
                dump_line(response_head_record(index, RecordedResponse(status, headers, t_ms))),
            ]
            where = f"{self.path} interaction {index}"
            findings = scan_bytes("".join(lines).encode("utf-8"), f"{where} request", secrets=self.secrets)
            parts = [("request body", request.body)]
            parts += [(f"response header {k}", v.encode("utf-8", "surrogateescape")) for k, v in headers]
            for part, data in parts:
                findings += scan_bytes(data, f"{where} {part}", secrets=self.secrets)
            if findings:
                self._refuse(findings)
            self._start(request, api)
            self._write(lines)
            self._count += 1
            location = f"{where} response body"
            payloads = PayloadScanner(location, self.secrets, *enveloped) if enveloped is not None else None
            self._open[index] = _OpenBody(BodyScanner(location, self.secrets), t_ms, payloads)
            return index

    def chunk(self, index: int | None, chunk: Chunk) -> None:
        """Append one body chunk of interaction `index` (written once it has been scanned)."""
        with self._lock:
            if index is None or index not in self._open or not self._partial.active:
                return
            body = self._open[index]
            body.fed += len(chunk.data)
            findings = body.scanner.feed(chunk.data, chunk.t_ms)
            try:
                findings += body.payloads.feed(chunk.data) if body.payloads is not None else []
            except UncheckedPayload as refused:
                self._refuse(refused)
            if findings:
                self._refuse(findings)
            body.held.append(chunk)
            body.t_ms = chunk.t_ms
            self._write_held(index, body, body.checked())

    def _write_held(self, index: int, body: _OpenBody, upto: int | None = None) -> None:
        """Write the held chunks that end by body offset `upto` (all of them when None)."""
        ready = 0
        end = body.held_from
        for chunk in body.held:
            if upto is not None and end + len(chunk.data) > upto:
                break
            end += len(chunk.data)
            ready += 1
        if ready:
            self._write(dump_line(chunk_record(index, chunk)) for chunk in body.held[:ready])
            del body.held[:ready]
            body.held_from = end

    def _settle(self, index: int, body: _OpenBody) -> None:
        """Scan what is left of a body that ended (a cut last frame included) and write its held chunks."""
        findings = body.scanner.flush()
        try:
            findings += body.payloads.finish() if body.payloads is not None else []
        except UncheckedPayload as refused:
            self._refuse(refused)
        if findings:
            self._refuse(findings)
        self._write_held(index, body)

    def end(self, index: int | None, end: End) -> None:
        """Append the end record of interaction `index` (only its first end counts), after its
        remaining chunks; raises `SecretFound` when they hold a secret."""
        with self._lock:
            if index is None or index not in self._open or not self._partial.active:
                return
            self._settle(index, self._open.pop(index))
            self._write([dump_line(end_record(index, end))])

    def discard(self) -> None:
        """Stop recording and leave the file exactly as it was before this writer."""
        with self._lock:
            self._open.clear()
            self._partial.discard()

    def close(self) -> None:
        """Complete the recording: interactions still open end in `client_closed`, the footer is
        written, the file is scanned once more and renamed over `path`. A writer that recorded
        nothing (or refused a secret) leaves `path` as it was. Raises `SecretFound` when the final
        scan finds a secret."""
        with self._lock:
            if not self._partial.active:
                return
            if self.failure is not None or not self._started:
                self._partial.discard()
                return
            for index, body in sorted(self._open.items()):
                self._settle(index, body)
                self._write([dump_line(end_record(index, End("client_closed", body.t_ms)))])
            self._open.clear()
            try:
                self._write([dump_line(footer_record(self._count))])
                data = self._partial.read()
                # Secrets learned from a later request were not looked for in what was written before it.
                findings = scan_lines(data, str(self.path), self.secrets, unescape=False)
                findings += scan_decoded(loads(data, source=str(self.path)), str(self.path), self.secrets, self.scrub)
            except BaseException:
                self._partial.release()  # keep what was recorded; the error says why it was not completed
                raise
            if findings:
                self._refuse(findings)
            self._partial.commit()


Decoder = Callable[[bytes], bytes]


def _decoders(content_encoding: str | None) -> tuple[Decoder, Callable[[], bytes]]:
    """(feed, flush) turning the raw body into decoded bytes for the record."""
    encodings = [e.strip().lower() for e in (content_encoding or "").split(",") if e.strip()]
    encodings = [e for e in encodings if e != "identity"]
    if not encodings:
        return (lambda data: data), (lambda: b"")
    if len(encodings) > 1 or encodings[0] not in ("gzip", "x-gzip", "deflate"):
        raise CassetteError(
            f"can not record a body with content-encoding {content_encoding!r}; the server ignored "
            "accept-encoding: identity and only gzip/deflate can be decoded here"
        )
    inflater = _BoundedInflater(zlib.MAX_WBITS | 16 if encodings[0] != "deflate" else zlib.MAX_WBITS)
    return inflater.feed, inflater.flush


#: The most a compressed body may decode to for the record: as much as the kit itself reads (sixteen of
#: the largest frames a framing accepts). A server that ignored ``accept-encoding: identity`` and sent a
#: compression bomb costs bounded memory; the recording fails with :class:`CassetteError`.
MAX_DECODED_BYTES: Final = 16 * DEFAULT_MAX_FRAME_BYTES


class _BoundedInflater:
    """zlib decompression that never produces more than ``limit`` bytes in all (one call included)."""

    __slots__ = ("_left", "_zlib")

    def __init__(self, wbits: int) -> None:
        self._zlib = zlib.decompressobj(wbits)
        self._left = MAX_DECODED_BYTES

    def _take(self, produced: bytes) -> bytes:
        self._left -= len(produced)
        if self._left < 0:
            raise CassetteError(
                f"can not record a body that decodes to more than {MAX_DECODED_BYTES} bytes "
                "(a compression bomb, or a server that ignored accept-encoding: identity)"
            )
        return produced

    def feed(self, data: bytes) -> bytes:
        parts = [self._take(self._zlib.decompress(data, self._left + 1))]
        while self._zlib.unconsumed_tail:
            parts.append(self._take(self._zlib.decompress(self._zlib.unconsumed_tail, self._left + 1)))
        return b"".join(parts)

    def flush(self) -> bytes:
        if self._left < 0:
            return b""  # already refused: nothing more is decoded
        return self._take(self._zlib.flush(self._left + 1))


class _TeeStream(httpx.AsyncByteStream):
    """Yields the upstream chunks unchanged while recording them (decoded) with their times."""

    def __init__(
        self,
        upstream: httpx.AsyncByteStream,
        writer: CassetteWriter,
        index: int | None,
        *,
        start: float,
        decoders: tuple[Decoder, Callable[[], bytes]],
        drain: tuple[float, int],
    ) -> None:
        self._upstream = upstream
        self._iterator: AsyncIterator[bytes] | None = None
        self._writer = writer
        self._index = index
        self._start = start
        self._decode, self._flush = decoders
        self._drain_s, self._drain_bytes = drain
        self._finished = False

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self

    def _record(self, data: bytes) -> None:
        try:
            decoded = self._decode(data)
        except (CassetteError, zlib.error) as exc:
            # A body that cannot be decoded for the record (damaged, or past MAX_DECODED_BYTES) cannot
            # be recorded truthfully: the recording stops and the file stays as it was.
            self._finished = True
            self._writer.discard()
            if isinstance(exc, CassetteError):
                raise
            raise CassetteError(f"can not record a body that does not decompress: {exc}") from None
        if decoded:
            self._writer.chunk(self._index, Chunk(decoded, _now_ms(self._start)))

    def _finish(self, kind: EndKind, *, quiet: bool = False) -> None:
        """Record the body's end. `quiet` while another exception (a cancellation) is on its way
        out: a refusal then must not replace it; it is kept in `CassetteWriter.failure`."""
        if self._finished:
            return
        self._finished = True
        t_ms = _now_ms(self._start)
        try:
            if kind == "eof":
                rest = self._flush()
                if rest:
                    self._writer.chunk(self._index, Chunk(rest, t_ms))
            self._writer.end(self._index, End(kind, t_ms))
        except _REFUSALS:
            if not quiet:
                raise

    async def __anext__(self) -> bytes:
        if self._finished:
            raise StopAsyncIteration
        if self._iterator is None:
            self._iterator = aiter(self._upstream)
        try:
            data = await anext(self._iterator)
        except StopAsyncIteration:
            self._finish("eof")
            raise
        except httpx.TimeoutException:
            self._finish("timeout")
            raise
        except asyncio.CancelledError:
            # The caller gave up in the middle of a read; the server did nothing wrong.
            self._finish("client_closed", quiet=True)
            raise
        except BaseException as exc:
            # Connection lost, protocol error: the body ended abnormally here.
            self._finish("reset", quiet=not isinstance(exc, Exception))
            raise
        self._record(data)
        return data

    async def _drain(self) -> None:
        """Read what the caller left unread, to record how the body really ended (bounded)."""
        task = asyncio.current_task()
        if self._index is None or (task is not None and task.cancelling()):
            self._finish("client_closed", quiet=True)  # nothing to record, or a cancelled caller must not wait
            return
        if self._iterator is None:
            self._iterator = aiter(self._upstream)
        budget = self._drain_bytes
        kind: EndKind = "client_closed"
        try:
            async with asyncio.timeout(self._drain_s):
                while budget > 0:
                    data = await anext(self._iterator)
                    budget -= len(data)
                    self._record(data)
        except StopAsyncIteration:
            kind = "eof"
        except _REFUSALS:
            self._finish(kind, quiet=True)  # the writer has refused already; this only marks the end
            raise
        except Exception:  # too slow, or broken after the caller stopped: the end was not seen
            kind = "client_closed"
        except BaseException:
            self._finish(kind, quiet=True)  # a cancellation goes on; a refusal stays in writer.failure
            raise
        self._finish(kind)

    async def aclose(self) -> None:
        try:
            if not self._finished:
                await self._drain()
        finally:
            closer = getattr(self._iterator, "aclose", None)
            if closer is not None:
                await closer()
            await self._upstream.aclose()


def _tagged_secrets(request: httpx.Request) -> list[tuple[str, str]]:
    """The secret set the adapter tagged the request with (`normalize.wire.tags.SECRETS_EXTENSION`): the
    key as given, every secret header value the kit saw, and what a signer signed with (a secret key, a
    session token) that no header shows. Values the recorder's own header scan also finds keep its
    more precise label (they are added first); the others are labelled as signing secrets."""
    tagged = request.extensions.get(SECRETS_EXTENSION)
    if not isinstance(tagged, tuple | list):
        return []
    return [("request credential (signing secret)", value) for value in tagged if isinstance(value, str) and value]  # pyright: ignore[reportUnknownVariableType]


def _with_profile_headers(policy: ScrubPolicy, api: object) -> ScrubPolicy:
    """`policy` keeping the headers the wire profile of the adapter that tagged the request names
    (a plugin's declaration is read defensively: one name given as a string, non-strings ignored)."""
    profile = profile_for(api) if isinstance(api, str) else None
    if profile is None:
        return policy
    listed = cast("object", profile.recorded_headers)
    if isinstance(listed, str):
        return policy.with_headers([listed])
    names = cast("Iterable[object]", listed) if isinstance(listed, tuple | list | frozenset | set) else ()
    return policy.with_headers(name for name in names if isinstance(name, str))


class RecordingTransport(httpx.AsyncBaseTransport):
    """Sends requests through `wrapped` (a real transport) and records them with `writer`.

    A request that fails before its response head (connect error, ...) is not recorded; the
    error reaches the caller unchanged. `wrapped` is closed with this transport, and closing it
    completes the cassette file (`CassetteWriter.close`). `drain_timeout_s` and `drain_max_bytes`
    bound the reading of a body its caller closed early (see the module docstring).
    """

    def __init__(
        self,
        wrapped: httpx.AsyncBaseTransport,
        writer: CassetteWriter,
        *,
        scrub: ScrubPolicy = DEFAULT_SCRUB,
        identity_encoding: bool = True,
        drain_timeout_s: float = DRAIN_TIMEOUT_S,
        drain_max_bytes: int = DRAIN_MAX_BYTES,
    ) -> None:
        self._wrapped = wrapped
        self.writer = writer
        self._scrub = scrub
        self._identity = identity_encoding
        self._drain = (drain_timeout_s, drain_max_bytes)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._identity:
            request.headers["accept-encoding"] = "identity"
        await request.aread()
        api = request.extensions.get(API_EXTENSION)
        scrub = _with_profile_headers(self._scrub, api)
        # Whose payload envelope to open: the adapter's that tagged the request, else that of the api
        # the writer was given (a third party's untagged client recording for a known api).
        profile = profile_for(api) if isinstance(api, str) else profile_for(self.writer.api)
        recorded = capture_request(request, scrub)
        # The union of the recorder's own fail-closed scan (the same rule the kit follows, so a third
        # party's untagged request is covered) and the kit's tag (which adds what no header shows).
        credentials = [*request_credentials(request, scrub), *_tagged_secrets(request)]
        start = time.monotonic()
        response = await self._wrapped.handle_async_request(request)
        try:
            # Fails before anything is written when the body could not be decoded for the record.
            decoders = _decoders(response.headers.get("content-encoding"))
            headers = response_headers(response.headers, scrub)
            index = self.writer.begin(
                recorded,
                response.status_code,
                headers,
                _now_ms(start),
                credentials=credentials,
                api=str.__str__(api) if isinstance(api, str) and api.strip() else None,
                enveloped=enveloped_framing(profile, response.status_code, response.headers.get("content-type")),
            )
        except BaseException:
            await response.aclose()
            raise
        upstream = response.stream
        if not isinstance(upstream, httpx.AsyncByteStream):  # pragma: no cover - async transports stream async
            raise CassetteError("the wrapped transport returned a synchronous body")
        tee = _TeeStream(upstream, self.writer, index, start=start, decoders=decoders, drain=self._drain)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=tee,
            request=request,
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        try:
            await self._wrapped.aclose()
        finally:
            self.writer.close()
