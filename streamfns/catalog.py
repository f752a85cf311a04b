"""The model catalog: known models per provider, as plain :class:`normalize.Model` data.

Each adapter package keeps its models in its own ``models.json`` (``streamfns/anthropic/models.json``,
and the file an installed adapter declares), read on first use without importing any HTTP code::

    {"api": "anthropic-messages",
     "providers": [{"provider": "anthropic", "base_url": "https://api.anthropic.com",
                    "models": [{"id": "claude-sonnet-4-5", "context_window": 200000, ...}]}]}

A provider may have models in several files (OpenAI's chat models are served by the
``openai-completions`` adapter, its reasoning models by ``openai-responses``); a model entry may name
its own ``api``. The built-in files are read first and always win: an installed adapter's file that
is malformed, or that lists a model a file read before it already lists (a plugin repeating
``ollama/llama3.2``), has that file (or that entry) skipped and reported by
:func:`streamfns.adapter_problems` — one bad plugin never takes the catalog down. A broken built-in
file is this package's bug and raises :class:`CatalogError`. Every call returns fresh ``Model``
objects, so callers may change them (a different ``base_url``, extra headers) without affecting later
look-ups. Models missing from the catalog need
no registration: build a ``Model`` by hand and pass it to ``streamfns.stream``. A provider whose model
names are the user's own (Ollama: any model pulled into the server) gives an ``any_model`` entry in its
group: :func:`get_model` then answers any id of that provider, listed or not, with those fields (the
listed ids keep their own), and :func:`list_models` lists only the listed ones.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any, cast

from normalize import Model, ModelCost
from normalize.suggest import did_you_mean

__all__ = ["CatalogError", "get_model", "list_models", "list_providers", "model_from_spec", "model_names"]


class CatalogError(ValueError):
    """A ``models.json`` file is malformed, or two files claim the same model."""


@dataclass(frozen=True, slots=True)
class _Entry:
    model: dict[str, Any]
    api: str
    provider: str
    base_url: str
    source: str


def _catalog_files() -> Iterator[tuple[str, Traversable, bool]]:
    """``(source, file, built_in)`` for every catalog file, the built-in ones first."""
    # Walk from the ``streamfns`` package instead of importing the adapter sub-packages: reading
    # prices must not import (and register) an HTTP adapter.
    from streamfns._adapters import builtin_packages, installed_adapters  # noqa: PLC0415 - `import streamfns` loads no kit

    root = resources.files("streamfns")
    for name in builtin_packages():
        file = root.joinpath(name, "models.json")
        if file.is_file():
            yield f"streamfns/{name}/models.json", file, True
    for adapter in installed_adapters().values():
        if adapter.catalog:
            try:
                file = resources.files(adapter.package).joinpath(adapter.catalog)
                found = file.is_file()
            except Exception as exc:  # a plugin package that cannot be read is reported, not raised
                _report(f"{adapter.package}/{adapter.catalog}: cannot be read ({type(exc).__name__}: {exc}); skipped")
                continue
            if found:
                yield f"{adapter.package}/{adapter.catalog}", file, False


def _report(problem: str) -> None:
    from streamfns._adapters import report_problem  # noqa: PLC0415 - as in _catalog_files

    report_problem(problem)


def _object(value: object) -> dict[str, Any] | None:
    return cast("dict[str, Any]", value) if isinstance(value, dict) else None


def _entries(source: str, parsed: object) -> Iterator[_Entry]:
    document = _object(parsed)
    if document is None or not isinstance(document.get("providers"), list):
        raise CatalogError(f"{source}: expected an object with a 'providers' list")
    api = document.get("api")
    for item in cast("list[object]", document["providers"]):
        group = _object(item)
        if group is None or not isinstance(group.get("provider"), str):
            raise CatalogError(f"{source}: every providers[] entry needs a 'provider' name")
        template = _object(group.get("any_model"))
        if template is not None:
            if not isinstance(api, str):
                raise CatalogError(f"{source}: the any_model of {group['provider']} needs the file's api")
            base_url = str(group.get("base_url", ""))
            yield _Entry(
                model={**template, "id": _ANY}, api=api, provider=group["provider"], base_url=base_url, source=source
            )
        for model_item in cast("list[object]", group.get("models", [])):
            raw = _object(model_item)
            if raw is None or not isinstance(raw.get("id"), str):
                raise CatalogError(f"{source}: every model needs an 'id' ({group['provider']})")
            model_api = raw.get("api", api)
            if not isinstance(model_api, str):
                raise CatalogError(f"{source}: model {raw['id']!r} has no api")
            yield _Entry(
                model=raw,
                api=model_api,
                provider=group["provider"],
                base_url=str(raw.get("base_url", group.get("base_url", ""))),
                source=source,
            )


@dataclass(frozen=True, slots=True)
class _ProviderCatalog:
    entries: tuple[_Entry, ...]
    by_id: dict[str, _Entry]
    #: The fields of any id the provider does not list (its ``any_model``), when it answers any id.
    any_model: _Entry | None = None


#: The id under which a provider group's ``any_model`` entry travels from the file to the index.
_ANY: str = "\x00any"


def _read(source: str, file: Traversable) -> list[_Entry]:
    try:
        document = json.loads(file.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise CatalogError(f"{source}: not JSON: {exc}") from None
    return list(_entries(source, document))


def _names(entry: _Entry) -> list[str]:
    aliases = entry.model.get("aliases", [])
    return [entry.model["id"], *(name for name in cast("list[object]", aliases) if isinstance(name, str))]


@functools.cache
def _index() -> dict[str, _ProviderCatalog]:
    entries: dict[str, list[_Entry]] = {}
    by_id: dict[str, dict[str, _Entry]] = {}
    any_models: dict[str, _Entry] = {}
    for source, file, built_in in _catalog_files():
        try:
            found = _read(source, file)
        except (CatalogError, OSError, UnicodeDecodeError) as exc:
            if built_in:
                raise CatalogError(str(exc)) from None
            _report(f"catalog {source} is skipped: {exc}")
            continue
        for entry in found:
            if entry.model["id"] == _ANY:
                if entry.provider in any_models:
                    where = f"provider {entry.provider} has two any_model entries ({source})"
                    if built_in:
                        raise CatalogError(where)
                    _report(f"{where}; the one in {source} is skipped")
                else:
                    any_models[entry.provider] = entry
                    entries.setdefault(entry.provider, [])
                    by_id.setdefault(entry.provider, {})
                continue
            known = by_id.setdefault(entry.provider, {})
            clash = next((name for name in _names(entry) if name in known), None)
            if clash is not None:
                where = f"model {entry.provider}/{clash} is listed twice: in {known[clash].source} and {source}"
                if built_in:
                    raise CatalogError(where)
                _report(f"{where}; the entry in {source} is skipped")
                continue
            entries.setdefault(entry.provider, []).append(entry)
            for name in _names(entry):
                known[name] = entry
    return {
        provider: _ProviderCatalog(entries=tuple(items), by_id=by_id[provider], any_model=any_models.get(provider))
        for provider, items in entries.items()
    }


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
    return sorted(_index())


def _provider(provider: str) -> _ProviderCatalog:
    catalog = _index().get(provider)
    if catalog is None:
        raise KeyError(f"unknown provider {provider!r}; {did_you_mean(provider, list_providers(), what='providers')}")
    return catalog


def get_model(provider: str, model_id: str) -> Model:
    """Return a fresh ``Model`` for ``model_id`` of ``provider``.

    A dated id and its alias (``claude-sonnet-4-5`` / ``claude-sonnet-4-5-20250929``) resolve to
    the same model, whose ``id`` is the canonical one the vendor reports back in responses, so
    replayed turns are recognised as coming from the same model.

    A provider with an ``any_model`` entry (``ollama``) answers every id. Raises ``KeyError`` for an
    unknown provider or id; the message lists the closest known ids.
    """
    return _build(_entry(provider, model_id))


def model_from_spec(spec: str, *, base_url: str | None = None) -> Model:
    """The model a command line names as ``provider/model-id`` (as :func:`get_model` finds it), sent to
    ``base_url`` instead of the catalog's endpoint when one is given (a proxy, a compatible server).

    Raises ``ValueError`` whose message a command can print as is: a spec without both parts, an
    unknown provider or id (naming the closest known ones), a base URL that is not http(s).
    """
    provider, _, model_id = spec.partition("/")
    if not provider or not model_id:
        raise ValueError(f"--model must look like provider/model-id, not {spec!r}")
    try:
        model = get_model(provider, model_id)
    except KeyError as exc:  # the catalog's message names the close ids
        raise ValueError(str(exc.args[0]) if exc.args else str(exc)) from None
    if base_url is not None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"--base-url must be an http:// or https:// URL, not {base_url!r}")
        model.base_url = base_url
    return model


def _entry(provider: str, model_id: str) -> _Entry:
    catalog = _provider(provider)
    entry = catalog.by_id.get(model_id)
    if entry is None and catalog.any_model is not None and model_id.strip():
        template = catalog.any_model
        return _Entry(
            {**template.model, "id": model_id}, template.api, template.provider, template.base_url, template.source
        )
    if entry is None:
        hint = did_you_mean(model_id, catalog.by_id, what="ids")
        raise KeyError(f"unknown {provider} model {model_id!r}; {hint} (or build a normalize.Model by hand)")
    return entry


def list_models(provider: str | None = None) -> list[Model]:
    """Fresh ``Model`` objects for every catalog entry of ``provider``, or of all providers.

    Each model appears once, under its canonical id (aliases are not repeated). Raises ``KeyError``
    for an unknown provider.
    """
    providers = [provider] if provider is not None else list_providers()
    return [_build(entry) for name in providers for entry in _provider(name).entries]


def model_names(provider: str, model_id: str) -> list[str]:
    """Every name :func:`get_model` accepts for the model ``model_id`` (an id or an alias) names: its
    canonical id first, then its aliases in catalog order — what a listing shows so that an alias
    (``claude-sonnet-4-5``) is never a name the user cannot find. Raises ``KeyError`` as
    :func:`get_model` does."""
    return _names(_entry(provider, model_id))
