"""Canonical JSON, ignored JSON paths and a readable JSON diff.

Request bodies are compared and stored in one canonical form (sorted keys, no insignificant
whitespace, UTF-8, no NaN), so two requests that differ only in key order or spacing match.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import cast

from cassettes.model import JSONValue

__all__ = [
    "NOT_JSON",
    "NotJSON",
    "canonical_json",
    "canonical_json_lenient",
    "drop_paths",
    "json_diff",
    "parse_json",
    "parse_json_lenient",
    "short_json",
]


class NotJSON:
    """Type of the `NOT_JSON` sentinel returned by `parse_json` for bytes that are not JSON."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NOT_JSON"


NOT_JSON = NotJSON()


def _reject_constant(name: str) -> JSONValue:
    # NaN and Infinity are not JSON; accepting them would make "canonical" ambiguous.
    raise ValueError(f"{name} is not valid JSON")


def parse_json(data: bytes | str) -> JSONValue | NotJSON:
    """Parse strict JSON (UTF-8, no NaN/Infinity); `NOT_JSON` when `data` is anything else,
    including JSON nested too deeply for the interpreter."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        return cast(JSONValue, json.loads(text, parse_constant=_reject_constant))
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return NOT_JSON


def parse_json_lenient(data: bytes | str) -> JSONValue | NotJSON:
    """Parse JSON that may hold `NaN`, `Infinity` and `-Infinity` (what Python's `json.dumps` writes
    for such floats; they come back as floats), else like `parse_json`. For reading what a request
    carries, never for the canonical form (see `canonical_json_lenient`)."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        return cast(JSONValue, json.loads(text))
    except (ValueError, RecursionError):
        return NOT_JSON


def canonical_json_lenient(value: JSONValue) -> bytes:
    """`canonical_json`, except that a non-finite float is written as `NaN`/`Infinity`/`-Infinity`
    (the form of a body that already held one: it is not JSON either way)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=True).encode("utf-8")


def canonical_json(value: JSONValue) -> bytes:
    """The canonical serialization: sorted keys, compact separators, UTF-8, no NaN."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def short_json(value: JSONValue, limit: int = 60) -> str:
    """A one-line JSON rendering cut to `limit` characters, for error messages."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _split_path(path: str) -> list[str]:
    return [segment for segment in path.split(".") if segment]


def _drop(value: JSONValue, segments: Sequence[str]) -> JSONValue:
    head, rest = segments[0], segments[1:]
    if isinstance(value, dict):
        out: dict[str, JSONValue] = {}
        for key, item in value.items():
            if head in ("*", key):
                if rest:
                    out[key] = _drop(item, rest)
                # else: this key is the ignored leaf, leave it out
            else:
                out[key] = item
        return out
    if isinstance(value, list):
        items: list[JSONValue] = []
        for index, item in enumerate(value):
            if head in ("*", str(index)):
                if rest:
                    items.append(_drop(item, rest))
            else:
                items.append(item)
        return items
    return value


def drop_paths(value: JSONValue, paths: Iterable[str]) -> JSONValue:
    """A copy of `value` without the given dotted paths.

    A path is dot-separated keys or list indexes (`metadata.user_id`, `messages.0.content`);
    `*` matches any key or index (`messages.*.cache_control`). Paths that do not exist are
    ignored. The input is never modified.
    """
    for path in paths:
        segments = _split_path(path)
        if segments:
            value = _drop(value, segments)
    return value


def _diff(recorded: JSONValue, sent: JSONValue, path: str, out: list[str], limit: int) -> None:
    if len(out) >= limit:
        return
    if isinstance(recorded, dict) and isinstance(sent, dict):
        for key in sorted(recorded.keys() | sent.keys()):
            child = f"{path}.{key}"
            if key not in sent:
                out.append(f"{child}: only in the recorded request")
            elif key not in recorded:
                out.append(f"{child}: only in the sent request ({short_json(sent[key])})")
            else:
                _diff(recorded[key], sent[key], child, out, limit)
            if len(out) >= limit:
                return
        return
    if isinstance(recorded, list) and isinstance(sent, list):
        for index, (left, right) in enumerate(zip(recorded, sent, strict=False)):
            _diff(left, right, f"{path}[{index}]", out, limit)
        if len(recorded) != len(sent) and len(out) < limit:
            out.append(f"{path}: recorded has {len(recorded)} items, sent has {len(sent)}")
        return
    # bool is an int subclass in Python; compare types too so `1` and `true` differ.
    if type(recorded) is not type(sent) or recorded != sent:
        out.append(f"{path}: recorded {short_json(recorded)}, sent {short_json(sent)}")


def json_diff(recorded: JSONValue, sent: JSONValue, limit: int = 8) -> list[str]:
    """Human-readable differences between two JSON values, as `$.a.b[2]: ...` lines (at most `limit`)."""
    out: list[str] = []
    _diff(recorded, sent, "$", out, limit)
    return out
