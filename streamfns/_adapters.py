"""Finding adapters: the built-in packages and the installed ones (entry points).

Built-in adapters are the sub-packages of ``streamfns`` whose ``__init__`` declares ``ADAPTER``;
their names are listed without importing them (:func:`builtin_packages`), so the catalog can read
their ``models.json`` files without loading any HTTP code. Installed adapters come from the
``streamfns.adapters`` entry-point group. A broken installed adapter is skipped and reported by
:func:`adapter_problems`, never raised: one bad plugin must not take every provider down.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import pkgutil
import types

from streamfns.kit.adapter import ENTRY_POINT_GROUP, Adapter

__all__ = ["adapter_problems", "all_adapters", "builtin_adapters", "builtin_packages", "installed_adapters"]

#: Sub-packages of ``streamfns`` that are infrastructure, not adapters.
_NOT_ADAPTERS = frozenset({"kit"})
_problems: list[str] = []


@functools.cache
def builtin_packages() -> tuple[str, ...]:
    """The names of ``streamfns``'s adapter sub-packages (``anthropic``, …), sorted; nothing is imported."""
    import streamfns  # noqa: PLC0415 - the package is loaded by now; a top-level import would be circular

    return tuple(
        sorted(
            info.name
            for info in pkgutil.iter_modules(streamfns.__path__)
            if info.ispkg and info.name not in _NOT_ADAPTERS
        )
    )


def _declared(module: types.ModuleType, origin: str) -> Adapter:
    adapter = getattr(module, "ADAPTER", None)
    if not isinstance(adapter, Adapter):
        raise TypeError(f"{origin} declares no streamfns.kit.Adapter as ADAPTER")
    return adapter


@functools.cache
def builtin_adapters() -> dict[str, Adapter]:
    """The built-in adapters by api (importing their packages, not their HTTP code)."""
    found: dict[str, Adapter] = {}
    for name in builtin_packages():
        adapter = _declared(importlib.import_module(f"streamfns.{name}"), f"streamfns.{name}")
        found[adapter.api] = adapter
    return found


def _loaded(entry: importlib.metadata.EntryPoint) -> Adapter:
    value = entry.load()
    adapter = _declared(value, entry.value) if isinstance(value, types.ModuleType) else value
    if not isinstance(adapter, Adapter):
        raise TypeError(f"{entry.value} is a {type(adapter).__name__}, not a streamfns.kit.Adapter")
    return adapter


@functools.cache
def installed_adapters() -> dict[str, Adapter]:
    """Adapters of installed packages, by api (the ``streamfns.adapters`` entry points). An entry that
    fails to load, or names an api a built-in adapter already serves, is skipped and reported."""
    builtin = builtin_adapters()
    found: dict[str, Adapter] = {}
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            adapter = _loaded(entry)
        except Exception as exc:  # a broken plugin is reported, never raised
            _problems.append(f"adapter entry point {entry.name!r} ({entry.value}) failed to load: {exc}")
            continue
        if adapter.api in builtin or adapter.api in found:
            _problems.append(f"adapter entry point {entry.name!r} serves api {adapter.api!r}, which is already served")
            continue
        found[adapter.api] = adapter
    return found


def all_adapters() -> dict[str, Adapter]:
    """Built-in and installed adapters, by api."""
    return {**builtin_adapters(), **installed_adapters()}


def adapter_problems() -> list[str]:
    """What went wrong loading installed adapters (empty when nothing did)."""
    installed_adapters()
    return list(_problems)
