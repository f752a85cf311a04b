"""The streamcassette JSONL format: a pure codec between `Cassette` objects and text.

Files are read and written by `cassettes.files` (locking, atomic replace, secret scan); this module
only turns a cassette into text and text into a cassette. Layout of version 2 (one JSON object per
line, UTF-8, every line ends in `\\n`)::

    {"type":"cassette","format":"streamcassette","version":2,"api":...,"model":...,"recorded_at":...}
    {"type":"request","i":0,"method":"POST","url":"...","headers":{...},"body_json":{...}}
    {"type":"response_head","i":0,"t_ms":412,"status":200,"headers":{"content-type":["text/event-stream"]}}
    {"type":"chunk","i":0,"t_ms":415,"data":"event: ping\\n\\n"}
    {"type":"chunk","i":0,"t_ms":431,"b64":"..."}
    {"type":"end","i":0,"t_ms":2210,"kind":"eof"}
    {"type":"footer","interactions":1}

Promises:

* `dumps` then `loads` gives back an equal `Cassette`, and `loads` then `dumps` of a file this
  module wrote gives back the same bytes: chunk bytes and chunk boundaries are exact.
* A chunk is stored as text (`data`) when its bytes are valid UTF-8 on their own, otherwise
  as base64 (`b64`); a request body as `body_json` when it is canonical JSON (nested at most
  `MAX_DEPTH` deep), else `body_text` or `body_b64`.
* Records of different interactions may interleave (concurrent recording); each carries `i`.
* `end.kind` is `eof`, `reset`, `timeout` or `client_closed` (see `cassettes.model.End`).
* Completeness: the `footer` record is written last, and only once the recording finished, so a
  version 2 file without it was cut off (a killed recorder). Files of version 1 (written before
  the footer existed) are judged complete when their last line is whole and every interaction has
  its end record; a version 1 file cut between two interactions can not be told from a whole one.
  `loads` raises `CassetteIncomplete` for a cut-off file unless `allow_incomplete=True`, which
  returns what was saved: a last line cut mid-write is dropped, a request that is the file's last
  record (the process died before the response head) is dropped, interactions with no `end` record
  end in `reset`, and `Cassette.incomplete` says why.
* Limits: a line longer than `MAX_LINE_BYTES` or a text longer than `MAX_FILE_BYTES` (both
  adjustable per call) is rejected before it is parsed; see `cassettes.line_checks` for the checks on
  every field.
* Anything else that is wrong raises `CassetteFormatError` naming the line and the problem.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from cassettes.canonical import NotJSON, canonical_json, parse_json
from cassettes.errors import CassetteFormatError, CassetteIncomplete
from cassettes.line_checks import (
    MAX_STALL_S,
    MAX_T_MS,
    BadRecord,
    Record,
    b64_field,
    depth_within,
    headers_field,
    index_field,
    int_field,
    method_field,
    number_field,
    parse_line,
    str_field,
    text_bytes,
    url_field,
)
from cassettes.model import (
    END_KINDS,
    Cassette,
    Chunk,
    End,
    EndKind,
    Headers,
    Interaction,
    JSONValue,
    RecordedRequest,
    RecordedResponse,
)

__all__ = [
    "FORMAT",
    "MAX_FILE_BYTES",
    "MAX_LINE_BYTES",
    "READABLE_VERSIONS",
    "VERSION",
    "chunk_record",
    "dump_line",
    "dumps",
    "end_record",
    "footer_record",
    "header_record",
    "iter_lines",
    "loads",
    "request_record",
    "response_head_record",
]

FORMAT = "streamcassette"
#: The version this module writes.
VERSION = 2
#: Versions `loads` reads: 1 (no footer) and 2.
READABLE_VERSIONS = (1, 2)
#: Longest line accepted (a request body with large images fits; a runaway line does not).
MAX_LINE_BYTES = 32 * 1024 * 1024
#: Longest cassette text accepted. Loading holds about three times the text in memory (the records,
#: then the chunks), so this bounds what one file can cost: about 200 MB and a few seconds at the
#: cap. Real recordings are far smaller (the whole bundled library is under 5 MB); a caller with a
#: bigger one passes `max_file_bytes`.
MAX_FILE_BYTES = 64 * 1024 * 1024

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
        if not isinstance(value, NotJSON) and depth_within(value) and canonical_json(value) == request.body:
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


def footer_record(interactions: int) -> Record:
    """The last record of a finished recording: how many interactions it holds."""
    return {"type": "footer", "interactions": interactions}


def iter_lines(cassette: Cassette, *, footer: bool = True) -> Iterator[str]:
    """The cassette's JSONL lines in file order: interactions one after another, then the footer
    (unless `footer` is false or the cassette is marked incomplete)."""
    yield dump_line(header_record(cassette))
    for index, interaction in enumerate(cassette.interactions):
        response = interaction.response
        yield dump_line(request_record(index, interaction.request))
        yield dump_line(response_head_record(index, response))
        for chunk in response.chunks:
            yield dump_line(chunk_record(index, chunk))
        yield dump_line(end_record(index, response.end))
    if footer and cassette.incomplete is None:
        yield dump_line(footer_record(len(cassette.interactions)))


def dumps(cassette: Cassette) -> str:
    """The whole cassette as JSONL text."""
    return "".join(iter_lines(cassette))


# -- reading -----------------------------------------------------------------------------------

_ALLOWED_KEYS: dict[str, frozenset[str]] = {
    "request": frozenset({"type", "i", "method", "url", "headers", "body_json", "body_text", "body_b64"}),
    "response_head": frozenset({"type", "i", "t_ms", "status", "headers"}),
    "chunk": frozenset({"type", "i", "t_ms", "data", "b64", "stall_s"}),
    "end": frozenset({"type", "i", "t_ms", "kind", "stall_s"}),
    "footer": frozenset({"type", "interactions"}),
}


_END_KINDS: dict[str, EndKind] = {kind: kind for kind in END_KINDS}


def _request(record: Record) -> RecordedRequest:
    bodies = [key for key in ("body_json", "body_text", "body_b64") if key in record]
    if len(bodies) > 1:
        raise BadRecord(f"request has more than one body field: {', '.join(bodies)}")
    body = b""
    if "body_json" in record:
        try:
            body = canonical_json(record["body_json"])
        except UnicodeEncodeError:
            raise BadRecord("'body_json' is not valid Unicode (it holds a lone surrogate)") from None
    elif "body_text" in record:
        body = text_bytes(str_field(record, "body_text"), "body_text")
    elif "body_b64" in record:
        body = b64_field(record, "body_b64")
    return RecordedRequest(method=method_field(record), url=url_field(record), headers=headers_field(record), body=body)


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
            raise BadRecord(f"t_ms goes backwards ({t_ms} after {self.last_t_ms})")
        self.last_t_ms = t_ms


def _apply(record: Record, building: list[_Building], line: int) -> None:
    kind = str_field(record, "type")
    allowed = _ALLOWED_KEYS.get(kind)
    if allowed is None:
        raise BadRecord(f"unknown record type {kind[:40]!r} (expected request, response_head, chunk or end)")
    unknown = sorted(record.keys() - allowed)
    if unknown:
        raise BadRecord(f"{kind} record has unknown keys: {', '.join(k[:40] for k in unknown[:5])}")
    index = index_field(record)
    if kind == "request":
        if index != len(building):
            raise BadRecord(f"request for interaction {index}, expected interaction {len(building)} next")
        building.append(_Building(_request(record), line))
        return
    if index >= len(building):
        raise BadRecord(f"{kind} for interaction {index} before its request")
    current = building[index]
    if current.end is not None:
        raise BadRecord(f"{kind} for interaction {index} after its end record")
    t_ms = number_field(record, "t_ms", MAX_T_MS)
    if kind == "response_head":
        if current.status is not None:
            raise BadRecord(f"second response_head for interaction {index}")
        status = int_field(record, "status")
        if not 100 <= status <= 599:
            raise BadRecord(f"status {status} is not an HTTP status")
        current.tick(t_ms)
        current.status, current.headers, current.head_t_ms = status, headers_field(record), t_ms
        return
    if current.status is None:
        raise BadRecord(f"{kind} for interaction {index} before its response_head")
    current.tick(t_ms)
    stall_s = number_field(record, "stall_s", MAX_STALL_S, 0.0)
    if kind == "chunk":
        if ("data" in record) == ("b64" in record):
            raise BadRecord("chunk needs exactly one of 'data' (text) or 'b64'")
        data = text_bytes(str_field(record, "data"), "data") if "data" in record else b64_field(record, "b64")
        current.chunks.append(Chunk(data, t_ms, stall_s))
        return
    name = str_field(record, "kind")
    end_kind = _END_KINDS.get(name)
    if end_kind is None:
        raise BadRecord(f"end kind {name[:40]!r} is not one of {', '.join(END_KINDS)}")
    current.end = End(end_kind, t_ms, stall_s)


def _header(record: Record) -> tuple[Cassette, int]:
    if record.get("type") != "cassette" or record.get("format") != FORMAT:
        raise BadRecord(f'the first line must be the header {{"type":"cassette","format":"{FORMAT}",...}}')
    version = record.get("version")
    if isinstance(version, bool) or version not in READABLE_VERSIONS:
        raise BadRecord(
            f"unsupported version {json.dumps(version)[:20]} (this library reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))})"
        )

    def optional_str(key: str) -> str | None:
        value = record.get(key)
        if value is not None and not isinstance(value, str):
            raise BadRecord(f"header {key!r} must be a string or null")
        return value

    source = record.get("source")
    if source is not None and not isinstance(source, dict):
        raise BadRecord("header 'source' must be an object")
    reserved = {"type", "format", "version", "api", "model", "recorded_at", "source"}
    header = Cassette(
        api=optional_str("api"),
        model=optional_str("model"),
        recorded_at=optional_str("recorded_at"),
        source=source,
        extra={k: v for k, v in record.items() if k not in reserved},
    )
    return header, int(version)


def _footer(record: Record, building: list[_Building], version: int) -> None:
    if version < 2:
        raise BadRecord("a footer record in a version 1 file (footers start with version 2)")
    unknown = sorted(record.keys() - _ALLOWED_KEYS["footer"])
    if unknown:
        raise BadRecord(f"footer record has unknown keys: {', '.join(k[:40] for k in unknown[:5])}")
    count = int_field(record, "interactions")
    if count != len(building):
        raise BadRecord(f"the footer counts {count} interactions, the file holds {len(building)}")
    unfinished = [str(n) for n, item in enumerate(building) if item.end is None]
    if unfinished:
        raise BadRecord(f"the footer comes before the end record of interaction(s) {', '.join(unfinished)}")


def _split_lines(data: str | bytes, source: str, max_line: int, max_file: int) -> tuple[list[bytes], bool]:
    """(lines, whether the text ended with a newline), after the size limits."""
    if isinstance(data, str):
        try:
            data = data.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise CassetteFormatError(source, 0, f"not UTF-8 (a lone surrogate at character {exc.start})") from None
    if len(data) > max_file:
        raise CassetteFormatError(source, 0, f"{len(data)} bytes is more than the limit of {max_file} bytes")
    # Split on "\n" only: splitlines would also split on U+2028 and friends, which JSON leaves
    # unescaped inside strings.
    lines = data.split(b"\n")
    ends_cleanly = lines[-1] == b""
    if ends_cleanly:
        lines.pop()
    if not lines:
        raise CassetteFormatError(source, 0, "empty file (expected a header line)")
    for number, line in enumerate(lines, start=1):
        if len(line) > max_line:
            raise CassetteFormatError(
                source, number, f"the line is {len(line)} bytes long, more than the limit of {max_line}"
            )
    return lines, ends_cleanly


def loads(
    data: str | bytes,
    *,
    source: str = "<cassette>",
    allow_incomplete: bool = False,
    max_line_bytes: int = MAX_LINE_BYTES,
    max_file_bytes: int = MAX_FILE_BYTES,
) -> Cassette:
    """Parse and validate cassette text; `source` names it in error messages (usually the path).

    Raises `CassetteFormatError` for anything invalid and its subclass `CassetteIncomplete` for a
    cut-off recording unless `allow_incomplete` (see the module docstring).
    """
    lines, ends_cleanly = _split_lines(data, source, max_line_bytes, max_file_bytes)
    header: Cassette | None = None
    version = 0
    building: list[_Building] = []
    last_record = 0
    footer_line = 0
    torn_line = 0
    for number, text in enumerate(lines, start=1):
        if footer_line:
            raise CassetteFormatError(source, number, f"a record after the footer (line {footer_line})")
        try:
            try:
                record = parse_line(text)
            except BadRecord:
                # Every line we write ends in "\n"; an unterminated, unparsable last line is what a
                # crash mid-write leaves behind: the file is incomplete, not malformed.
                if number == len(lines) and not ends_cleanly and header is not None:
                    torn_line = number
                    break
                raise
            if header is None:
                header, version = _header(record)
            elif record.get("type") == "footer":
                _footer(record, building, version)
                footer_line = number
            else:
                _apply(record, building, number)
            last_record = number
        except BadRecord as exc:
            raise CassetteFormatError(source, number, str(exc)) from None
    assert header is not None
    if footer_line and not ends_cleanly:
        raise CassetteFormatError(source, footer_line, "the footer line does not end in a newline")
    for index, item in enumerate(building):
        if item.status is None and not _dangling(item, last_record):
            raise CassetteFormatError(source, item.line, f"interaction {index} has no response_head")
    reason = _incompleteness(
        version,
        building,
        footer_line=footer_line,
        torn_line=torn_line,
        ends_cleanly=ends_cleanly,
        last_record=last_record,
    )
    if reason is not None and not allow_incomplete:
        raise CassetteIncomplete(source, torn_line, reason)
    return _finish(header, building, reason)


def _incompleteness(
    version: int, building: list[_Building], *, footer_line: int, torn_line: int, ends_cleanly: bool, last_record: int
) -> str | None:
    """Why the file is known to be cut off, or None when it is whole."""
    if footer_line:
        return None
    unfinished = [n for n, item in enumerate(building) if item.end is None and not _dangling(item, last_record)]
    parts: list[str] = []
    if version >= 2:
        parts.append("no completion footer (the recorder stopped before it finished, e.g. it was killed)")
    if torn_line:
        parts.append(f"line {torn_line} is cut off mid-write")
    elif version < 2 and not ends_cleanly:
        parts.append("the last line does not end in a newline")
    if unfinished:
        parts.append(f"interaction(s) {', '.join(map(str, unfinished))} have no end record")
    if building and _dangling(building[-1], last_record):
        parts.append(f"interaction {len(building) - 1} has a request but no response")
    return "; ".join(parts) if parts else None


def _dangling(item: _Building, last_record: int) -> bool:
    # The recorder writes a request together with its response head, so a lone request can only
    # be the tail of a write cut short.
    return item.status is None and item.line == last_record


def _finish(header: Cassette, building: list[_Building], incomplete: str | None) -> Cassette:
    interactions: list[Interaction] = []
    for item in building:
        if item.status is None:  # the dangling last request (checked by `loads`)
            break
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
        incomplete=incomplete,
    )
