"""Text that grows by appends, read as one string: the builder's text and thinking blocks while they stream.

A reply streams as hundreds or thousands of deltas. Keeping the block's string current by appending each
one copies the whole text whenever the allocator cannot grow it where it lies — with many streams in
one process, nearly always — so a reply costs time quadratic in its length: at one event per read,
1.5 µs an event for a 4 KB reply at 1,000 streams (a sixth of a stream's CPU), 12 µs a delta at 300 KB.

So while a block streams, it is an instance of a *growing* subclass of its class (:func:`growing`),
whose one text field holds the list of its pieces instead of a string; reading the field joins the
pieces once (keeping the result as the list's only piece) and gives a ``str``, so every reader sees
exactly the string the eager append would have built: ``block.text``, ``to_json()``, equality with a
block of the base class (either way round), ``dataclasses.asdict``; a ``copy`` or a ``pickle`` of it is
a snapshot, an instance of the base class holding the text so far. Writing it
replaces the pieces in place (the builder goes on appending to the same list). When the block ends,
:func:`settle` joins it and turns it back into an instance of the base class.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any, TypeVar, cast

__all__ = ["growing", "settle", "start_growing"]

BlockT = TypeVar("BlockT")

#: Held by whoever joins or replaces a growing block's pieces (a reader may be on another thread than
#: the builder, which only appends, and takes no lock).
_JOINING = threading.Lock()

#: Each growing class: its base class and the name of its growing field.
_GROWING: dict[type, tuple[type, str]] = {}


def growing(base: type[BlockT], name: str) -> type[BlockT]:
    """The growing subclass of ``base`` (a slots dataclass) for its string field ``name`` (see the module
    docstring). It adds no slot, so an instance may change class to and from ``base``."""
    slot: Any = base.__dict__[name]  # the slot's member descriptor
    fields = tuple(field.name for field in dataclasses.fields(base))  # pyright: ignore[reportArgumentType]

    def read(self: Any) -> str:
        value = slot.__get__(self, base)
        if value.__class__ is not list:
            return value
        if len(value) == 1:
            return value[0]
        with _JOINING:
            # Readers join one at a time; the builder only ever appends, so the pieces past the n
            # joined here (a delta appended meanwhile, on another thread) stay where they are.
            count = len(value)
            if count == 1:
                return value[0]  # another reader joined them meanwhile
            # The text so far held by this frame alone while the new pieces go onto it, so CPython may
            # grow it where it lies (a reader of every event, with one stream, copies little).
            text = value[0]
            value[0] = ""
            rest = "".join(value[1:count])
            text += rest
            value[:count] = [text]
            return text

    def write(self: Any, value: str) -> None:
        try:
            current: Any = slot.__get__(self, base)
        except AttributeError:  # not set yet: __init__, or a copy being filled in
            current = None
        if current.__class__ is list:
            with _JOINING:
                current[:] = [value]  # in place: the builder keeps appending to this list
        else:
            slot.__set__(self, value)

    def equal(self: Any, other: object) -> bool:
        # The base class's own __eq__ compares classes: a growing block equals a block of the base class
        # holding the same values, either way round (Python tries this one when the base's declines).
        if not isinstance(other, base):
            return NotImplemented
        return all(getattr(self, field) == getattr(other, field) for field in fields)

    def reduce(self: Any, protocol: Any) -> Any:
        # A copy or a pickle is a snapshot: an instance of the base class holding the text so far
        # (pickle finds a class by its name, which names the base).
        return _snapshot, (base, tuple((field, getattr(self, field)) for field in fields))

    namespace: dict[str, Any] = {
        "__slots__": (),
        name: property(read, write),
        "__eq__": equal,
        "__reduce_ex__": reduce,
        "__hash__": None,
        "__module__": base.__module__,
        "__qualname__": base.__qualname__,  # its repr reads as the base class's
        "__doc__": f"A {base.__name__} whose {name} is still streaming (see normalize._growing).",
    }
    cls: type[Any] = type(base.__name__, (base,), namespace)
    _GROWING[cls] = (base, name)
    return cls


def _snapshot(base: type[Any], values: tuple[tuple[str, Any], ...]) -> Any:
    """An instance of ``base`` holding ``values`` (a growing block's copy or pickle)."""
    plain: Any = object.__new__(base)
    for field, value in values:
        setattr(plain, field, value)
    return plain


def start_growing(block: Any, growing_class: type[Any], initial: str) -> list[str]:
    """Turn ``block`` (an instance of ``growing_class``'s base class) into a growing block holding
    ``initial``; returns the list its pieces go to (the builder appends each delta to it)."""
    base, name = _GROWING[growing_class]
    pieces = [initial]
    block.__class__ = growing_class
    base.__dict__[name].__set__(block, pieces)
    return pieces


def settle(block: Any) -> None:
    """Join a growing ``block`` and turn it back into an instance of its base class (a block that is not
    growing is left as it is)."""
    known = _GROWING.get(cast("type[Any]", type(block)))
    if known is None:
        return
    base, name = known
    text = getattr(block, name)
    block.__class__ = base
    setattr(block, name, text)
