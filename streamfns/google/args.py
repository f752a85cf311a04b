"""Streamed function-call arguments (Vertex ``partialArgs``) written as JSON text, as they arrive.

With ``streamFunctionCallArguments`` Vertex sends a function call in several parts: the first names
the function, the following ones carry ``partialArgs`` — values addressed by a JSON Path (RFC 9535:
``$.location``, ``$.operations[0].price``, ``$['odd key']``) as ``stringValue`` / ``numberValue`` /
``boolValue`` / ``nullValue`` — and ``willContinue`` says whether more parts follow. A string value
with ``willContinue`` continues in the next partial argument for the same path.

:class:`ArgumentsWriter` turns that sequence into JSON text fragments, one per partial argument, whose
concatenation is the arguments object: containers are opened and closed as the paths move through
the document, so the builder receives ordinary argument deltas (live previews for free) and strictly
parses the whole text once at the end. Nothing is re-serialized per fragment: the cost is linear in
the arguments.

What cannot be placed is refused (:class:`ArgumentsConflict`), never guessed: a path that returns to a
member already written (a key twice, a closed object reopened), an array index that skips ahead, a
member of the wrong container kind, a malformed path, a non-finite number or a value of the wrong type.
"""

from __future__ import annotations

import math
from json.encoder import encode_basestring  # the C encoder: a JSON string literal, no ASCII escaping
from typing import Any

__all__ = ["ArgumentsConflict", "ArgumentsWriter", "parse_json_path"]

Segment = str | int
Path = tuple[Segment, ...]

_VALUE_FIELDS = ("stringValue", "numberValue", "boolValue", "nullValue")


class ArgumentsConflict(ValueError):
    """A partial argument that cannot be placed in the arguments written so far."""


def _name_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_" or ord(ch) >= 0x80


def _quoted(path: str, start: int) -> tuple[str, int]:
    """The name in a bracketed, quoted segment starting at ``path[start]`` (the quote), and where it ends."""
    quote = path[start]
    out: list[str] = []
    i = start + 1
    while i < len(path):
        ch = path[i]
        if ch == "\\" and i + 1 < len(path):
            out.append(path[i + 1])
            i += 2
            continue
        if ch == quote:
            return "".join(out), i + 1
        out.append(ch)
        i += 1
    raise ArgumentsConflict(f"unterminated name in JSON path {path!r}")


def parse_json_path(path: str) -> Path:
    """The segments of a normalized JSON path (``$.a[0]['b c']`` → ``("a", 0, "b c")``).

    Accepts ``.name`` (letters, digits, ``_``, non-ASCII), ``['name']`` / ``["name"]`` and ``[n]``;
    raises :class:`ArgumentsConflict` for anything else (wildcards, filters, slices, negative indexes).
    """
    if not path.startswith("$"):
        raise ArgumentsConflict(f"the JSON path {path!r} does not start at the root ($)")
    segments: list[Segment] = []
    i, n = 1, len(path)
    while i < n:
        ch = path[i]
        if ch == ".":
            j = i + 1
            while j < n and _name_char(path[j]):
                j += 1
            if j == i + 1:
                raise ArgumentsConflict(f"empty member name in JSON path {path!r}")
            segments.append(path[i + 1 : j])
            i = j
        elif ch == "[" and i + 1 < n and path[i + 1] in "'\"":
            name, i = _quoted(path, i + 1)
            if i >= n or path[i] != "]":
                raise ArgumentsConflict(f"malformed JSON path {path!r}")
            segments.append(name)
            i += 1
        elif ch == "[":
            j = path.find("]", i)
            digits = path[i + 1 : j] if j > 0 else ""
            if not digits.isascii() or not digits.isdigit() or (len(digits) > 1 and digits[0] == "0"):
                raise ArgumentsConflict(f"unsupported array index in JSON path {path!r}")
            segments.append(int(digits))
            i = j + 1
        else:
            raise ArgumentsConflict(f"malformed JSON path {path!r}")
    return tuple(segments)


class _Frame:
    """An open container: an object (the keys written) or an array (the next index)."""

    __slots__ = ("keys", "next_index", "written")

    def __init__(self, is_object: bool) -> None:
        self.keys: set[str] | None = set() if is_object else None
        self.next_index = 0
        self.written = False


def _scalar(partial: dict[str, Any]) -> tuple[str, str | None]:
    """``(kind, JSON text)`` of a partial argument's value; kind ``string`` returns the raw string."""
    present = [name for name in _VALUE_FIELDS if name in partial]
    if len(present) != 1:
        if not present:
            return "none", None
        raise ArgumentsConflict(f"a partial argument carries several values ({', '.join(present)})")
    field = present[0]
    value = partial[field]
    if field == "stringValue":
        if not isinstance(value, str):
            raise ArgumentsConflict(f"stringValue is a {type(value).__name__}, not a string")
        return "string", value
    if field == "numberValue":
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ArgumentsConflict(f"numberValue {value!r} is not a finite number")
        return "literal", repr(value) if isinstance(value, float) else str(value)
    if field == "boolValue":
        if not isinstance(value, bool):
            raise ArgumentsConflict(f"boolValue {value!r} is not a boolean")
        return "literal", "true" if value else "false"
    return "literal", "null"  # nullValue: JSON null or the NULL_VALUE enum name


class ArgumentsWriter:
    """Writes one streamed function call's arguments as JSON text (see the module docstring).

    :meth:`open` gives the first fragment (``{``), :meth:`feed` one fragment per partial argument
    (possibly empty) and :meth:`close` the last one; joined, they are the arguments object. Raises
    :class:`ArgumentsConflict` for what cannot be placed.
    """

    __slots__ = ("_frames", "_open_path", "_paths", "_string")

    def __init__(self) -> None:
        self._frames: list[_Frame] = []
        #: The segments leading to the innermost open container (the root is ``()``).
        self._open_path: list[Segment] = []
        #: The path of the string value still open (its closing quote not written yet).
        self._string: Path | None = None
        self._paths: dict[str, Path] = {}

    def open(self) -> str:
        """The first fragment: the root object opens."""
        self._frames = [_Frame(True)]
        return "{"

    def feed(self, partial: dict[str, Any]) -> str:
        """The fragment for one partial argument ``{"jsonPath", "<kind>Value", "willContinue"?}``."""
        raw_path = partial.get("jsonPath")
        if not isinstance(raw_path, str):
            raise ArgumentsConflict("a partial argument has no jsonPath")
        path = self._paths.get(raw_path)
        if path is None:
            path = self._paths[raw_path] = parse_json_path(raw_path)
        kind, value = _scalar(partial)
        continues = partial.get("willContinue") is True
        string = self._string
        if string is not None and path == string and kind != "literal":
            # The hot path of a long streamed string: its next piece, escaped, without quotes. A
            # piece without a value (an empty string left out) continues or ends it the same way.
            piece = encode_basestring(value)[1:-1] if value else ""
            if continues:
                return piece
            self._string = None
            return piece + '"'
        if kind == "none":
            return ""  # no value: nothing to place
        if string is None:
            return self._place(path, kind, value, continues)
        # Another path began: the string left open ends here.
        self._string = None
        return '"' + self._place(path, kind, value, continues)

    def close(self) -> str:
        """The last fragment: an open string, the open containers and the root close."""
        out = ['"'] if self._string is not None else []
        self._string = None
        out.extend(self._pop(len(self._open_path)))
        out.append("}")
        return "".join(out)

    # -- placing a value ----------------------------------------------------------------------------

    def _pop(self, count: int) -> list[str]:
        closers: list[str] = []
        for _ in range(count):
            frame = self._frames.pop()
            self._open_path.pop()
            closers.append("}" if frame.keys is not None else "]")
        return closers

    def _member(self, frame: _Frame, segment: Segment, path: Path) -> str:
        """The text before a new member ``segment`` of ``frame``: a comma and, in an object, the key."""
        comma = "," if frame.written else ""
        frame.written = True
        if frame.keys is not None:
            if not isinstance(segment, str):
                raise ArgumentsConflict(f"{_show(path)} indexes an object as an array")
            if segment in frame.keys:
                raise ArgumentsConflict(f"{_show(path)} returns to a member that was already written")
            frame.keys.add(segment)
            return comma + encode_basestring(segment) + ":"
        if not isinstance(segment, int):
            raise ArgumentsConflict(f"{_show(path)} names a member of an array")
        if segment != frame.next_index:
            raise ArgumentsConflict(f"{_show(path)} is not the next element (index {frame.next_index})")
        frame.next_index += 1
        return comma

    def _place(self, path: Path, kind: str, value: str | None, continues: bool) -> str:
        if not path:
            raise ArgumentsConflict("a partial argument replaces the whole arguments object")
        open_path = self._open_path
        shared = 0
        limit = min(len(open_path), len(path) - 1)
        while shared < limit and open_path[shared] == path[shared]:
            shared += 1
        out = self._pop(len(open_path) - shared)
        for depth in range(shared, len(path) - 1):
            segment = path[depth]
            out.append(self._member(self._frames[-1], segment, path))
            is_object = isinstance(path[depth + 1], str)
            out.append("{" if is_object else "[")
            self._frames.append(_Frame(is_object))
            open_path.append(segment)
        out.append(self._member(self._frames[-1], path[-1], path))
        if kind == "string":
            out.append('"' + encode_basestring(value or "")[1:-1])
            if continues:
                self._string = path
            else:
                out.append('"')
        else:
            out.append(value or "null")
        return "".join(out)


def _show(path: Path) -> str:
    return "$" + "".join(f"[{segment}]" if isinstance(segment, int) else f".{segment}" for segment in path)
