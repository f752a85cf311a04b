"""Reading what an adapter hands back — in the worker thread — into objects the harness built itself.

The consumer reads each event the moment it arrives, in the watched worker thread (see
:mod:`conformance.watchdog`), where any code of the adapter's that runs is under the watchdog: it
asks for the event's pi JSON (``event_to_json``), keeps it only when it is made of exact built-in
types, and builds a fresh event from that JSON. Checks, excerpts, snapshots and the caller's thread
only ever see these copies and plain data: no object of the adapter's — no ``str`` or ``int``
subclass, no property, no ``__eq__`` of its own — leaves the worker. ``result()`` is read the same way.

The copy keeps each value as the adapter sent it, so long as it is of the right family — a number
where a number belongs, a string where a string (or one of a set of names) belongs, None where the
field is optional — so that ``normalize.validate_events`` still says which rule an odd value breaks
(an unknown error kind is a G5 violation, a fractional token count a G7 one). Anything else — an
object where a number belongs, a content block of an unknown type, an event whose ``type`` field
names another event — makes the event :class:`Unreadable`, a G3 violation.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from dataclasses import dataclass
from typing import Any, cast

from conformance.text import class_name, describe_exception, kind_of
from normalize import AssistantMessage, DoneEvent, ErrorInfo, event_to_json
from normalize.content import TextContent, ThinkingContent, ToolCall
from normalize.events import TERMINAL_EVENT_TYPES, AssistantMessageEvent
from normalize.usage import Usage

__all__ = ["EVENT_TYPES", "TERMINAL_TYPES", "Read", "Unreadable", "event_from_data", "read_event", "read_result"]

#: The twelve event classes; an event must be exactly one of them (a subclass could run code).
EVENT_TYPES: tuple[type, ...] = typing.get_args(AssistantMessageEvent)
TERMINAL_TYPES: tuple[type, ...] = TERMINAL_EVENT_TYPES
_BLOCK_TYPES: tuple[type, ...] = (TextContent, ThinkingContent, ToolCall)
_SCALARS = (str, int, float, bool, type(None))
_STUB: dict[str, Any] = {"type": "<unreadable>"}


@dataclass(frozen=True, slots=True)
class Unreadable:
    """Stands in for something the adapter yielded that is not a plain event: ``description`` says what."""

    description: str


@dataclass(frozen=True, slots=True)
class Read:
    """One event as the harness keeps it: a harness-built ``event`` (or an :class:`Unreadable`), its
    pi JSON (``{"type": "<unreadable>"}`` for a placeholder) and its ``size`` — the characters of
    text in that JSON, plus one per value — for the harness's cap on what one stream may produce."""

    event: Any
    data: dict[str, Any]
    size: int


def _size(value: Any) -> int:
    """The size of ``value`` (see :class:`Read`) when it is JSON made only of exact built-in types,
    else -1. Only ``type()`` is asked of the adapter's values: it never runs their code."""
    kind = kind_of(value)
    if kind is str:
        return len(value) + 1
    if kind in _SCALARS:
        return 1
    total = 1
    if kind is list:
        for item in value:
            size = _size(item)
            if size < 0:
                return -1
            total += size
        return total
    if kind is dict:
        for key, item in value.items():
            size = _size(item)
            if type(key) is not str or size < 0:
                return -1
            total += len(key) + size
        return total
    return -1


def _plain_message(message: Any) -> bool:
    return (
        type(message) is AssistantMessage
        and type(message.content) is list
        and all(type(block) in _BLOCK_TYPES for block in message.content)
        and type(message.usage) is Usage
        and type(message.error_info) in (ErrorInfo, type(None))
    )


# -- lenient copies ------------------------------------------------------------------------------------


class _Malformed(Exception):
    """The JSON does not have the shape of the class it should become."""


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _families(hint: Any) -> frozenset[Any]:
    """What may stand in a field of type ``hint``: ``"number"``, ``"string"``, ``"none"``, ``"any"``,
    ``("list", element families)``, or a data class (an object to copy in turn)."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return frozenset[Any]().union(*(_families(arg) for arg in typing.get_args(hint)))
    if origin is typing.Literal or hint is str:
        return frozenset({"string"})
    if hint in (int, float, bool):
        return frozenset({"number"})
    if hint is type(None):
        return frozenset({"none"})
    if hint is Any or hint is dict or origin is dict:
        return frozenset({"any"})
    if origin is list:
        return frozenset({("list", _families(typing.get_args(hint)[0]))})
    if dataclasses.is_dataclass(hint):
        return frozenset({hint})
    raise TypeError(f"the harness cannot copy a field of type {hint!r}")  # a harness bug, found by its tests


@functools.cache
def _fields(cls: type) -> tuple[tuple[str, str, frozenset[Any]], ...]:
    """(attribute, JSON key, families) of each field ``cls`` is built with."""
    hints = typing.get_type_hints(cls)
    return tuple(
        (item.name, _camel(item.name), _families(hints[item.name])) for item in dataclasses.fields(cls) if item.init
    )


_SPOKEN = {"string": "a string", "number": "a number", "none": "null", "list": "a list", "object": "an object"}


def _family_of(value: Any) -> str:
    kind = kind_of(value)
    if kind is str:
        return "string"
    if kind in (int, float, bool):
        return "number"
    if value is None:
        return "none"
    return "list" if kind is list else "object"


def _tag(cls: type) -> Any:
    return next(item.default for item in dataclasses.fields(cls) if item.name == "type")


def _value(families: frozenset[Any], value: Any, where: str) -> Any:
    if "any" in families:
        return value
    family = _family_of(value)
    if family in families:
        return value
    if family == "object":
        classes = [item for item in families if isinstance(item, type)]
        if len(classes) == 1:
            return _copy(classes[0], value, where)
        for cls in classes:  # a tagged union (content blocks): pick by the "type" field
            if value.get("type") == _tag(cls):
                return _copy(cls, value, where)
        raise _Malformed(f"{where} is an object of type {str(value.get('type'))[:40]!r}")  # pyright: ignore[reportUnknownMemberType]
    if family == "list":
        for item in families:
            if isinstance(item, tuple):
                elements = cast("frozenset[Any]", item[1])
                return [_value(elements, element, f"{where}[{index}]") for index, element in enumerate(value)]
    raise _Malformed(f"{where} holds {_SPOKEN[family]}")


def _copy(cls: type, data: dict[str, Any], where: str, **given: Any) -> Any:
    """A ``cls`` built from ``data`` (see the module docstring); ``given`` fields are not read from it."""
    values: dict[str, Any] = dict(given)
    for name, key, families in _fields(cls):
        if name not in given and key in data:
            values[name] = _value(families, data[key], f"{where}.{key}" if where else key)
    try:
        return cls(**values)
    except TypeError as exc:  # a required field is missing
        raise _Malformed(f"{where or 'it'} cannot be built: {exc}") from None


def read_event(item: Any, partial: AssistantMessage) -> Read:
    """What the adapter yielded, read (see the module docstring); ``partial`` is the harness's own
    message every rebuilt event points to (the checks never read it). Never raises."""
    kind = kind_of(item)
    if kind not in EVENT_TYPES:
        return Read(Unreadable(f"a {class_name(kind)} is not an assistant-message event"), _STUB, 1)
    try:
        data = event_to_json(item)
        size = _size(data)
        ok = size >= 0 and (
            kind not in TERMINAL_TYPES or _plain_message(item.message if kind is DoneEvent else item.error)
        )
        if not ok:
            return Read(Unreadable(f"a {kind.__name__} holds values that are not plain JSON"), _STUB, 1)
        if data.get("type") != _tag(kind):
            return Read(Unreadable(f"a {kind.__name__} whose type field says {str(data.get('type'))[:40]!r}"), _STUB, 1)
        given = {} if kind in TERMINAL_TYPES else {"partial": partial}
        return Read(_copy(kind, data, "", **given), data, size)
    except _Malformed as exc:
        return Read(Unreadable(f"a {kind.__name__} could not be read: {exc}"), _STUB, 1)
    except BaseException as exc:  # reading the adapter's object ran its code
        return Read(Unreadable(f"a {kind.__name__} could not be read: {describe_exception(exc)}"), _STUB, 1)


def read_result(value: Any) -> tuple[dict[str, Any] | None, str | None]:
    """The JSON of the message ``result()`` returned, or None and what is wrong with it. Never raises."""
    if type(value) is not AssistantMessage:
        return None, f"result() returned {class_name(kind_of(value))}, not an AssistantMessage"
    try:
        data = value.to_json()
        plain = _plain_message(value) and _size(data) >= 0
    except BaseException as exc:  # reading the adapter's object ran its code
        return None, f"the message result() returned could not be read: {describe_exception(exc)}"
    if not plain:
        return None, "the message result() returned holds values that are not plain JSON"
    return data, None


#: Each event class by its JSON ``type`` (for events that arrive as JSON: an adapter process's lines).
_BY_TAG: dict[str, type] = {_tag(cls): cls for cls in EVENT_TYPES}


def event_from_data(data: Any, partial: AssistantMessage) -> Any:
    """An event built from pi JSON that came from outside (a line an adapter process wrote), read as
    leniently as :func:`read_event` reads an object: a value of the right family is kept as sent, so
    the grammar rules judge it (an unknown error kind is a G5 violation, not an unreadable line).
    ``partial`` becomes the event's message (a ``partial`` in the JSON is ignored). Raises
    ``ValueError`` saying why when ``data`` is not an event at all: not an object, an unknown or
    missing ``type``, a field of the wrong family, a required field missing."""
    if type(data) is not dict:
        raise ValueError(f"an event is a JSON object, not {_SPOKEN[_family_of(data)]}")
    fields = cast("dict[str, Any]", data)
    tag = fields.get("type")
    cls = _BY_TAG.get(tag) if type(tag) is str else None
    if cls is None:
        raise ValueError(f"no event has the type {str(tag)[:40]!r}" if "type" in fields else "it has no type field")
    if _size(fields) < 0:
        raise ValueError("it holds values that are not JSON")
    given = {} if cls in TERMINAL_TYPES else {"partial": partial}
    body = {key: value for key, value in fields.items() if key != "partial"}
    try:
        return _copy(cls, body, "", **given)
    except _Malformed as exc:
        raise ValueError(f"a {tag} event could not be read: {exc}") from None
