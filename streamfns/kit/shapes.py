"""Events that repeat one JSON layout: read the few values that change without parsing the rest again.

A streaming vendor sends the same event hundreds of times with only a value or two changed: Anthropic's
``{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"…"}}``, a Chat Completions
chunk whose id, model and fingerprint repeat around ``"content":"…"``. Parsing each one whole builds every
dict and string again to read one of them; for a chat chunk that is three quarters of the work.

:meth:`EventShape.learn` takes one event's raw bytes, its parsed value and the paths of the members that
change (the *holes*: strings, or integers written as plain digits) and records the bytes around them.
:meth:`EventShape.match` then takes a later event's bytes and returns the holes' values — or ``None`` when
the event differs anywhere else. What a match promises: ``data`` is the learned event with every hole
replaced by one complete JSON string (checked by jiter, escapes and UTF-8 included) or one non-negative
integer, so its parse is exactly the learned value with those members replaced; every other byte is the
same, so a decoder that reached a decision on the learned event reaches the same one on this event
(given the same state of its own: the decoder checks that). Anything else — another key, a changed
index, a value of another type, whitespace where there was none, a malformed literal the full path
would repair or refuse — is no match, and the decoder's full path reads the event as before.

Learning is checked, not assumed: the holes are found by their member names, then the event is rebuilt
with a distinct sentinel in every hole and parsed again; unless that parse equals the learned value
with the sentinels at exactly the given paths, there is no shape. A duplicate key that shadows a
hole, a name that occurs in two places, a value the vendor wrote in a form we did not expect: each
makes :meth:`~EventShape.learn` return ``None``, never a shape that reads the wrong bytes.

Reading is cheap and stays strict. A shape of several holes (Gemini's text and two running counts) that
has read :data:`READER_AFTER_HITS` events reads the next with one compiled pattern of its layout, made
once per layout in the process: the fixed bytes and every hole's literal in one pass, each string then
read by jiter as before. A lone string hole (a text delta) keeps its three slices and one parse, which
cost less than a pattern.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import itertools
import json
import re
from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol, TypeAlias, cast

import jiter

__all__ = [
    "LAYOUTS_KEPT",
    "MAX_SHAPE_BYTES",
    "SHAPE_LEARNS",
    "EventShape",
    "HolePath",
    "Matcher",
    "Shortcut",
    "ShortcutReads",
    "changed",
]

MAX_SHAPE_BYTES: Final = 8 * 1024
"""The largest event a shape is learned from. Learning walks the event with a regex and parses it twice:
about 80 times the cost of one parse, 1.4 s for a 16 MB event. Deltas are a few hundred bytes; a larger
event is parsed whole (its parse dwarfs the per-event costs a shape saves), so a hostile server sending
huge events of changing layout costs at most a fraction of a millisecond per learn."""

SHAPE_LEARNS: Final = 16
"""How many learns that never paid one decoder makes in one stream. A learn costs tens of microseconds
(ten events' worth): a decoder gives a learn back when its shape went on to read an event
(:attr:`EventShape.hits`), so a stream whose layout changes now and then keeps learning, while one
whose events never repeat (or a hostile one that changes layout every event) pays for a few learns,
not for every event."""

HolePath: TypeAlias = tuple[str | int, ...]
"""Where a hole lies in the parsed event: object member names and array positions, outermost first."""

_from_json = jiter.from_json
# A JSON string literal, and a non-negative integer with no sign, fraction or exponent.
_STRING: Final = re.compile(rb'"(?:[^"\\\x00-\x1f]|\\.)*"')
_DIGITS: Final = re.compile(rb"0|[1-9][0-9]*")
_NOT_FOUND: Final = object()


class EventShape:
    """The bytes of one learned event around its holes (see the module docstring)."""

    __slots__ = (
        "_blank",
        "_head",
        "_head_len",
        "_kinds",
        "_layout",
        "_lefts",
        "_middles",
        "_one_string",
        "_piece_is_string",
        "_reader",
        "_rights",
        "_strings_slots",
        "_tail",
        "_tail_len",
        "hits",
    )

    def __init__(
        self,
        head: bytes,
        kinds: Sequence[type],
        middles: Sequence[bytes],
        tail: bytes,
        *,
        order: Sequence[int] = (0,),
    ) -> None:
        layout: _Layout = (head, tuple(kinds), tuple(middles), tail, tuple(order))
        self._layout = layout
        derived = _derived.get(layout)
        if derived is None:
            derived = _derive(layout)
        (
            self._head,
            self._head_len,
            self._kinds,
            self._middles,
            self._tail,
            self._tail_len,
            self._one_string,
            self._blank,
            self._strings_slots,
            self._piece_is_string,
            self._lefts,
            self._rights,
        ) = derived
        # A shape of several holes, once it has read READER_AFTER_HITS events, reads each with one
        # compiled pattern of its layout (see _reader_of), made once per layout in the process.
        self._reader: _Reader | None = None if self._one_string else _readers.get(layout)
        self.hits = 0
        """How many events this shape has read (a decoder gives back the learn of a shape that paid)."""

    @classmethod
    def learn(cls, data: bytes, value: Any, holes: Sequence[HolePath]) -> EventShape | None:
        """The shape of ``data`` (whose parse is ``value``) with a hole at each path of ``holes``, or
        ``None`` when those members cannot be told apart from the rest (see the module docstring).
        Each hole must hold a string or a non-negative int and end in a member name. Give the piece
        first: the hole whose width changes from event to event (the text); the others are found around
        it (see :meth:`_holes`)."""
        if len(data) > MAX_SHAPE_BYTES:
            return None
        try:
            key: tuple[HolePath, ...] | None = tuple(holes)
            hash(key)
        except TypeError:  # a third party's paths of lists: learned, not remembered
            key = None
        if key is not None:
            known = _known_layout(data, value, key)
            if known is not None:
                return known
        spans: list[tuple[int, int, type, HolePath, int]] = []
        for position, path in enumerate(holes):
            found = _locate(data, value, path)
            if found is None:
                return None
            spans.append((*found, path, position))
        spans.sort(key=lambda span: span[0])
        if not spans or any(a[1] > b[0] for a, b in itertools.pairwise(spans)):
            return None
        starts = [0, *(span[1] for span in spans)]
        ends = [*(span[0] for span in spans), len(data)]
        segments = [data[a:b] for a, b in zip(starts, ends, strict=True)]
        kinds = [span[2] for span in spans]
        order = [span[4] for span in spans]
        shape = cls(segments[0], kinds, segments[1:-1], segments[-1], order=order)
        if not shape._verified(value, [span[3] for span in spans]):
            return None
        if key is not None:
            _remember_layout(key, (segments[0], tuple(kinds), tuple(segments[1:-1]), segments[-1], tuple(order)))
        return shape

    @property
    def one_string(self) -> bool:
        """Whether its one hole is a string: a match is then three slices, two compares and one small
        parse (a shape of several holes reads an event with a compiled pattern, which on a long event
        costs more than framing it and parsing it whole)."""
        return self._one_string

    def framed(self, before: bytes, after: bytes) -> EventShape:
        """This shape with ``before`` and ``after`` around its bytes (a frame's, such as an SSE event's
        lead and blank line: see :meth:`normalize.wire.SSEDecoder.lone_parts`), matching a whole read
        in one step. What it matches holds no CR or LF between the two unless this shape's own bytes
        do: a hole is a JSON string literal (which holds neither) or digits, and :meth:`match` takes
        each literal alone, never JSON whitespace around it (which may hold them)."""
        order = [slot for _, slot in self._strings_slots]
        return EventShape(before + self._head, self._kinds, self._middles, self._tail + after, order=order)

    def filled(self, slot: int, literal: bytes) -> EventShape | None:
        """This shape with the hole given ``slot``-th to :meth:`learn` made fixed bytes: ``literal``, one
        literal of the hole's kind (a JSON string's bytes, or plain digits). It matches exactly the
        events this shape matches with that literal in that hole, and gives the other holes' values (in
        the order they were given, the piece still first) — one hole fewer to read an event, and a
        shape of one string hole left is read with three slices and a parse, not a pattern.

        Sound without a new check: this shape's verification holds for every literal of the hole's kind
        (a literal is one JSON token, so the bytes around it read as before: see the module docstring),
        and this is one of them. None: ``slot`` is the piece's (0) or no hole's, or ``literal`` is not
        one complete literal of the hole's kind."""
        head, kinds, middles, tail, order = self._layout
        if slot <= 0 or slot not in order:
            return None
        at = order.index(slot)  # the hole's place among the holes in byte order
        kind = kinds[at]
        if kind is str:
            if _STRING.fullmatch(literal) is None:
                return None
            try:
                value = _from_json(literal, cache_mode="none")
            except ValueError:
                return None
            if value.__class__ is not str:
                return None
        elif _DIGITS.fullmatch(literal) is None:
            return None
        segments = [head, *middles, tail]
        segments[at : at + 2] = [segments[at] + literal + segments[at + 1]]
        return EventShape(
            segments[0],
            kinds[:at] + kinds[at + 1 :],
            segments[1:-1],
            segments[-1],
            order=[place - (place > slot) for place in order if place != slot],
        )

    def match(self, data: bytes) -> list[Any] | None:
        """The holes' values of ``data`` (in the order the holes were given to :meth:`learn`) if ``data``
        has this shape; else ``None``."""
        # Written for CPython 3.11, where every slice allocates a slice object: the usual shape (one
        # string hole, as a text delta) costs three slices, two compares and one small parse.
        reader = self._reader
        if reader is not None:
            values = reader(data)
            if values is not None:
                self.hits += 1
            return values
        head_len = self._head_len
        if data[:head_len] != self._head:
            return None
        end = len(data) - self._tail_len
        if data[end:] != self._tail:
            return None
        if self._one_string:
            if end - head_len < 2 or data[head_len] != 0x22 or data[end - 1] != 0x22:
                return None  # not a string literal alone (JSON whitespace around it is another layout)
            try:
                # No string cache: each event's text is its own, and caching it would only displace
                # an older one from jiter's process-wide table (and keep it alive there).
                piece = _from_json(data[head_len:end], cache_mode="none")
            except ValueError:
                return None  # not one complete string: the full path decides what it is
            if piece.__class__ is not str:
                return None
            self.hits += 1
            return [piece]
        values = self._holes(data, head_len, end)
        if values is not None:
            self.hits += 1
            if self.hits == READER_AFTER_HITS and not self._one_string and _compiles(self._layout):
                self._reader = _reader_of(self._layout)
        return values

    def _holes(self, data: bytes, start: int, end: int) -> list[Any] | None:
        """The holes between ``start`` and ``end`` (the head and the tail matched).

        The holes before the piece are found from the start, each ending where the fixed bytes after it
        begin; those after it from the end, each starting where the fixed bytes before it end; the piece
        is what lies between. Whatever widths the holes have (a running count, a random padding), that
        is one search each and no more. Where the bytes are found does not decide soundness: every
        fixed part is then exactly in place around the holes, and each hole must be one complete literal
        of its kind (a string's bytes alone, digits), or there is no match."""
        values: list[Any] = list(self._blank)
        for middle, middle_width, is_string, slot in self._lefts:
            stop = data.find(middle, start, end)
            if stop < 0:
                return None
            piece = _read(data[start:stop], is_string)
            if piece is None:
                return None
            values[slot] = piece
            start = stop + middle_width
        stop = end
        for middle, middle_width, is_string, slot in self._rights:
            cut = data.rfind(middle, start, stop)
            if cut < 0:
                return None
            piece = _read(data[cut + middle_width : stop], is_string)
            if piece is None:
                return None
            values[slot] = piece
            stop = cut
        literal = data[start:stop]
        if self._piece_is_string:  # the hot read (a text piece), inline: a call costs more
            if stop - start < 2 or literal[0] != 0x22 or literal[-1] != 0x22:
                return None  # not the literal alone (as in match)
            try:
                piece = _from_json(literal, cache_mode="none")  # as in match
            except ValueError:
                return None
            if piece.__class__ is not str:
                return None
        else:
            piece = _read(literal, False)
            if piece is None:
                return None
        values[0] = piece
        return values

    def _verified(self, value: Any, paths: Sequence[HolePath]) -> bool:
        """Rebuild the event with a sentinel in each hole (``paths`` in the order of their bytes): its
        parse must be the learned event's ``value`` with the sentinels at exactly those paths, and it
        must match. The shape keeps no reference to ``value``: a stream's learned event would otherwise
        stay alive with it, every dict and list of it one more object for the collector to walk (nine
        in a Gemini chunk), a thousand streams at a time."""
        expected = _copied(value)
        pieces = [self._head]
        for n, (kind, path) in enumerate(zip(self._kinds, paths, strict=True)):
            sentinel: Any = f"\x00hole {n}\x00" if kind is str else 987_654_321_000 + n
            _set(expected, path, sentinel)
            pieces.append(json.dumps(sentinel).encode("ascii"))
            pieces.append(self._middles[n] if n < len(self._middles) else self._tail)
        rebuilt = b"".join(pieces)
        try:
            parsed = _from_json(rebuilt)
        except ValueError:
            return False
        verified = parsed == expected and self.match(rebuilt) is not None
        self.hits = 0  # the check above is not an event read
        return verified


#: A verified layout: head, hole kinds, middles, tail, and each hole's place in the caller's order.
_Layout: TypeAlias = tuple[bytes, tuple[type, ...], tuple[bytes, ...], bytes, tuple[int, ...]]

LAYOUTS_KEPT: Final = 8
"""How many verified layouts the process keeps for one set of holes (newest first), for
:meth:`EventShape.learn` to try before it learns. Every stream of an api learns the same few layouts
(a text delta whose bytes differ only in its text): a stream that finds its first delta in one skips
the search and the check, about two thirds of a stream's set-up in the kit's decoders."""

_HOLE_SETS_KEPT: Final = 32
"""How many sets of holes the table keeps (the built-in decoders use a handful); past it the oldest
set is dropped, so a decoder deriving its holes from what a server sends cannot grow it."""

#: Verified layouts by the holes they were learned with. Read and replaced whole (a dict's get and
#: set are atomic), so the event loops of several threads may share it; a lost update costs one learn.
_layouts: dict[tuple[HolePath, ...], tuple[_Layout, ...]] = {}


_Derived: TypeAlias = tuple[
    bytes,
    int,
    tuple[type, ...],
    tuple[bytes, ...],
    bytes,
    int,
    bool,
    tuple[None, ...],
    tuple[tuple[bool, int], ...],
    bool,
    tuple[tuple[bytes, int, bool, int], ...],
    tuple[tuple[bytes, int, bool, int], ...],
]
"""What a shape reads with, derived from its layout (see :func:`_derive`)."""

_DERIVED_KEPT: Final = 64
"""How many layouts' derived fields the process keeps (every stream of an api makes the same few shapes)."""

#: The derived fields of layouts, by layout; shared as :data:`_layouts` is.
_derived: dict[_Layout, _Derived] = {}


def _derive(layout: _Layout) -> _Derived:
    """The fields a shape of ``layout`` reads with, made once per layout (a shape is made per stream,
    twice with its framed form: deriving them each time was a third of a known layout's learn)."""
    head, kinds, middles, tail, order = layout
    strings_slots = tuple((kind is str, slot) for kind, slot in zip(kinds, order, strict=True))
    # The piece (the hole given first to learn(), whose width changes from event to event) splits
    # the others: those before it are found from the start, each by the fixed bytes after it; those
    # after it from the end, last first, each by the fixed bytes before it (see _holes).
    piece_at = order.index(0) if order else 0
    lefts = tuple((middles[i], len(middles[i]), *strings_slots[i]) for i in range(piece_at))
    rights = tuple(
        (middles[i - 1], len(middles[i - 1]), *strings_slots[i]) for i in reversed(range(piece_at + 1, len(kinds)))
    )
    derived: _Derived = (
        head,
        len(head),
        kinds,
        middles,
        tail,
        len(tail),
        kinds == (str,),
        (None,) * len(kinds),
        strings_slots,
        kinds[piece_at] is str if kinds else True,
        lefts,
        rights,
    )
    if len(_derived) >= _DERIVED_KEPT:
        with contextlib.suppress(StopIteration, KeyError, RuntimeError):  # another thread changed it first
            del _derived[next(iter(_derived))]
    _derived[layout] = derived
    return derived


READER_AFTER_HITS: Final = 32
"""How many events a shape of several holes reads before it reads them with a compiled pattern of its
layout (about 40% less work an event for three holes). Compiling one costs about a millisecond (some
hundred events' worth), so it is made only for a layout that keeps repeating, and once per process:
a hostile server changing layouts every few events never gets one compiled."""

READER_MAX_BYTES: Final = 2048
"""The most fixed bytes a layout may have to be compiled (a delta's are a few hundred). Compiling costs
about 2 ms a kilobyte of them: a server sending large events of a layout that changes every
:data:`READER_AFTER_HITS` events would otherwise make each change cost far more than reading them."""


def _compiles(layout: _Layout) -> bool:
    head, _, middles, tail, _ = layout
    return len(head) + len(tail) + sum(map(len, middles)) <= READER_MAX_BYTES


_READERS_KEPT: Final = 32
"""How many compiled layouts the process keeps (the built-in decoders use a handful); past it the
oldest is dropped."""

_Reader: TypeAlias = Callable[[bytes], "list[Any] | None"]
"""A layout's compiled reading (see :func:`_reader_of`): the holes' values in the caller's order, or None."""

#: The compiled readings of layouts, by layout (see :func:`_reader_of`); shared as :data:`_layouts` is.
_readers: dict[_Layout, _Reader] = {}

# A JSON string literal's bytes (an escape is a backslash and the byte after it; _string_value then reads
# the literal strictly), possessive so a long one is one pass; and a non-negative integer in plain digits.
_STRING_GROUP: Final = rb'("(?:[^"\\\x00-\x1f]++|\\.)*+")'
_DIGITS_GROUP: Final = rb"(0|[1-9][0-9]*)"


def _string_value(literal: bytes) -> str:
    """A string hole's literal, as matched by ``_STRING_GROUP``: it opens and closes with a quote no
    escape takes and holds none between, nor a control character. Without a backslash it holds no escape
    either, so its value is its bytes between the quotes as UTF-8, decoded strictly (bytes that are not
    UTF-8 raise ``UnicodeDecodeError``, a ``ValueError``, where jiter refuses them too); with one, jiter
    reads its escapes, or refuses them (``ValueError``). No string cache, as in EventShape.match.

    Called directly, not through ``functools.partial``: a partial with a keyword merges it into a new
    dict on every call, which cost as much as reading a short literal (about 0.3 µs of 0.45)."""
    if 92 in literal:  # a backslash (an int test: a one-byte search in C)
        value: str = _from_json(literal, cache_mode="none")
        return value
    return literal[1:-1].decode()


def _reader_of(layout: _Layout) -> _Reader:
    """What :meth:`EventShape.match` does for ``layout``, with one compiled pattern: its fixed bytes
    exactly and a group for each hole holding one literal of the hole's kind (the JSON grammar ends a
    string at its first quote no escape takes, so the groups split an event as
    :meth:`EventShape._holes` does), then each literal read (a string strictly, by _string_value) — the same
    events match, with the same values. Made once per layout in the process."""
    reader = _readers.get(layout)
    if reader is not None:
        return reader
    head, kinds, middles, tail, order = layout
    pattern = [re.escape(head)]
    for kind, after in zip(kinds, (*middles, tail), strict=True):
        pattern += (_STRING_GROUP if kind is str else _DIGITS_GROUP, re.escape(after))
    reader = _reading(re.compile(b"".join(pattern), re.DOTALL).fullmatch, kinds, order)
    if len(_readers) >= _READERS_KEPT:
        with contextlib.suppress(StopIteration, KeyError, RuntimeError):  # another thread changed it first
            del _readers[next(iter(_readers))]
    _readers[layout] = reader
    return reader


def _reading(
    fullmatch: Callable[[bytes], re.Match[bytes] | None], kinds: tuple[type, ...], order: tuple[int, ...]
) -> _Reader:
    """The reading of a compiled layout whose holes, in byte order, have ``kinds`` and go to the
    caller's places ``order``: one call per event, the literals taken in the caller's order
    (``Match.group`` of several numbers) and each read by its kind. Two and three holes (every
    built-in layout of several) have their own unrolled reading."""
    groups = sorted(range(1, len(kinds) + 1), key=lambda group: order[group - 1])
    reads: list[Callable[[bytes], Any]] = [_string_value if kinds[group - 1] is str else int for group in groups]
    if len(groups) == 2:
        read_0, read_1 = reads

        def read_two(data: bytes) -> list[Any] | None:
            found = fullmatch(data)
            if found is None:
                return None
            first, second = found.group(*groups)
            try:
                return [read_0(first), read_1(second)]
            except ValueError:
                return None

        return read_two
    if len(groups) == 3:
        read_0, read_1, read_2 = reads

        def read_three(data: bytes) -> list[Any] | None:
            found = fullmatch(data)
            if found is None:
                return None
            first, second, third = found.group(*groups)
            try:
                return [read_0(first), read_1(second), read_2(third)]
            except ValueError:
                return None

        return read_three

    def read_any(data: bytes) -> list[Any] | None:
        found = fullmatch(data)
        if found is None:
            return None
        literals = found.groups()
        try:
            return [read(literals[group - 1]) for read, group in zip(reads, groups, strict=True)]
        except ValueError:
            return None

    return read_any


def _known_layout(data: bytes, value: Any, holes: tuple[HolePath, ...]) -> EventShape | None:
    """A shape of ``data`` with a layout verified earlier in this process for the same ``holes``, when
    ``data`` has that layout: the same bytes outside the holes and, in each hole, one literal of the
    hole's kind (:meth:`EventShape.match`, which reads each as strictly as for any later event). The
    verification :meth:`EventShape.learn` would do proves the same of these bytes (it depends only on
    the bytes outside the holes and the kinds), so the shape is the one learning would find, the
    caller's ``value`` holding at the holes what the holes hold. None: no layout
    fits, or the value disagrees (then learning refuses it too)."""
    for head, kinds, middles, tail, order in _layouts.get(holes, ()):
        if not (data.startswith(head) and data.endswith(tail)) or len(data) < len(head) + len(tail):
            continue
        shape = EventShape(head, kinds, middles, tail, order=order)
        pieces = shape.match(data)
        if pieces is None:
            continue
        shape.hits = 0  # reading the learned event is not a hit
        # The caller's value is its parse of data: in the holes, where events differ, that is checked.
        if all(_at(value, path) == piece for path, piece in zip(holes, pieces, strict=True)):
            return shape
        return None
    return None


def _remember_layout(holes: tuple[HolePath, ...], layout: _Layout) -> None:
    """Keep ``layout``, verified, first among those of ``holes`` (see :data:`LAYOUTS_KEPT`)."""
    kept = _layouts.get(holes, ())
    if layout in kept:
        return
    if holes not in _layouts and len(_layouts) >= _HOLE_SETS_KEPT:
        with contextlib.suppress(StopIteration, KeyError, RuntimeError):  # another thread changed it first
            del _layouts[next(iter(_layouts))]
    _layouts[holes] = (layout, *kept[: LAYOUTS_KEPT - 1])


def _read(literal: bytes, is_string: bool) -> Any:
    """The value of one hole's bytes: a complete JSON string, or a plain non-negative integer; None
    when they are neither (another layout: the full path decides)."""
    if is_string:
        # The literal alone: JSON whitespace around it is another layout (and may hold a line break).
        if len(literal) < 2 or literal[0] != 0x22 or literal[-1] != 0x22:
            return None
        try:
            piece = _from_json(literal, cache_mode="none")
        except ValueError:
            return None
        return piece if piece.__class__ is str else None  # a number, a literal or an object: no
    if literal.isdigit() and (literal[0] != 0x30 or len(literal) == 1):
        return int(literal)
    return None


def changed(previous: Any, value: Any, paths: Sequence[HolePath]) -> list[HolePath]:
    """The paths among ``paths`` whose member in ``value`` differs from the one in ``previous`` (the
    value of the event learned before): a member a vendor repeats stays fixed bytes, one it changes
    (a random padding, a running token count) becomes a hole when the shape is learned again."""
    if previous is None:
        return []
    return [path for path in paths if _at(previous, path) != _at(value, path)]


def _at(value: Any, path: HolePath) -> Any:
    for step in path:
        if isinstance(step, int):
            if value.__class__ is not list or not 0 <= step < len(value):
                return _NOT_FOUND
        elif value.__class__ is not dict or step not in value:
            return _NOT_FOUND
        value = value[step]
    return value


#: What a parse holds that never changes: shared by a copy, not copied.
_SCALARS: Final = frozenset({str, int, float, bool, type(None)})


def _copied(value: Any) -> Any:
    """A copy of a parsed event that :func:`_set` may change: its dicts and lists new, its scalars
    shared (a tenth of ``copy.deepcopy``'s cost, once per call's learn); anything else deep-copied."""
    cls = value.__class__
    if cls is dict:
        return {key: _copied(member) for key, member in value.items()}
    if cls is list:
        return [_copied(member) for member in value]
    return value if cls in _SCALARS else copy.deepcopy(value)


def _set(value: Any, path: HolePath, new: Any) -> None:
    for step in path[:-1]:
        value = value[step]
    value[path[-1]] = new


def _locate(data: bytes, value: Any, path: HolePath) -> tuple[int, int, type] | None:
    """The span of the literal of the member at ``path`` in ``data``, found by its name: the one
    occurrence of ``"name":`` whose literal parses to the member's value."""
    if not path or not isinstance(path[-1], str):
        return None
    member = _at(value, path)
    if member.__class__ is str:
        literal, kind = _STRING, str
    elif member.__class__ is int and member >= 0:
        literal, kind = _DIGITS, int
    else:
        return None
    name = json.dumps(path[-1], ensure_ascii=False).encode("utf-8")
    found: tuple[int, int, type] | None = None
    for at in re.finditer(re.escape(name) + rb"[ \t\r\n]*:[ \t\r\n]*", data):
        span = literal.match(data, at.end())
        if span is None:
            continue
        try:
            same = _from_json(span.group()) == member
        except ValueError:
            continue
        if same:
            if found is not None:
                return None  # two members of that name hold the value: which one is the hole is unclear
            found = (span.start(), span.end(), kind)
    return found


class Matcher(Protocol):
    """What a :class:`Shortcut` reads a frame's data with: an :class:`EventShape`, or a decoder's own
    reading of a wrapped one (Claude on Bedrock's base64 chunks) — ``match`` gives the holes' values, the
    piece first, or None."""

    def match(self, data: bytes, /) -> list[Any] | None: ...


class Shortcut:
    """A decoder's word to the kit, for as long as it holds one (its ``shortcut`` attribute): a frame of
    event ``event`` whose data has ``shape`` is applied by ``sink(*args, piece)``, ``piece`` being the
    shape's first hole, and by nothing else — exactly what its ``on_event`` does with such a frame.

    With one event per network read (real traffic), the kit then applies a read that holds only such
    a frame straight away: no framing, no frame object, no ``on_event``
    (:meth:`normalize.wire.SSEDecoder.lone` says when a read is one). At 1,000 streams that saves
    about 4% of a stream's CPU (1.1 µs an event of 29.8, measured interleaved). A decoder whose
    shape path depends on more than the event's bytes and name (on its own state, on a padding it
    strips first) keeps no shortcut; one that does keeps it in step with its shape: set when it
    learns one, None when it drops it.

    ``whole=True``: ``sink`` is given every hole's value, the list :meth:`EventShape.match` returns (in
    the order the holes were learned), instead of the first alone — for a decoder whose event carries
    more than its piece (a running token count beside the text).

    ``in_run``: what the decoder's ``on_event`` does with such a frame when it is one of a read of
    several (:meth:`ShortcutReads.run`), given what ``take`` is given; the read's batch ends once after
    its last event (``on_batch_end``), so it may leave to that what only the read's last event decides
    (a running usage), where ``sink`` may apply it at once, its read being its batch. Given one, the
    kit reads such runs for a shape of several holes too (a shape of one string hole has them anyway,
    through ``take``): where the decoder reads the same shape in ``on_event``, a run saves the framing
    and the frame (Gemini's text at 40k chunks: 1.88× bare → 2.12×). Without one, a shape of several
    holes is not read in runs: for a decoder that reads such an event whole in ``on_event`` the pattern
    cost more than it saved (Responses' text 2.32× → 1.88×).
    """

    __slots__ = ("args", "event", "in_run", "run_take", "shape", "sink", "take", "whole")

    def __init__(
        self,
        event: str,
        shape: Matcher,
        sink: Callable[..., None],
        *args: object,
        whole: bool = False,
        in_run: Callable[[Any], None] | None = None,
    ) -> None:
        self.event = event
        self.shape = shape
        self.sink = sink
        self.args = args
        #: Whether ``take`` is given all the holes (see the class), not only the piece.
        self.whole = whole
        #: ``sink`` with ``args`` given: ``take(piece)`` is ``sink(*args, piece)`` (``piece``: the list of
        #: every hole's value when ``whole``).
        self.take: Callable[[Any], None] = functools.partial(sink, *args) if args else sink
        #: The decoder's own sink for an event of a run (see the class), or None.
        self.in_run = in_run
        #: What the kit calls for each event of a run: ``in_run``, else ``take``.
        self.run_take: Callable[[Any], None] = in_run if in_run is not None else self.take

    @classmethod
    def of(
        cls,
        event: str,
        shape: Matcher | None,
        sink: Callable[..., None],
        *args: object,
        whole: bool = False,
        in_run: Callable[[Any], None] | None = None,
    ) -> Shortcut | None:
        """The shortcut of ``shape`` (None for no shape)."""
        return None if shape is None else cls(event, shape, sink, *args, whole=whole, in_run=in_run)


class _LoneFramer(Protocol):
    """A framer that gives lone frames to a shortcut (see :class:`ShortcutReads`)."""

    def lone(self, chunk: bytes, event: str, /) -> bytes | None: ...


class _PartedFramer(Protocol):
    def lone_parts(self, chunk: bytes, data: bytes, /) -> tuple[bytes, bytes]: ...


class _RunFramer(Protocol):
    def run_parts(self, chunk: bytes, event: str, /) -> tuple[bytes, bytes] | None: ...

    def at_boundary(self) -> bool: ...


class ShortcutReads:
    """Which reads of one body a decoder's :class:`Shortcut` takes, and the piece each holds: a read
    that is exactly one frame of the shortcut's event (the framer's ``lone``) whose data has its shape.

    Once one read was taken so, and the framer's ``lone_parts`` says what lay around the data, the
    shape with those bytes around it (:meth:`EventShape.framed`) reads the next such read whole, in
    one step where ``lone`` and the shape's match took two — as long as the framer was fed nothing
    since (:meth:`fed`: then it may hold part of a frame, and only ``lone`` can tell). At one event per
    read that is about a tenth of the kit's own work on an event. A framer without ``lone`` (the AWS
    event stream) has none (:meth:`of`). The size limit kept is the framer's ``max_event_bytes`` (SSE)
    or ``max_frame_bytes`` (JSON lines).

    A read of several events (a body read in bulk, or a loop that fell behind) is cut into its events
    where the framer says how (:meth:`run`: an SSE framer's ``run_parts``), and those in a row of the
    shortcut's event and shape are read the same way (for the shapes :meth:`run_end` names).
    """

    __slots__ = (
        "_framed",
        "_framed_for",
        "_framer",
        "_max",
        "_parted",
        "_rest",
        "_run_parts_of",
        "_runner",
        "_runs",
    )

    def __init__(self, framer: _LoneFramer) -> None:
        # The framer itself, its methods looked up when called: four bound methods held for a stream's
        # life would be four more objects for the collector to walk, a thousand streams at a time (the
        # steady state's read asks none of them: see pieces).
        self._framer = framer
        #: The framer, when it says what lay around a lone frame's data (its ``lone_parts``).
        self._parted = cast("_PartedFramer", framer) if callable(getattr(framer, "lone_parts", None)) else None
        max_bytes = getattr(framer, "max_event_bytes", getattr(framer, "max_frame_bytes", None))
        # Without a size limit to keep, or without lone_parts, every read goes through lone.
        self._max: int = max_bytes if isinstance(max_bytes, int) and self._parted is not None else -1
        self._framed: EventShape | None = None
        self._framed_for: Shortcut | None = None
        # Whether lone took the last read the framer saw (it is at an event boundary: see lone_parts).
        self._rest = False
        # Reads of several events (see run): the framer, when it has run_parts and at_boundary (an SSE
        # framer), and the shortcut, the lead and event end it was read with, and its shape with that
        # lead before it.
        runs = callable(getattr(framer, "run_parts", None)) and callable(getattr(framer, "at_boundary", None))
        self._runner = cast("_RunFramer", framer) if runs and self._max >= 0 else None
        self._runs: tuple[Shortcut, bytes, bytes, EventShape] | None = None
        # The last read and event name run_parts was asked about, and its answer: the walk of one read
        # asks at every step, and the answer scans the whole read (once per read and name, not per step).
        self._run_parts_of: tuple[bytes, str, tuple[bytes, bytes] | None] | None = None

    @classmethod
    def of(cls, framer: object) -> ShortcutReads | None:
        """The reads of a body ``framer`` frames; None for a framer without ``lone`` (the AWS event
        stream), which gives no read to a shortcut."""
        return cls(cast("_LoneFramer", framer)) if callable(getattr(framer, "lone", None)) else None

    def pieces(self, chunk: bytes, shortcut: Shortcut) -> list[Any] | None:
        """The holes of ``chunk`` when it is one frame ``shortcut`` reads (the piece first); None: the
        read is to be fed to the framer, and :meth:`fed` called."""
        framed = self._framed
        if (
            framed is not None
            and self._rest
            and self._framed_for is shortcut
            and chunk.__class__ is bytes  # as lone: a bytearray or a view is fed
            and len(chunk) <= self._max
        ):
            pieces = framed.match(chunk)
            if pieces is not None:
                return pieces
        data = self._framer.lone(chunk, shortcut.event)
        if data is None:
            return None
        pieces = shortcut.shape.match(data)
        if pieces is None:
            return None
        self._rest = True
        parted = self._parted
        if self._framed_for is not shortcut and parted is not None:
            # A third party's shape may be any object with match(): one without framed() is read as before.
            framed = getattr(shortcut.shape, "framed", None)
            self._framed = framed(*parted.lone_parts(chunk, data)) if framed is not None else None
            self._framed_for = shortcut
            runs = self._runs
            if runs is not None and runs[0] is not shortcut:
                # A shortcut the decoder replaced: its run shape would keep it alive (with its shapes
                # and its sinks' bound methods) for the rest of the stream, read by nothing.
                self._runs = None
        return pieces

    def fed(self) -> None:
        """The framer was fed a read: it may now hold part of a frame."""
        self._rest = False

    def run_end(self, chunk: bytes, shortcut: Shortcut) -> bytes | None:
        """The bytes that end an event of ``shortcut`` in ``chunk``, a read of several (see :meth:`run`);
        None when the framer gives such reads no run (no ``run_parts``, as the JSON lines and AWS event
        stream framers; or a name no event line can give), or when the shortcut's shape is not an
        :class:`EventShape` of one string hole and the shortcut has no ``in_run`` (see below)."""
        # A shape of one string hole (Anthropic's text 1.34× a fed read, Cohere's 1.26×), or a shortcut
        # whose decoder asked for runs (Shortcut.in_run): reading events of several holes one by one
        # with their compiled pattern cost more than framing the read and letting a decoder that reads
        # them whole parse them (Responses' text 0.94× a fed read).
        if self._runner is None or (
            shortcut.in_run is None and getattr(shortcut.shape, "one_string", False) is not True
        ):
            return None
        parts = self._parts_of_run(chunk, shortcut.event)
        if parts is None:
            self._run_parts_of = None  # no walk follows to end it: the read is not kept
            return None
        return parts[1]

    def _parts_of_run(self, chunk: bytes, event: str) -> tuple[bytes, bytes] | None:
        """The framer's ``run_parts(chunk, event)``, asked once per read and event name."""
        known = self._run_parts_of
        if known is not None and known[0] is chunk and known[1] == event:
            return known[2]
        runner = self._runner
        parts = runner.run_parts(chunk, event) if runner is not None else None
        self._run_parts_of = (chunk, event, parts)
        return parts

    def read_over(self) -> None:
        """The read :meth:`run_end` and :meth:`run` were asked about is over: it is not kept."""
        self._run_parts_of = None

    def run(self, chunk: bytes, shortcut: Shortcut, start: int) -> tuple[list[Any], int]:
        """The events of ``chunk`` from ``start`` that ``shortcut`` reads, in a row: the holes of each
        (as :meth:`pieces` gives them), and where the rest of the chunk begins (the first event it does
        not read, or the part of one at the chunk's end) — to be fed. None read when the framer is not
        at an event boundary. The framer is not fed here: the caller feeds the rest, and calls
        :meth:`fed`.

        What makes it exact is the framer's promise (:meth:`normalize.wire.SSEDecoder.run_parts`): at
        a boundary, an event end cuts the chunk into events, and an event of the shortcut's lead and
        shape (which holds no line break: see :meth:`EventShape.framed`) is one event of its name with
        that data, which feeding would dispatch; each is no longer than the framer's size limit."""
        runner = self._runner
        if runner is None or not runner.at_boundary():
            return [], start
        parts = self._parts_of_run(chunk, shortcut.event)
        if parts is None:
            return [], start
        lead, end = parts
        known = self._runs
        if known is not None and known[0] is shortcut and known[1] == lead and known[2] == end:
            runs = known[3]
        else:
            framed = getattr(shortcut.shape, "framed", None)
            if framed is None:
                return [], start
            runs = framed(lead, b"")
            self._runs = (shortcut, lead, end, runs)
        match = runs.match
        find = chunk.find
        limit = self._max - len(end)
        step = len(end)
        found: list[Any] = []
        at = start
        # Event by event (each found once: the walk is linear in the read), up to the first the shape
        # does not read, or what follows the last event end (part of an event, or nothing).
        while (cut := find(end, at)) >= 0:
            if cut - at > limit:
                break
            pieces = match(chunk[at:cut])
            if pieces is None:
                break
            found.append(pieces)
            at = cut + step
        return found, at
