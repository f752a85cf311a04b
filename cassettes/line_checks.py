"""Reading one line of a cassette file: JSON within limits, and the checks on each field.

Everything here raises `BadRecord` naming the problem; `cassettes.format.loads` adds the source and
line number and turns it into `CassetteFormatError`. The checks keep a hostile or damaged file from
reaching replay or a terminal:

* JSON nested deeper than `MAX_DEPTH`, integers too long to convert, NaN/Infinity and numbers that
  overflow to infinity are rejected (never `RecursionError`/`ValueError`);
* times are finite and between 0 and `MAX_T_MS`, stalls between 0 and `MAX_STALL_S`;
* interaction indexes are non-negative integers;
* header names are HTTP tokens and header values hold no control character but TAB (no CR/LF
  header injection, no NUL); methods are tokens; URLs hold no whitespace or control character;
* text fields are valid Unicode (no lone surrogates), base64 fields are strict base64.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from typing import cast

import httpx

from cassettes.model import Headers, JSONValue

__all__ = [
    "MAX_DEPTH",
    "MAX_STALL_S",
    "MAX_T_MS",
    "BadRecord",
    "Record",
    "b64_field",
    "depth_within",
    "headers_field",
    "index_field",
    "int_field",
    "method_field",
    "number_field",
    "parse_line",
    "str_field",
    "text_bytes",
    "url_field",
]

#: Deepest JSON nesting accepted (and written as structured JSON): far beyond any real request body,
#: far below the interpreter's recursion limit.
MAX_DEPTH = 100
#: Latest time accepted, in milliseconds after the request (about 115 days).
MAX_T_MS = 1e10
#: Longest stall accepted, in seconds (about 11.5 days; replay sleeps for it).
MAX_STALL_S = 1e6

Record = dict[str, JSONValue]

_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_BAD_HEADER_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_BAD_URL = re.compile(r"[\x00-\x20\x7f]")


class BadRecord(Exception):
    """A problem with the current line (the message names it, never with the line's full text)."""


def _reject_constant(name: str) -> JSONValue:
    raise BadRecord(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BadRecord(f"the number {text[:20]}… is too large")
    return value


def depth_within(value: JSONValue, limit: int = MAX_DEPTH) -> bool:
    """True when `value` nests at most `limit` containers deep (checked without recursion)."""
    pending: list[tuple[JSONValue, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            children = list(item.values())
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return False
        pending.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return True


# One decoder for every line (json.loads would build a new one per call for these hooks).
_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)


def parse_line(line: bytes) -> Record:
    """One line as a JSON object (see the module docstring for what is rejected)."""
    if not line.strip():
        raise BadRecord("empty line")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRecord(f"not UTF-8 (byte {exc.start} of the line)") from None
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise BadRecord(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise BadRecord(f"JSON nested too deeply (more than {MAX_DEPTH} levels)") from None
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise BadRecord(f"not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise BadRecord("a record must be a JSON object")
    record = cast(Record, value)
    # Most records hold only scalars; walk just the values that nest.
    for item in record.values():
        if isinstance(item, dict | list) and not depth_within(item, MAX_DEPTH - 1):
            raise BadRecord(f"JSON nested too deeply (more than {MAX_DEPTH} levels)")
    return record


def _short(value: JSONValue) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _field(record: Record, key: str) -> JSONValue:
    if key not in record:
        raise BadRecord(f"{record.get('type')} record is missing {key!r}")
    return record[key]


def str_field(record: Record, key: str) -> str:
    """A required string field."""
    value = _field(record, key)
    if not isinstance(value, str):
        raise BadRecord(f"{key!r} must be a string, got {_short(value)}")
    return value


def int_field(record: Record, key: str) -> int:
    """A required integer field (booleans are not integers here)."""
    value = _field(record, key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRecord(f"{key!r} must be an integer, got {_short(value)}")
    return value


def index_field(record: Record) -> int:
    """The interaction index `i`: a non-negative integer."""
    value = int_field(record, "i")
    if value < 0:
        raise BadRecord(f"'i' must be a non-negative integer, got {value}")
    return value


def number_field(record: Record, key: str, limit: float, default: float | None = None) -> float:
    """A finite number between 0 and `limit`; `default` when the key is absent and a default is given."""
    if default is not None and key not in record:
        return default
    value = _field(record, key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadRecord(f"{key!r} must be a number, got {_short(value)}")
    if not 0 <= value <= limit:
        raise BadRecord(f"{key!r} must be between 0 and {limit:g}, got {_short(value)}")
    return value


def text_bytes(text: str, key: str) -> bytes:
    """A text field's UTF-8 bytes (JSON can spell lone surrogates, which are not text)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise BadRecord(f"{key!r} is not valid Unicode (it holds a lone surrogate)") from None


def b64_field(record: Record, key: str) -> bytes:
    """A required strict-base64 field, decoded."""
    try:
        return base64.b64decode(str_field(record, key), validate=True)
    except binascii.Error as exc:
        raise BadRecord(f"{key!r} is not valid base64 ({exc})") from None


def headers_field(record: Record) -> Headers:
    """The optional `headers` object (name -> list of values) as ordered pairs, names lower-cased."""
    value = record.get("headers", {})
    if not isinstance(value, dict):
        raise BadRecord("'headers' must be an object of name -> list of strings")
    pairs: list[tuple[str, str]] = []
    for name, values in value.items():
        if not _TOKEN.fullmatch(name):
            raise BadRecord(f"header name {name!r} is not an HTTP token")
        if not isinstance(values, list):
            raise BadRecord(f"header {name!r} must be a list of strings")
        for item in values:
            if not isinstance(item, str):
                raise BadRecord(f"header {name!r} must be a list of strings")
            if _BAD_HEADER_VALUE.search(item):
                raise BadRecord(f"header {name!r} has a control character (CR, LF, NUL, ...) in its value")
            text_bytes(item, f"header {name}")
            pairs.append((name.lower(), item))
    return tuple(pairs)


def method_field(record: Record) -> str:
    """The request method: an HTTP token."""
    method = str_field(record, "method")
    if not _TOKEN.fullmatch(method):
        raise BadRecord(f"'method' {method[:20]!r} is not an HTTP method")
    return method


def url_field(record: Record) -> str:
    """The request URL: no whitespace or control character, and parseable."""
    url = str_field(record, "url")
    if _BAD_URL.search(url):
        raise BadRecord("'url' holds whitespace or a control character")
    text_bytes(url, "url")
    try:
        httpx.URL(url)
    except (httpx.InvalidURL, ValueError) as exc:
        raise BadRecord(f"'url' is not a URL ({exc})") from None
    return url
