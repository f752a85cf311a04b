"""The streamcassette v1 JSONL format: writing, reading and validating.

Layout (one JSON object per line, UTF-8, lines end in `\\n`)::

    {"type":"cassette","format":"streamcassette","version":1,"api":...,"model":...,"recorded_at":...}
    {"type":"request","i":0,"method":"POST","url":"...","headers":{...},"body_json":{...}}
    {"type":"response_head","i":0,"t_ms":412,"status":200,"headers":{"content-type":["text/event-stream"]}}
    {"type":"chunk","i":0,"t_ms":415,"data":"event: ping\\n\\n"}
    {"type":"chunk","i":0,"t_ms":431,"b64":"..."}
    {"type":"end","i":0,"t_ms":2210,"kind":"eof"}

Promises:

* `dumps` then `loads` gives back an equal `Cassette`, and `loads` then `dumps` of a file this
  module wrote gives back the same bytes: chunk bytes and chunk boundaries are exact.
* A chunk is stored as text (`data`) when its bytes are valid UTF-8 on their own, otherwise
  as base64 (`b64`); a request body as `body_json` when it is canonical JSON, else `body_text`
  or `body_b64`.
* Records of different interactions may interleave (concurrent recording); each carries `i`.
* Crash tolerance: an interaction with no `end` record loads as ending in `reset`; a last line
  cut off mid-write is ignored; an interaction whose request is the file's last record (the
  process died before the response head) is dropped.
* Anything else that is wrong raises `CassetteFormatError` naming the line and the problem.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from cassettes.canonical import NotJSON, canonical_json, parse_json
from cassettes.errors import CassetteFormatError
from cassettes.model import (
    END_KINDS,
    Cassette,
    Chunk,
    End,
    Headers,
    Interaction,
    JSONValue,
    RecordedRequest,
    RecordedResponse,
)

__all__ = [
    "FORMAT",
    "VERSION",
    "chunk_record",
    "dump_line",
    "dumps",
    "end_record",
    "header_record",
    "iter_lines",
    "load",
    "loads",
    "request_record",
    "response_head_record",
    "save",
]

FORMAT = "streamcassette"
VERSION = 1

Record = dict[str, JSONValue]

# -- writing -----------------------------------------------------------------------------------


def dump_line(record: Mapping[str, JSONValue]) -> str:
    """One record as a JSONL line (compact, UTF-8 text kept readable, ends in a newline).

    `ensure_ascii=False` keeps SSE text reviewable in diffs; JSON escapes every control
    character, so the only raw newline is the record separator.
    """
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n"


def _headers_json(headers: Headers) -> dict[str, JSONValue]:
    grouped: dict[str, list[JSONValue]] = {}
    for name, value in headers:
        grouped.setdefault(name, []).append(value)
    return dict[str, JSONValue](grouped)


def header_record(cassette: Cassette) -> Record:
    """The first line's record for `cassette` (its interactions are not used)."""
    record: Record = {
        "type": "cassette",
        "format": FORMAT,
        "version": VERSION,
        "api": cassette.api,
        "model": cassette.model,
        "recorded_at": cassette.recorded_at,
    }
    if cassette.source is not None:
        record["source"] = dict(cassette.source)
    for key, value in cassette.extra.items():
        record.setdefault(key, value)
    return record


def request_record(index: int, request: RecordedRequest) -> Record:
    """The `request` record of interaction `index`."""
    record: Record = {"type": "request", "i": index, "method": request.method, "url": request.url}
    if request.headers:
        record["headers"] = _headers_json(request.headers)
    if request.body:
        value = parse_json(request.body)
        if not isinstance(value, NotJSON) and canonical_json(value) == request.body:
            record["body_json"] = value
        else:
            try:
                record["body_text"] = request.body.decode("utf-8")
            except UnicodeDecodeError:
                record["body_b64"] = base64.b64encode(request.body).decode("ascii")
    return record


def response_head_record(index: int, response: RecordedResponse) -> Record:
    """The `response_head` record of interaction `index`."""
    record: Record = {"type": "response_head", "i": index, "t_ms": response.t_ms, "status": response.status}
    if response.headers:
        record["headers"] = _headers_json(response.headers)
    return record


def chunk_record(index: int, chunk: Chunk) -> Record:
    """A `chunk` record: text when the bytes decode as UTF-8 by themselves, else base64."""
    record: Record = {"type": "chunk", "i": index, "t_ms": chunk.t_ms}
    try:
        record["data"] = chunk.data.decode("utf-8")
    except UnicodeDecodeError:
        record["b64"] = base64.b64encode(chunk.data).decode("ascii")
    if chunk.stall_s:
        record["stall_s"] = chunk.stall_s
    return record


def end_record(index: int, end: End) -> Record:
    """An `end` record."""
    record: Record = {"type": "end", "i": index, "t_ms": end.t_ms, "kind": end.kind}
    if end.stall_s:
        record["stall_s"] = end.stall_s
    return record


def iter_lines(cassette: Cassette) -> Iterator[str]:
    """The cassette's JSONL lines in file order (interactions one after another)."""
    yield dump_line(header_record(cassette))
    for index, interaction in enumerate(cassette.interactions):
        response = interaction.response
        yield dump_line(request_record(index, interaction.request))
        yield dump_line(response_head_record(index, response))
        for chunk in response.chunks:
            yield dump_line(chunk_record(index, chunk))
        yield dump_line(end_record(index, response.end))


def dumps(cassette: Cassette) -> str:
    """The whole cassette as JSONL text."""
    return "".join(iter_lines(cassette))


def save(cassette: Cassette, path: str | os.PathLike[str], *, scan: bool = True) -> None:
    """Write `cassette` to `path` atomically (temp file + rename).

    With `scan` (the default) the text is secret-scanned first and `SecretFound` is raised
    before anything touches the disk.
    """
    text = dumps(cassette)
    if scan:
        # Imported here because secret_scan builds on this module (dumps/loads).
        from cassettes.secret_scan import raise_if_secrets, scan_cassette  # noqa: PLC0415

        raise_if_secrets(scan_cassette(cassette))
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.with_name(target.name + ".tmp")
    temp.write_bytes(text.encode("utf-8"))
    temp.replace(target)


# -- reading -----------------------------------------------------------------------------------


class _Bad(Exception):
    """Internal: a problem with the current line; `loads` adds the source and line number."""


def _reject_constant(name: str) -> JSONValue:
    raise _Bad(f"{name} is not valid JSON")


def _field(record: Record, key: str) -> JSONValue:
    if key not in record:
        raise _Bad(f"{record.get('type')} record is missing {key!r}")
    return record[key]


def _str(record: Record, key: str) -> str:
    value = _field(record, key)
    if not isinstance(value, str):
        raise _Bad(f"{key!r} must be a string, got {json.dumps(value)}")
    return value


def _int(record: Record, key: str) -> int:
    value = _field(record, key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Bad(f"{key!r} must be an integer, got {json.dumps(value)}")
    return value


def _number(record: Record, key: str, default: float | None = None) -> float:
    if default is not None and key not in record:
        return default
    value = _field(record, key)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise _Bad(f"{key!r} must be a non-negative number, got {json.dumps(value)}")
    return value


def _headers(record: Record) -> Headers:
    value = record.get("headers", {})
    if not isinstance(value, dict):
        raise _Bad("'headers' must be an object of name -> list of strings")
    pairs: list[tuple[str, str]] = []
    for name, values in value.items():
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise _Bad(f"header {name!r} must be a list of strings")
        pairs.extend((name.lower(), cast(str, v)) for v in values)
    return tuple(pairs)


def _b64(text: str, key: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error as exc:
        raise _Bad(f"{key!r} is not valid base64 ({exc})") from None


_ALLOWED_KEYS: dict[str, frozenset[str]] = {
    "request": frozenset({"type", "i", "method", "url", "headers", "body_json", "body_text", "body_b64"}),
    "response_head": frozenset({"type", "i", "t_ms", "status", "headers"}),
    "chunk": frozenset({"type", "i", "t_ms", "data", "b64", "stall_s"}),
    "end": frozenset({"type", "i", "t_ms", "kind", "stall_s"}),
}


def _request(record: Record) -> RecordedRequest:
    bodies = [key for key in ("body_json", "body_text", "body_b64") if key in record]
    if len(bodies) > 1:
        raise _Bad(f"request has more than one body field: {', '.join(bodies)}")
    body = b""
    if "body_json" in record:
        body = canonical_json(record["body_json"])
    elif "body_text" in record:
        body = _str(record, "body_text").encode("utf-8")
    elif "body_b64" in record:
        body = _b64(_str(record, "body_b64"), "body_b64")
    method = _str(record, "method")
    if not method:
        raise _Bad("'method' is empty")
    return RecordedRequest(method=method, url=_str(record, "url"), headers=_headers(record), body=body)


@dataclass
class _Building:
    """An interaction while its records are being read."""

    request: RecordedRequest
    line: int
    status: int | None = None
    headers: Headers = ()
    head_t_ms: float = 0
    chunks: list[Chunk] = field(default_factory=list[Chunk])
    end: End | None = None
    last_t_ms: float = 0

    def tick(self, t_ms: float) -> None:
        if t_ms < self.last_t_ms:
            raise _Bad(f"t_ms goes backwards ({t_ms} after {self.last_t_ms})")
        self.last_t_ms = t_ms


def _apply(record: Record, building: list[_Building], line: int) -> None:
    kind = _str(record, "type")
    allowed = _ALLOWED_KEYS.get(kind)
    if allowed is None:
        raise _Bad(f"unknown record type {kind!r} (expected request, response_head, chunk or end)")
    unknown = sorted(record.keys() - allowed)
    if unknown:
        raise _Bad(f"{kind} record has unknown keys: {', '.join(unknown)}")
    index = _int(record, "i")
    if kind == "request":
        if index != len(building):
            raise _Bad(f"request for interaction {index}, expected interaction {len(building)} next")
        building.append(_Building(_request(record), line))
        return
    if index >= len(building):
        raise _Bad(f"{kind} for interaction {index} before its request")
    current = building[index]
    if current.end is not None:
        raise _Bad(f"{kind} for interaction {index} after its end record")
    t_ms = _number(record, "t_ms")
    if kind == "response_head":
        if current.status is not None:
            raise _Bad(f"second response_head for interaction {index}")
        status = _int(record, "status")
        if not 100 <= status <= 599:
            raise _Bad(f"status {status} is not an HTTP status")
        current.tick(t_ms)
        current.status, current.headers, current.head_t_ms = status, _headers(record), t_ms
        return
    if current.status is None:
        raise _Bad(f"{kind} for interaction {index} before its response_head")
    current.tick(t_ms)
    stall_s = _number(record, "stall_s", 0.0)
    if kind == "chunk":
        if ("data" in record) == ("b64" in record):
            raise _Bad("chunk needs exactly one of 'data' (text) or 'b64'")
        data = _str(record, "data").encode("utf-8") if "data" in record else _b64(_str(record, "b64"), "b64")
        current.chunks.append(Chunk(data, t_ms, stall_s))
        return
    end_kind = _str(record, "kind")
    if end_kind not in END_KINDS:
        raise _Bad(f"end kind {end_kind!r} is not one of {', '.join(END_KINDS)}")
    current.end = End(end_kind, t_ms, stall_s)


def _header(record: Record) -> Cassette:
    if record.get("type") != "cassette" or record.get("format") != FORMAT:
        raise _Bad(f'the first line must be the header {{"type":"cassette","format":"{FORMAT}",...}}')
    version = record.get("version")
    if version != VERSION or isinstance(version, bool):
        raise _Bad(f"unsupported version {json.dumps(version)} (this library reads version {VERSION})")

    def optional_str(key: str) -> str | None:
        value = record.get(key)
        if value is not None and not isinstance(value, str):
            raise _Bad(f"header {key!r} must be a string or null")
        return value

    source = record.get("source")
    if source is not None and not isinstance(source, dict):
        raise _Bad("header 'source' must be an object")
    reserved = {"type", "format", "version", "api", "model", "recorded_at", "source"}
    return Cassette(
        api=optional_str("api"),
        model=optional_str("model"),
        recorded_at=optional_str("recorded_at"),
        source=source,
        extra={k: v for k, v in record.items() if k not in reserved},
    )


def _parse_line(text: str) -> Record:
    if not text.strip():
        raise _Bad("empty line")
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise _Bad(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(value, dict):
        raise _Bad("a record must be a JSON object")
    return cast(Record, value)


def loads(data: str | bytes, *, source: str = "<cassette>") -> Cassette:
    """Parse and validate cassette text; `source` names it in error messages (usually the path)."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CassetteFormatError(source, 0, f"not UTF-8 (byte offset {exc.start})") from None
    # Split on "\n" only: str.splitlines would also split on U+2028 and friends, which JSON
    # leaves unescaped inside strings.
    lines = data.split("\n")
    ends_cleanly = lines[-1] == ""
    if ends_cleanly:
        lines.pop()
    if not lines:
        raise CassetteFormatError(source, 0, "empty file (expected a header line)")
    header: Cassette | None = None
    building: list[_Building] = []
    last_record = 0
    for number, text in enumerate(lines, start=1):
        is_last = number == len(lines)
        try:
            try:
                record = _parse_line(text)
            except _Bad:
                # Every line we write ends in "\n"; an unterminated, unparsable last line is
                # what a crash mid-write leaves behind, so it is dropped rather than fatal.
                if is_last and not ends_cleanly and header is not None:
                    break
                raise
            if header is None:
                header = _header(record)
            else:
                _apply(record, building, number)
            last_record = number
        except _Bad as exc:
            raise CassetteFormatError(source, number, str(exc)) from None
    assert header is not None
    return _finish(header, building, source, last_record)


def _finish(header: Cassette, building: list[_Building], source: str, last_record: int) -> Cassette:
    interactions: list[Interaction] = []
    for index, item in enumerate(building):
        if item.status is None:
            # The recorder writes a request together with its response head, so a lone request
            # can only be the tail of a write cut short by a crash.
            if item.line == last_record:
                break
            raise CassetteFormatError(source, item.line, f"interaction {index} has no response_head")
        end = item.end if item.end is not None else End("reset", item.last_t_ms)
        response = RecordedResponse(item.status, item.headers, item.head_t_ms, tuple(item.chunks), end)
        interactions.append(Interaction(item.request, response))
    return Cassette(
        interactions=tuple(interactions),
        api=header.api,
        model=header.model,
        recorded_at=header.recorded_at,
        source=header.source,
        extra=header.extra,
    )


def load(path: str | os.PathLike[str]) -> Cassette:
    """Read and validate the cassette file at `path` (errors name the path and line)."""
    return loads(Path(path).read_bytes(), source=str(path))
