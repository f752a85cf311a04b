"""Typed per-model quirk flags: ``Model.compat`` read once into an adapter's own frozen dataclass.

An adapter declares its flags as a frozen dataclass with defaults; :func:`parse_compat` validates a
model's ``compat`` mapping against it, each value by pydantic in strict mode (no coercion). A key
the dataclass does not name, or a value of the wrong type, is a configuration mistake and raises
:class:`CompatError` (the kit turns it into a ``config`` error before anything is sent) — a mistyped
flag must not be silently ignored.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from pydantic import ConfigDict, TypeAdapter, ValidationError

__all__ = ["CompatError", "parse_compat"]

T = TypeVar("T")

#: Strict: no coercion (``"yes"`` is not a bool, ``True`` is not an int, ``1.5`` is not an int).
_STRICT = ConfigDict(strict=True)
_VALIDATORS: dict[type[Any], dict[str, tuple[Any, TypeAdapter[Any]]]] = {}


class CompatError(ValueError):
    """``Model.compat`` names an unknown flag or gives one a value of the wrong type."""


def _validators(cls: type[Any]) -> dict[str, tuple[Any, TypeAdapter[Any]]]:
    """Each field of ``cls``: its annotation and a strict pydantic validator for it (built once per class)."""
    known = _VALIDATORS.get(cls)
    if known is None:
        hints = typing.get_type_hints(cls)
        known = {
            field.name: (hints[field.name], TypeAdapter(hints[field.name], config=_STRICT))
            for field in dataclasses.fields(cls)
        }
        _VALIDATORS[cls] = known
    return known


_DEFAULTS: dict[type[Any], Any] = {}


def _defaults_of(cls: type[T], defaults: T | None) -> T:
    """What :func:`parse_compat` makes of no flags: a copy of ``defaults`` (else of the class defaults),
    or, for a frozen dataclass, which nobody can change, the one instance every such call shares."""
    params = getattr(cls, "__dataclass_params__", None)
    if not getattr(params, "frozen", False):
        return cast("T", dataclasses.replace(cast("Any", defaults))) if defaults is not None else cls()
    if defaults is not None:
        return defaults
    made = _DEFAULTS.get(cls)
    if made is None:
        made = _DEFAULTS[cls] = cls()
    return cast("T", made)


def parse_compat(cls: type[T], raw: Mapping[str, Any] | None, *, defaults: T | None = None) -> T:
    """Build ``cls`` (a frozen dataclass) from ``raw``, on top of ``defaults`` (else the class defaults).

    Lists become tuples for tuple-typed fields. Raises :class:`CompatError` naming every unknown key
    (and the known ones) or the first value of the wrong type.
    """
    if not raw:
        if raw is not None and not isinstance(raw, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise CompatError(f"Model.compat must be a mapping, not {type(raw).__name__}")
        # No flag given (the usual model): the defaults as they are (shared when frozen).
        return _defaults_of(cls, defaults)
    if not isinstance(raw, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise CompatError(f"Model.compat must be a mapping, not {type(raw).__name__}")
    fields = _validators(cls)
    values = dict(raw or {})
    unknown = sorted(str(key) for key in values if key not in fields)
    if unknown:
        raise CompatError(
            f"unknown Model.compat key{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} "
            f"for {cls.__name__} (known: {', '.join(sorted(fields))})"
        )
    for key, value in values.items():
        annotation, validator = fields[key]
        # JSON has no tuples: a list given for a tuple field is read as one (the flags are frozen).
        given = tuple(cast("list[Any]", value)) if isinstance(value, list) else value
        try:
            values[key] = validator.validate_python(given)
        except ValidationError:
            raise CompatError(f"Model.compat[{key!r}] must be {_describe(annotation)}, got {value!r}") from None
    base = defaults if defaults is not None else cls()
    return cast("T", dataclasses.replace(cast("Any", base), **values))


def _describe(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(arg) for arg in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(arg) for arg in typing.get_args(annotation))
    return getattr(annotation, "__name__", str(annotation))
