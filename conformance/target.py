"""Turning what the author passes into a StreamFn and a name for the report.

``target`` is either a StreamFn or a factory that returns one. They are told apart by signature:
a StreamFn takes ``(model, context, options=None)`` and so has required parameters; a callable
whose signature accepts a call with **no arguments** (a zero-argument function, a class whose
constructor has defaults, …) is a factory, called once per run (it may be ``async``). A callable
whose signature cannot be read is taken as a StreamFn. A string ``"pkg.module:attr"`` names
either, importable from ``sys.path``.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any

from conformance.declared import Target

__all__ = ["adapter_name", "is_factory", "load_target", "resolve_target"]


def is_factory(obj: Callable[..., Any]) -> bool:
    """True when ``obj`` can be called with no arguments (see the module docstring)."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return False
    try:
        signature.bind()
    except TypeError:
        return False
    return True


def adapter_name(obj: object) -> str:
    """``module.qualname`` of a function or class, or of an instance's class."""
    named = obj if inspect.isfunction(obj) or inspect.isclass(obj) or inspect.ismethod(obj) else type(obj)
    module = str(getattr(named, "__module__", None) or "")
    qualname = str(getattr(named, "__qualname__", None) or type(obj).__name__)
    return f"{module}.{qualname}" if module else qualname


async def resolve_target(target: Callable[..., Any]) -> Callable[..., Any]:
    """The StreamFn for ``target``: ``target`` itself, or what the factory returns.

    Raises ``TypeError`` when ``target`` or the factory's product is not callable.
    """
    if not callable(target):
        raise TypeError(f"the target must be a StreamFn or a factory, not {type(target).__name__}")
    if not is_factory(target):
        return target
    produced: Any = target()
    if inspect.isawaitable(produced):
        produced = await produced
    if not callable(produced):
        raise TypeError(f"the factory {adapter_name(target)} returned {type(produced).__name__}, not a StreamFn")
    fn: Callable[..., Any] = produced
    return fn


def load_target(spec: str) -> Any:
    """Import ``"pkg.module:attr"`` (``attr`` may be dotted): a StreamFn, a factory or a
    :class:`~conformance.declared.Target`. Raises ``ValueError`` with a readable message when the spec
    is malformed or cannot be imported, ``TypeError`` when it names something else."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"expected 'pkg.module:attr', got {spec!r}")
    try:
        value: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import {module_name!r}: {exc}") from exc
    for part in attr.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise ValueError(f"{module_name!r} has no attribute {attr!r}") from None
    if not callable(value) and not isinstance(value, Target):
        raise TypeError(f"{spec} is a {type(value).__name__}, not a StreamFn or a factory")
    return value
