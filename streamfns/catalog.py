"""The model catalog: known models per provider, as plain :class:`normalize.Model` data.

Each provider's models live in a JSON file next to its adapter (``streamfns/anthropic/models.json``)
and are read on first use. Every call returns fresh ``Model`` objects, so callers may change them
(a different ``base_url``, extra headers) without affecting later look-ups. Models missing from the
catalog need no registration: build a ``Model`` by hand and pass it to ``streamfns.stream``.
"""

from __future__ import annotations

import difflib
import functools
import json
from dataclasses import dataclass
from importlib import resources
from typing import Any, cast

from normalize import Model, ModelCost

__all__ = ["get_model", "list_models", "list_providers"]

#: provider → (directory under ``streamfns``, data file). Only files listed here are ever read.
_SOURCES: dict[str, tuple[str, str]] = {
    "anthropic": ("anthropic", "models.json"),
}


@dataclass(frozen=True, slots=True)
class _Entry:
    model: dict[str, Any]
    api: str
    provider: str
    base_url: str


@dataclass(frozen=True, slots=True)
class _ProviderCatalog:
    entries: tuple[_Entry, ...]
    by_id: dict[str, _Entry]


@functools.cache
def _load(provider: str) -> _ProviderCatalog:
    directory, filename = _SOURCES[provider]
    # Walk from the ``streamfns`` package instead of importing the adapter sub-package: reading
    # prices must not import (and register) the HTTP adapter.
    text = resources.files("streamfns").joinpath(directory, filename).read_text(encoding="utf-8")
    document = cast("dict[str, Any]", json.loads(text))
    api = cast("str", document["api"])
    base_url = cast("str", document.get("base_url", ""))
    entries: list[_Entry] = []
    by_id: dict[str, _Entry] = {}
    for raw in cast("list[dict[str, Any]]", document["models"]):
        entry = _Entry(model=raw, api=api, provider=provider, base_url=base_url)
        entries.append(entry)
        for name in (raw["id"], *cast("list[str]", raw.get("aliases", []))):
            if name in by_id:
                raise ValueError(f"duplicate model id {name!r} in the {provider} catalog")
            by_id[name] = entry
    return _ProviderCatalog(entries=tuple(entries), by_id=by_id)


def _build(entry: _Entry) -> Model:
    raw = entry.model
    cost = cast("dict[str, float]", raw.get("cost", {}))
    level_map = cast("dict[str, str | None] | None", raw.get("thinking_level_map"))
    return Model(
        id=raw["id"],
        name=raw.get("name", ""),
        api=entry.api,
        provider=entry.provider,
        base_url=entry.base_url,
        reasoning=bool(raw.get("reasoning", False)),
        input=list(raw.get("input", ["text"])),
        cost=ModelCost(
            input=float(cost.get("input", 0.0)),
            output=float(cost.get("output", 0.0)),
            cache_read=float(cost.get("cache_read", 0.0)),
            cache_write=float(cost.get("cache_write", 0.0)),
        ),
        context_window=int(raw["context_window"]),
        max_tokens=int(raw["max_tokens"]),
        headers=dict(raw["headers"]) if raw.get("headers") else None,
        compat=dict(raw.get("compat", {})),
        thinking_level_map=dict(level_map) if level_map is not None else None,
    )


def list_providers() -> list[str]:
    """The providers the catalog knows, sorted."""
    return sorted(_SOURCES)


def get_model(provider: str, model_id: str) -> Model:
    """Return a fresh ``Model`` for ``model_id`` of ``provider``.

    A dated id and its alias (``claude-sonnet-4-5`` / ``claude-sonnet-4-5-20250929``) resolve to
    the same model, whose ``id`` is the canonical one the vendor reports back in responses, so
    replayed turns are recognised as coming from the same model.

    Raises ``KeyError`` for an unknown provider or id; the message lists the closest known ids.
    """
    if provider not in _SOURCES:
        raise KeyError(f"unknown provider {provider!r}; known providers: {', '.join(list_providers())}")
    catalog = _load(provider)
    entry = catalog.by_id.get(model_id)
    if entry is None:
        close = difflib.get_close_matches(model_id, list(catalog.by_id), n=5, cutoff=0.5)
        hint = f"; did you mean: {', '.join(close)}?" if close else f"; known ids: {', '.join(sorted(catalog.by_id))}"
        raise KeyError(f"unknown {provider} model {model_id!r}{hint} (or build a normalize.Model by hand)")
    return _build(entry)


def list_models(provider: str | None = None) -> list[Model]:
    """Fresh ``Model`` objects for every catalog entry of ``provider``, or of all providers.

    Each model appears once, under its canonical id (aliases are not repeated). Raises ``KeyError``
    for an unknown provider.
    """
    if provider is not None and provider not in _SOURCES:
        raise KeyError(f"unknown provider {provider!r}; known providers: {', '.join(list_providers())}")
    providers = [provider] if provider is not None else list_providers()
    return [_build(entry) for name in providers for entry in _load(name).entries]
