"""Finding adapters: the built-in packages and the installed ones (entry points).

Built-in adapters are the sub-packages of ``streamfns`` whose ``__init__`` declares ``ADAPTER``;
their names are listed without importing them (:func:`builtin_packages`), so the catalog can read
their ``models.json`` files without loading any HTTP code. Installed adapters come from the
``streamfns.adapters`` entry-point group (which also lists the built-in ones, so a tool that
imports nothing of ``streamfns`` — the ``cassettes`` command — finds their wire profiles there). A
broken installed adapter is skipped and recorded (:func:`reported_problems`; the public list is
:func:`streamfns.adapter_problems`), never raised: one bad plugin must not take every provider down.
Every adapter's wire profile is registered as it is found (:func:`normalize.wire.register_profile`).

Nothing here imports the ``streamfns`` package itself or the catalog: the registry and the catalog
are built on this module, not the other way round.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import pkgutil
import types
from pathlib import Path

from normalize.wire import register_profile
from streamfns.kit.adapter import ENTRY_POINT_GROUP, Adapter

__all__ = [
    "all_adapters",
    "builtin_adapters",
    "builtin_packages",
    "installed_adapters",
    "report_problem",
    "reported_problems",
]

#: Sub-packages of ``streamfns`` that are infrastructure, not adapters (``auth``: the subscription
#: logins, which sign an adapter's requests but stream nothing).
_NOT_ADAPTERS = frozenset({"kit", "auth"})
_problems: list[str] = []


@functools.cache
def builtin_packages() -> tuple[str, ...]:
    """The names of ``streamfns``'s adapter sub-packages (``anthropic``, …), sorted; nothing is imported."""
    # This module sits in the ``streamfns`` package directory; reading that directory (not the package
    # object) keeps discovery below the package's ``__init__``, which imports the registry built on it.
    return tuple(
        sorted(
            info.name
            for info in pkgutil.iter_modules([str(Path(__file__).parent)])
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
        if adapter.profile is not None:
            register_profile(adapter.profile)
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
        if builtin.get(adapter.api) is adapter:
            continue  # the built-in adapter's own entry point
        if adapter.api in builtin or adapter.api in found:
            _problems.append(f"adapter entry point {entry.name!r} serves api {adapter.api!r}, which is already served")
            continue
        found[adapter.api] = adapter
        if adapter.profile is not None:
            register_profile(adapter.profile)
    return found


def all_adapters() -> dict[str, Adapter]:
    """Built-in and installed adapters, by api."""
    return {**builtin_adapters(), **installed_adapters()}


def report_problem(problem: str) -> None:
    """Record what went wrong with an installed adapter (its catalog, say), once."""
    if problem not in _problems:
        _problems.append(problem)


def reported_problems() -> list[str]:
    """What has gone wrong so far with installed adapters and their catalogs (empty when nothing did);
    :func:`streamfns.adapter_problems` loads both first, then returns this list."""
    return list(_problems)
