"""Recording: a transport that tees a real transport's bytes into a cassette file as they arrive.

Promises:

* The caller sees every chunk as soon as the real transport yields it; nothing is buffered.
* Each record is appended and flushed as it happens, so a process that dies mid-stream leaves
  a file that loads, its last interaction ending in `reset`. A body that raises (connection
  lost) gets an explicit `end: reset` (`timeout` for read timeouts), and so does a body the
  caller closes before its end (the rest was never seen).
* Only scrubbed data is written (see `cassettes.scrub`), and every line is secret-scanned
  before it is written: on a hit the file is put back exactly as it was before recording and
  `SecretFound` is raised.
* Bodies are recorded decoded: `accept-encoding: identity` is sent, and a gzip/deflate body
  sent anyway is decompressed for the record (the caller still gets the bytes the server sent).
"""

from __future__ import annotations

import os
import threading
import time
import zlib
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import IO, Literal

import httpx

from cassettes.canonical import parse_json
from cassettes.errors import CassetteError, SecretFinding, SecretFound
from cassettes.format import (
    chunk_record,
    dump_line,
    dumps,
    end_record,
    header_record,
    load,
    request_record,
    response_head_record,
)
from cassettes.model import Cassette, Chunk, End, EndKind, Headers, JSONValue, RecordedRequest, RecordedResponse
from cassettes.scrub import DEFAULT_SCRUB, ScrubPolicy, capture_request, response_headers
from cassettes.secret_scan import BodyScanner, env_secrets, scan_text

__all__ = ["CassetteWriter", "RecordingTransport", "guess_api"]


def guess_api(url: str) -> str | None:
    """The wire API a request URL belongs to, when the path makes it obvious."""
    path = httpx.URL(url).path
    if path.endswith("/messages"):
        return "anthropic-messages"
    if path.endswith("/chat/completions"):
        return "openai-completions"
    if path.endswith("/responses") or "/responses/" in path:
        return "openai-responses"
    if ":streamGenerateContent" in path or ":generateContent" in path:
        return "google-generative-ai"
    return None


def _now_ms(start: float) -> float:
    return round((time.monotonic() - start) * 1000, 1)


class CassetteWriter:
    """Appends cassette records to `path`, flushing each one.

    `mode="new"` replaces the file when the first interaction is written (a session that
    records nothing leaves an existing file alone); `mode="append"` keeps the interactions
    already in the file and numbers new ones after them. The header (api, model) is written
    with the first interaction; missing values are guessed from that request.
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
    ) -> None:
        self.path = Path(path)
        self._original = self.path.read_bytes() if self.path.exists() else None
        self._existing: Cassette | None = load(self.path) if mode == "append" and self._original else None
        self._header = Cassette(api=api, model=model, source=source, extra=dict(extra or {}))
        # Snapshot the credential-looking environment once; scanning reuses it for every chunk.
        self._env = dict(env_secrets(env))
        self._file: IO[bytes] | None = None
        self._count = len(self._existing.interactions) if self._existing else 0
        self._scanners: dict[int, BodyScanner] = {}
        self._lock = threading.Lock()
        self.failure: SecretFound | None = None

    def _open(self, first: RecordedRequest) -> IO[bytes]:
        if self._file is not None:
            return self._file
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = self.path.open("wb")
        if self._existing is not None:
            handle.write(dumps(self._existing).encode("utf-8"))
        else:
            header = self._header
            body = parse_json(first.body)
            model = header.model or (body.get("model") if isinstance(body, dict) else None)
            recorded_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            header = Cassette(
                api=header.api or guess_api(first.url),
                model=model if isinstance(model, str) else None,
                recorded_at=recorded_at,
                source=header.source,
                extra=header.extra,
            )
            handle.write(dump_line(header_record(header)).encode("utf-8"))
        handle.flush()
        self._file = handle
        return handle

    def _refuse(self, findings: list[SecretFinding]) -> None:
        self.failure = SecretFound(findings)
        self.restore()
        raise self.failure

    def _write(self, handle: IO[bytes], lines: list[str]) -> None:
        handle.write("".join(lines).encode("utf-8"))
        handle.flush()

    def begin(self, request: RecordedRequest, status: int, headers: Headers, t_ms: float) -> int | None:
        """Write the request and response head of a new interaction; its index (None after a refusal)."""
        with self._lock:
            if self.failure is not None:
                return None
            index = self._count
            lines = [
                dump_line(request_record(index, request)),
                dump_line(response_head_record(index, RecordedResponse(status, headers, t_ms))),
            ]
            findings = scan_text("".join(lines), f"{self.path} interaction {index} request", env=self._env)
            findings += scan_text(
                request.body.decode("latin-1"), f"{self.path} interaction {index} request body", env=self._env
            )
            if findings:
                self._refuse(findings)
            self._write(self._open(request), lines)
            self._count += 1
            self._scanners[index] = BodyScanner(f"{self.path} interaction {index} response body", self._env)
            return index

    def chunk(self, index: int | None, chunk: Chunk) -> None:
        """Append one body chunk of interaction `index`."""
        with self._lock:
            if index is None or self.failure is not None:
                return
            findings = self._scanners[index].feed(chunk.data)
            if findings:
                self._refuse(findings)
            if self._file is not None:
                self._write(self._file, [dump_line(chunk_record(index, chunk))])

    def end(self, index: int | None, end: End) -> None:
        """Append the end record of interaction `index`."""
        with self._lock:
            if index is None or self.failure is not None:
                return
            self._scanners.pop(index, None)
            if self._file is not None:
                self._write(self._file, [dump_line(end_record(index, end))])

    def restore(self) -> None:
        """Put the file back exactly as it was before this writer touched it."""
        self.close()
        if self._original is None:
            self.path.unlink(missing_ok=True)
        else:
            self.path.write_bytes(self._original)

    def close(self) -> None:
        """Close the file (records already written stay)."""
        if self._file is not None:
            self._file.close()
            self._file = None


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
    wbits = zlib.MAX_WBITS | 16 if encodings[0] != "deflate" else zlib.MAX_WBITS
    decoder = zlib.decompressobj(wbits)
    return decoder.decompress, decoder.flush


class _TeeStream(httpx.AsyncByteStream):
    """Yields the upstream chunks unchanged while recording them (decoded) with their times."""

    def __init__(
        self,
        upstream: httpx.AsyncByteStream,
        writer: CassetteWriter,
        index: int | None,
        start: float,
        decoders: tuple[Decoder, Callable[[], bytes]],
    ) -> None:
        self._upstream = upstream
        self._iterator: AsyncIterator[bytes] | None = None
        self._writer = writer
        self._index = index
        self._start = start
        self._decode, self._flush = decoders
        self._finished = False

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self

    def _finish(self, kind: EndKind) -> None:
        if self._finished:
            return
        self._finished = True
        t_ms = _now_ms(self._start)
        if kind == "eof":
            rest = self._flush()
            if rest:
                self._writer.chunk(self._index, Chunk(rest, t_ms))
        self._writer.end(self._index, End(kind, t_ms))

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
        except BaseException:
            # Connection lost, protocol error, cancellation: the body ended abnormally here.
            self._finish("reset")
            raise
        decoded = self._decode(data)
        if decoded:
            self._writer.chunk(self._index, Chunk(decoded, _now_ms(self._start)))
        return data

    async def aclose(self) -> None:
        # Closed before its end: what follows was never seen, which replay reports as a reset.
        self._finish("reset")
        closer = getattr(self._iterator, "aclose", None)
        if closer is not None:
            await closer()
        await self._upstream.aclose()


class RecordingTransport(httpx.AsyncBaseTransport):
    """Sends requests through `wrapped` (a real transport) and records them with `writer`.

    A request that fails before its response head (connect error, ...) is not recorded; the
    error reaches the caller unchanged. `wrapped` is closed with this transport.
    """

    def __init__(
        self,
        wrapped: httpx.AsyncBaseTransport,
        writer: CassetteWriter,
        *,
        scrub: ScrubPolicy = DEFAULT_SCRUB,
        identity_encoding: bool = True,
    ) -> None:
        self._wrapped = wrapped
        self.writer = writer
        self._scrub = scrub
        self._identity = identity_encoding

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._identity:
            request.headers["accept-encoding"] = "identity"
        await request.aread()
        recorded = capture_request(request, self._scrub)
        start = time.monotonic()
        response = await self._wrapped.handle_async_request(request)
        try:
            # Fails before anything is written when the body could not be decoded for the record.
            decoders = _decoders(response.headers.get("content-encoding"))
            headers = response_headers(response.headers, self._scrub)
            index = self.writer.begin(recorded, response.status_code, headers, _now_ms(start))
        except BaseException:
            await response.aclose()
            raise
        upstream = response.stream
        if not isinstance(upstream, httpx.AsyncByteStream):  # pragma: no cover - async transports stream async
            raise CassetteError("the wrapped transport returned a synchronous body")
        tee = _TeeStream(upstream, self.writer, index, start, decoders)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=tee,
            request=request,
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._wrapped.aclose()
        self.writer.close()
