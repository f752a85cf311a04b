"""Shared JSON plumbing for the normalized data classes.

The data classes are stdlib ``dataclass(slots=True)`` types: attribute access and mutation are plain slot
operations, which keeps the builder's hot path cheap. pydantic validates and serializes them at the
boundaries (loading a transcript, dumping an event) through cached ``TypeAdapter``s, using pi-ai's
camelCase names on the wire. pydantic is imported on first use, not when ``normalize`` is imported,
which keeps ``import streamfns`` fast.
"""

from __future__ import annotations

import functools
import typing
from typing import TYPE_CHECKING, Any, Self, cast

if TYPE_CHECKING:
    from pydantic import TypeAdapter
    from pydantic_core import CoreSchema

__all__ = ["CAMEL", "JsonModel", "Tagged", "to_camel"]


def to_camel(name: str) -> str:
    """``cache_write_1h`` → ``cacheWrite1h``: pi's JSON field names from our attribute names."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


#: The pydantic config every data class shares (a plain dict: ``ConfigDict`` is a TypedDict).
CAMEL: dict[str, Any] = {"alias_generator": to_camel, "populate_by_name": True}

# Fields that pi omits when they hold their falsy default; dropping them keeps round trips exact.
_OMIT_WHEN_FALSE = frozenset({"redacted"})


class Tagged:
    """``Annotated`` marker: validate a union of data classes by the value of one field.

    ``Annotated[A | B, Tagged("type")]`` picks the member whose ``type`` default equals the input's
    ``type`` — a discriminated union, with a clear error for an unknown tag — without importing
    pydantic until a schema is actually built.
    """

    __slots__ = ("field",)

    def __init__(self, field: str) -> None:
        self.field = field

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> CoreSchema:
        from pydantic_core import core_schema  # noqa: PLC0415 - lazy on purpose

        choices: dict[Any, CoreSchema] = {}
        for member in typing.get_args(source):
            tag = member.__dataclass_fields__[self.field].default
            choices[tag] = handler.generate_schema(member)
        return core_schema.tagged_union_schema(choices, discriminator=self.field)


@functools.cache
def _adapter(cls: type[Any]) -> TypeAdapter[Any]:
    from pydantic import TypeAdapter  # noqa: PLC0415 - lazy on purpose

    return TypeAdapter(cls)


def adapter_for(tp: Any) -> TypeAdapter[Any]:
    """A cached pydantic ``TypeAdapter`` for ``tp`` (imports pydantic on first use)."""
    return _adapter(tp)


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
