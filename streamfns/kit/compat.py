"""Typed per-model quirk flags: ``Model.compat`` read once into an adapter's own frozen dataclass.

An adapter declares its flags as a frozen dataclass with defaults; :func:`parse_compat` validates a
model's ``compat`` mapping against it. A key the dataclass does not name, or a value of the wrong
type, is a configuration mistake and raises :class:`CompatError` (the kit turns it into a ``config``
error before anything is sent) — a mistyped flag must not be silently ignored.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar, cast

__all__ = ["CompatError", "parse_compat"]

T = TypeVar("T")


class CompatError(ValueError):
    """``Model.compat`` names an unknown flag or gives one a value of the wrong type."""


def _accepts(annotation: Any, value: object) -> bool:
    """Whether ``value`` fits ``annotation`` (plain types, ``X | None``, ``Literal``, tuples, dicts)."""
    if annotation is Any:
        return True
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return value in typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_accepts(arg, value) for arg in typing.get_args(annotation))
    if origin is tuple:
        args = typing.get_args(annotation)
        return isinstance(value, list | tuple) and all(
            _accepts(args[0], item)
            for item in cast("list[Any]", value)  # pyright: ignore[reportUnknownArgumentType]
        )
    if origin is dict:
        return isinstance(value, dict)
    if annotation is type(None):
        return value is None
    if annotation is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, annotation)


def parse_compat(cls: type[T], raw: Mapping[str, Any] | None, *, defaults: T | None = None) -> T:
    """Build ``cls`` (a frozen dataclass) from ``raw``, on top of ``defaults`` (else the class defaults).

    Lists become tuples for tuple-typed fields. Raises :class:`CompatError` naming every unknown key
    (and the known ones) or the first value of the wrong type.
    """
    if raw is not None and not isinstance(raw, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise CompatError(f"Model.compat must be a mapping, not {type(raw).__name__}")
    fields = {field.name: field for field in dataclasses.fields(cast("Any", cls))}
    hints = typing.get_type_hints(cls)
    values = dict(raw or {})
    unknown = sorted(str(key) for key in values if key not in fields)
    if unknown:
        raise CompatError(
            f"unknown Model.compat key{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} "
            f"for {cls.__name__} (known: {', '.join(sorted(fields))})"
        )
    for key, value in values.items():
        annotation = hints[key]
        if not _accepts(annotation, value):
            raise CompatError(f"Model.compat[{key!r}] must be {_describe(annotation)}, got {value!r}")
        if typing.get_origin(annotation) is tuple or (
            typing.get_origin(annotation) in (typing.Union, types.UnionType) and isinstance(value, list)
        ):
            values[key] = tuple(cast("list[Any]", value))
    base = defaults if defaults is not None else cls()
    return cast("T", dataclasses.replace(cast("Any", base), **values))


def _describe(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(arg) for arg in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(arg) for arg in typing.get_args(annotation))
    return getattr(annotation, "__name__", str(annotation))
