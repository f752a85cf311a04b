"""What the author hands the harness: a StreamFn or a factory, optionally as a :class:`Target`.

A :class:`Target` is an adapter together with its declared capabilities — handy for the CLI
(``python -m conformance run pkg.module:TARGET`` needs no capability flags) and for collecting the
adapters a project ships (see :mod:`conformance.targets`).

The callable is either a StreamFn or a factory that returns one. They are told apart by signature:
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
from dataclasses import dataclass
from typing import Any

from conformance.capabilities import Capabilities

__all__ = ["Target", "adapter_name", "is_factory", "load_target"]


@dataclass(frozen=True, slots=True)
class Target:
    """``stream_fn`` is a StreamFn or a zero-argument factory returning one; ``name`` labels it in
    reports (default: its ``module.qualname``)."""

    stream_fn: Callable[..., Any]
    capabilities: Capabilities
    name: str | None = None


def is_factory(obj: Callable[..., Any]) -> bool:
    """True when ``obj`` can be called with no arguments (see the module docstring)."""
    try:
        signature = inspect.signature(obj)
        signature.bind()
    except Exception:  # an unreadable signature, or one that needs arguments: a StreamFn
        return False
    return True


def adapter_name(obj: object) -> str:
    """``module.qualname`` of a function or class, or of an instance's class (never raises)."""
    try:
        named = obj if inspect.isfunction(obj) or inspect.isclass(obj) or inspect.ismethod(obj) else type(obj)
        module = str(getattr(named, "__module__", None) or "")
        qualname = str(getattr(named, "__qualname__", None) or type(obj).__name__)
    except Exception:  # the adapter's object may raise on any attribute
        return str(type(obj).__qualname__)
    return f"{module}.{qualname}" if module else qualname


def load_target(spec: str) -> Any:
    """Import ``"pkg.module:attr"`` (``attr`` may be dotted): a StreamFn, a factory or a
    :class:`Target`. Raises ``ValueError`` with a readable message when the spec
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
