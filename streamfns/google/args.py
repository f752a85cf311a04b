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

# Vendor JSON is untrusted and untyped: every value is checked with ``type(...) is`` where it is used
# (the hot path cannot afford an accessor call per field), which leaves pyright's element types unknown.
# pyright: reportUnknownMemberType=false, reportUnknownVariableType=false, reportUnknownArgumentType=false

from __future__ import annotations

import math
import re
from json.encoder import encode_basestring  # the C encoder: a JSON string literal, no ASCII escaping
from typing import Any

__all__ = ["ArgumentsConflict", "ArgumentsWriter", "parse_json_path"]

Segment = str | int
Path = tuple[Segment, ...]

_VALUE_FIELDS = ("stringValue", "numberValue", "boolValue", "nullValue")
#: How many trailing segments a new path may be split into to reuse a parsed ancestor.
_SPLIT_LEVELS = 3


class ArgumentsConflict(ValueError):
    """A partial argument that cannot be placed in the arguments written so far."""


# One segment of a normalized JSON path: ``.name`` (RFC 9535 shorthand: letters, digits, ``_`` and any
# non-ASCII character), ``[index]`` (no sign, no leading zero) or a quoted name in brackets.
_SEGMENT = re.compile(
    r"\.([A-Za-z0-9_\u0080-\U0010ffff]+)"
    r"|\[(0|[1-9][0-9]*)\]"
    r"|\['((?:[^'\\]|\\.)*)'\]"
    r'|\["((?:[^"\\]|\\.)*)"\]'
)
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)")
_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _unescape(match: re.Match[str]) -> str:
    code = match.group(1)
    if len(code) == 5:
        return chr(int(code[1:], 16))
    return _ESCAPES.get(code, code)  # \' \" \\ \/ stand for themselves


def _name(quoted: str) -> str:
    """A quoted name's text with RFC 9535 escapes decoded (``\\uXXXX`` surrogate pairs joined)."""
    if "\\" not in quoted:
        return quoted
    text = _ESCAPE.sub(_unescape, quoted)
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace") if "\\u" in quoted else text


# The common shape, all shorthand names and indexes: read in one pass.
_SIMPLE_PATH = re.compile(r"\$(?:\.[A-Za-z0-9_\u0080-\U0010ffff]+|\[(?:0|[1-9][0-9]*)\])*")
_SIMPLE_SEGMENT = re.compile(r"\.([^.\[]+)|\[([0-9]+)\]")


def parse_json_path(path: str) -> Path:
    """The segments of a normalized JSON path (``$.a[0]['b c']`` → ``("a", 0, "b c")``).

    Accepts ``.name``, ``['name']`` / ``["name"]`` (a backslash escapes the next character) and
    ``[n]``; raises :class:`ArgumentsConflict` for anything else (wildcards, filters, slices,
    negative indexes, descendants).
    """
    if _SIMPLE_PATH.fullmatch(path):
        return tuple(name or int(index) for name, index in _SIMPLE_SEGMENT.findall(path, 1))
    if not path.startswith("$"):
        raise ArgumentsConflict(f"the JSON path {path!r} does not start at the root ($)")
    segments: list[Segment] = []
    position, end = 1, len(path)
    match = _SEGMENT.match
    while position < end:
        found = match(path, position)
        if found is None:
            raise ArgumentsConflict(f"unsupported JSON path {path!r} (at offset {position})")
        name, index, single, double = found.groups()
        if name is not None:
            segments.append(name)
        elif index is not None:
            segments.append(int(index))
        else:
            quoted: str = single if single is not None else double
            segments.append(_name(quoted))
        position = found.end()
    return tuple(segments)


class _Frame:
    """An open container: its live object, and the keys written (an object) or the next index."""

    __slots__ = ("keys", "next_index", "obj", "written")

    def __init__(self, obj: dict[str, Any] | list[Any]) -> None:
        #: The container in the live view (``Any``: it is indexed by the path's str or int segments).
        self.obj: Any = obj
        self.keys: set[str] | None = set() if type(obj) is dict else None
        self.next_index = 0
        self.written = False


def _scalar(partial: dict[str, Any]) -> tuple[str, str | None, object]:
    """``(kind, text, value)`` of a partial argument's value: kind ``string`` (text: the raw string),
    ``literal`` (text: its JSON) or ``none`` (no value)."""
    field: str | None = None
    for name in _VALUE_FIELDS:
        if name in partial:
            if field is not None:
                raise ArgumentsConflict(f"a partial argument carries several values ({field}, {name})")
            field = name
    if field is None:
        return "none", None, None
    value = partial[field]
    if field == "stringValue":
        if type(value) is not str:
            raise ArgumentsConflict(f"stringValue is a {type(value).__name__}, not a string")
        return "string", value, value
    if field == "numberValue":
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ArgumentsConflict(f"numberValue {value!r} is not a finite number")
        return "literal", repr(value) if isinstance(value, float) else str(value), value
    if field == "boolValue":
        if not isinstance(value, bool):
            raise ArgumentsConflict(f"boolValue {value!r} is not a boolean")
        return "literal", "true" if value else "false", value
    return "literal", "null", None  # nullValue: JSON null or the NULL_VALUE enum name


class ArgumentsWriter:
    """Writes one streamed function call's arguments as JSON text (see the module docstring).

    :meth:`open` gives the first fragment (``{``), :meth:`feed` one fragment per partial argument
    (possibly empty) and :meth:`close` the last one; joined, they are the arguments object. Raises
    :class:`ArgumentsConflict` for what cannot be placed.

    :attr:`arguments` is the live view of what has arrived, kept current as it is written (the
    builder shows it as the call's preview): every value is in place at once except the string
    still streaming, which is refreshed each time it has doubled (a long string is not
    re-joined per piece).
    """

    __slots__ = (
        "_frames",
        "_open",
        "_paths",
        "_pieces",
        "_shown",
        "_size",
        "_slot",
        "_string",
        "arguments",
        "open_string_path",
    )

    def __init__(self) -> None:
        #: The live arguments object.
        self.arguments: dict[str, Any] = {}
        #: The open containers, the root object first.
        self._frames: list[_Frame] = []
        #: The path of the innermost open container (the root is ``()``).
        self._open: Path = ()
        #: The path of the string value still open (its closing quote not written yet), where it
        #: lives in the live view, its pieces and sizes.
        self._string: Path | None = None
        #: The jsonPath text that named the string still open (None: no string is open); read it, the
        #: writer sets it (a plain attribute: a decoder checks it once per streamed piece).
        self.open_string_path: str | None = None
        self._slot: tuple[Any, Segment] | None = None
        self._pieces: list[str] = []
        self._size = 0
        self._shown = 0
        #: Parsed jsonPath texts, and the ancestors they were split from.
        self._paths: dict[str, Path] = {"$": ()}

    def open(self) -> str:
        """The first fragment: the root object opens."""
        self._frames = [_Frame(self.arguments)]
        return "{"

    def feed(self, partial: dict[str, Any]) -> str:
        """The fragment for one partial argument ``{"jsonPath", "<kind>Value", "willContinue"?}``."""
        raw_path = partial.get("jsonPath")
        continues = partial.get("willContinue") is True
        if raw_path == self.open_string_path and raw_path is not None and len(partial) - continues == 2:
            piece = partial.get("stringValue")
            if type(piece) is str:
                # The hot path of a long streamed string: its next piece, escaped, without quotes.
                if not continues:
                    self._end_string(piece)
                    return encode_basestring(piece)[1:]
                return self.continue_string(piece)
        if type(raw_path) is not str:
            raise ArgumentsConflict("a partial argument has no jsonPath")
        path = self._paths.get(raw_path)
        if path is None:
            path = self._parse(raw_path)
        kind, text, value = _scalar(partial)
        string = self._string
        if string is not None and path == string and kind != "literal":
            # The open string, named another way, or a piece without a value (an empty string
            # left out): it continues or ends the same way.
            piece = text or ""
            if not continues:
                self._end_string(piece)
                return encode_basestring(piece)[1:]
            if piece:
                self._pieces.append(piece)
                self._size += len(piece)
                if self._size >= self._shown:
                    self._show()
            return encode_basestring(piece)[1:-1] if piece else ""
        if kind == "none":
            return ""  # no value: nothing to place
        prefix = ""
        if string is not None:
            # Another path began: the string left open ends here.
            self._end_string("")
            prefix = '"'
        out = prefix + self._place(path, kind, text, value)
        if kind != "string":
            return out
        if continues:
            self._string, self.open_string_path = path, raw_path
            return out
        return out + '"'

    def continue_string(self, piece: str) -> str:
        """The fragment for the next piece of the open string, which goes on after it (what :meth:`feed`
        gives for ``{"jsonPath": <the open string's path as it was named>, "stringValue": piece,
        "willContinue": true}``): the piece escaped, without quotes. Only for a string left open."""
        if not piece:
            return ""
        self._pieces.append(piece)
        self._size += len(piece)
        if self._size >= self._shown:
            self._show()
        return encode_basestring(piece)[1:-1]

    def close(self) -> str:
        """The last fragment: an open string, the open containers and the root close."""
        out = ['"'] if self._string is not None else []
        if self._string is not None:
            self._end_string("")
        out.append(self._leave(0))
        out.append("}")
        return "".join(out)

    # -- the live view of a streaming string --------------------------------------------------------

    def _show(self) -> None:
        """Put the streaming string's text so far in the live view (at most each time it doubles)."""
        slot = self._slot
        if slot is not None:
            joined = "".join(self._pieces)
            self._pieces = [joined]
            slot[0][slot[1]] = joined
        self._shown = 2 * self._size + 1

    def _end_string(self, piece: str) -> None:
        if piece:
            self._pieces.append(piece)
        self._shown = 0
        self._show()
        self._string = self.open_string_path = self._slot = None
        self._pieces = []
        self._size = self._shown = 0

    # -- paths --------------------------------------------------------------------------------------
    def _parse(self, raw: str) -> Path:
        """Parse ``raw``, reusing a parsed ancestor: a new path mostly extends a known one by a segment
        or two (``$.a[3].x`` after ``$.a[3].y``, ``$.a[4].x`` after ``$.a[3]``). At most
        :data:`_SPLIT_LEVELS` segments are split off; anything else is parsed whole (never walking a
        deep path level by level)."""
        paths = self._paths
        if "'" not in raw and '"' not in raw:
            tail: list[Segment] = []
            heads = [raw]
            for _ in range(_SPLIT_LEVELS):
                head = heads[-1]
                cut = max(head.rfind("."), head.rfind("["))
                match = _SEGMENT.fullmatch(head, cut) if cut > 0 else None
                if match is None:
                    break
                name, index, _, _ = match.groups()
                tail.append(name if name is not None else int(index))
                base = paths.get(head[:cut])
                if base is not None:
                    # Cache the path and the ancestors just split off (siblings reuse them).
                    for level in range(len(tail) - 1, -1, -1):
                        base = paths[heads[level]] = (*base, tail[level])
                    return base
                heads.append(head[:cut])
        path = paths[raw] = parse_json_path(raw)
        return path

    # -- placing a value ----------------------------------------------------------------------------

    def _leave(self, depth: int) -> str:
        """Close the open containers deeper than ``depth``; their closing brackets."""
        frames = self._frames
        closers = "".join("}" if frame.keys is not None else "]" for frame in reversed(frames[depth + 1 :]))
        del frames[depth + 1 :]
        self._open = self._open[:depth]
        return closers

    def _place(self, path: Path, kind: str, text: str | None, value: object) -> str:
        """The text that moves from the open containers to ``path`` and starts its value (a string
        without its closing quote); the value goes in the live view."""
        last = len(path) - 1
        if last < 0:
            raise ArgumentsConflict("a partial argument replaces the whole arguments object")
        out = ""
        if path[:last] != self._open:
            out = self._enter(path, last)
        frame = self._frames[-1]
        segment = path[last]
        comma = self._member(frame, segment, path)
        obj = frame.obj
        if type(obj) is dict:
            obj[segment] = value
        else:
            obj.append(value)
        if kind == "string":
            self._slot = (obj, segment)
            self._pieces = [text] if text else []
            self._size = len(text or "")
            self._shown = 2 * self._size + 1
            return out + comma + encode_basestring(text or "")[:-1]
        return out + comma + (text or "null")

    @staticmethod
    def _member(frame: _Frame, segment: Segment, path: Path) -> str:
        """Admit ``segment`` as the next member of ``frame``; the text before it (comma, key)."""
        comma = "," if frame.written else ""
        keys = frame.keys
        if keys is not None:
            if type(segment) is not str:
                raise ArgumentsConflict(f"{_show(path)} indexes an object as an array")
            if segment in keys:
                raise ArgumentsConflict(f"{_show(path)} returns to a member that was already written")
            keys.add(segment)
            comma += encode_basestring(segment) + ":"
        elif type(segment) is not int:
            raise ArgumentsConflict(f"{_show(path)} names a member of an array")
        elif segment != frame.next_index:
            raise ArgumentsConflict(f"{_show(path)} is not the next element of its array (index {frame.next_index})")
        else:
            frame.next_index = segment + 1
        frame.written = True
        return comma

    def _enter(self, path: Path, last: int) -> str:
        """Close what ``path`` leaves and open the containers it goes into (up to its parent)."""
        current = self._open
        shared = 0
        limit = min(len(current), last)
        while shared < limit and current[shared] == path[shared]:
            shared += 1
        out = [self._leave(shared)] if shared < len(current) else []
        frames = self._frames
        for depth in range(shared, last):
            # Each new container is a new member of the one around it: the same checks as a value.
            frame = frames[-1]
            segment = path[depth]
            out.append(self._member(frame, segment, path))
            child: dict[str, Any] | list[Any] = {} if type(path[depth + 1]) is str else []
            if type(frame.obj) is dict:
                frame.obj[segment] = child
            else:
                frame.obj.append(child)
            out.append("{" if type(child) is dict else "[")
            frames.append(_Frame(child))
        self._open = path[:last]
        return "".join(out)


def _show(path: Path) -> str:
    return "$" + "".join(f"[{segment}]" if isinstance(segment, int) else f".{segment}" for segment in path)
