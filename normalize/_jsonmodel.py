"""Shared JSON plumbing for the normalized data classes.

The data classes are stdlib ``dataclass(slots=True)`` types: attribute access and mutation are plain slot
operations, which keeps the builder's hot path cheap. pydantic validates and serializes them at the
boundaries (loading a transcript, dumping an event) through cached ``TypeAdapter``s, using pi-ai's
camelCase names on the wire.
"""

from __future__ import annotations

import functools
from typing import Any, Self, cast

from pydantic import ConfigDict, TypeAdapter
from pydantic.alias_generators import to_camel

__all__ = ["CAMEL", "JsonModel"]

CAMEL = ConfigDict(alias_generator=to_camel, populate_by_name=True, arbitrary_types_allowed=False)

# Fields that pi omits when they hold their falsy default; dropping them keeps round trips exact.
_OMIT_WHEN_FALSE = frozenset({"redacted"})


@functools.cache
def _adapter(cls: type[Any]) -> TypeAdapter[Any]:
    return TypeAdapter(cls)


def _strip_defaults(value: Any) -> Any:
    if isinstance(value, dict):
        items = cast("dict[str, Any]", value)
        return {
            key: _strip_defaults(item) for key, item in items.items() if not (key in _OMIT_WHEN_FALSE and item is False)
        }
    if isinstance(value, list):
        return [_strip_defaults(item) for item in cast("list[Any]", value)]
    return value


class JsonModel:
    """Mixin giving a data class ``from_json`` / ``to_json`` in pi's camelCase JSON form.

    ``to_json`` returns a JSON-ready ``dict`` (``None`` fields omitted, as pi omits optional fields);
    ``from_json`` accepts such a dict, or JSON text/bytes, and validates it. Unknown fields are ignored.
    """

    __slots__ = ()
    __pydantic_config__ = CAMEL

    @classmethod
    def from_json(cls, data: Any) -> Self:
        """Validate pi-shaped JSON (a mapping, or JSON ``str``/``bytes``) into this class."""
        adapter = _adapter(cls)
        if isinstance(data, str | bytes | bytearray):
            return cast("Self", adapter.validate_json(data))
        return cast("Self", adapter.validate_python(data))

    def to_json(self) -> dict[str, Any]:
        """Dump to pi-shaped camelCase JSON (a dict of JSON-compatible values)."""
        dumped = _adapter(type(self)).dump_python(self, mode="json", by_alias=True, exclude_none=True)
        return cast("dict[str, Any]", _strip_defaults(dumped))
