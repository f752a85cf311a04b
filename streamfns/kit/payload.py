"""Reading vendor JSON: one parse per event, and typed accessors instead of ``isinstance`` + ``cast``.

Vendor payloads are untrusted: a field may be missing, ``null``, or of another type than documented.
The accessors return a value of the expected type or an empty/``None`` one, so decoders read
``obj(data.get("delta")).get("text")`` without a guard per level.

These run once or more per streamed token, so they are written for speed: no ``typing.cast`` (a
function call at run time) and no call from one helper into another on the common path.
"""

from __future__ import annotations

from typing import Any

import jiter

from normalize import repair_json
from streamfns.kit.failure import StreamFailure

__all__ = ["array", "int_or_none", "load_event", "load_json", "obj", "str_or_none", "text"]

_EXCERPT = 200
_from_json = jiter.from_json  # bound once: looked up per event otherwise


def _repaired(data: bytes, vendor: str) -> Any:
    try:
        return jiter.from_json(repair_json(data.decode("utf-8", "replace")).encode("utf-8", "surrogatepass"))
    except ValueError as exc:
        raise StreamFailure.protocol(f"{vendor} sent malformed JSON in an event: {exc}: {data[:_EXCERPT]!r}") from None


def load_json(data: bytes, vendor: str) -> Any:
    """Parse one event's JSON value, whatever its type (an api that skips ``null`` or non-object
    events decides that itself; :func:`load_event` is the usual entry point).

    Raw control characters and stray backslashes inside strings, which some compatible servers
    emit, are repaired (deterministically, in one linear pass); anything else that is not JSON
    raises :class:`StreamFailure` of kind ``protocol`` quoting the start of the data.
    """
    try:
        return jiter.from_json(data)
    except ValueError:
        return _repaired(data, vendor)


def load_event(data: bytes, vendor: str) -> dict[str, Any]:
    """Parse one event's JSON object (as :func:`load_json`; a value that is not an object raises
    :class:`StreamFailure` of kind ``protocol``)."""
    value: Any
    try:
        value = _from_json(data)
    except ValueError:
        value = _repaired(data, vendor)
    if value.__class__ is not dict:
        raise StreamFailure.protocol(f"{vendor} sent a non-object event: {data[:_EXCERPT]!r}")
    return value


def obj(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty dict (a fresh one: safe to ignore)."""
    return value if value.__class__ is dict else {}


def array(value: Any) -> list[Any]:
    """``value`` when it is a JSON array, else an empty list."""
    return value if value.__class__ is list else []


def int_or_none(value: object) -> int | None:
    """``value`` when it is an integer (``bool`` is not), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def str_or_none(value: object) -> str | None:
    """``value`` when it is a string, else None."""
    return value if isinstance(value, str) else None


def text(value: object) -> str:
    """``value`` when it is a string, else ``""``."""
    return value if isinstance(value, str) else ""
