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

Every entry is checked as it is read (the format, field by field, is in docs/models.md, "The
models.json format"): a wrong one is a :class:`CatalogError` naming the file and the field's path, and
:func:`load_models_file` checks one file the same way. A ``cost`` says its ``basis`` (``metered``
unless it says ``free``, ``subscription`` or ``unknown``); an entry without one has an unknown price,
never $0. :func:`model_for_recording` finds the model a recording was made with, in the catalog of
the recording's own api.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, cast
from urllib.parse import urlsplit

from normalize import COST_BASES, THINKING_LEVELS, Model, ModelCost
from normalize.suggest import did_you_mean

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

__all__ = [
    "CatalogError",
    "get_model",
    "list_models",
    "list_providers",
    "load_models_file",
    "model_for_recording",
    "model_from_spec",
    "model_names",
]


class CatalogError(ValueError):
    """A ``models.json`` file is malformed, or two files claim the same model. The message starts
    with the file and, for a wrong entry, the path of the field at fault and what was expected
    (``streamfns/x/models.json: providers[2].models[0].cost.input: expected a number, not "3"``)."""


@dataclass(frozen=True, slots=True)
class _Entry:
    model: dict[str, Any]
    api: str
    provider: str
    base_url: str
    source: str
    #: Where in ``source`` the entry is (``providers[0].models[2]``), for a clash's message.
    path: str = ""


def _catalog_files() -> Iterator[tuple[str, Traversable, bool]]:
    """``(source, file, built_in)`` for every catalog file, the built-in ones first."""
    # Walk from the ``streamfns`` package instead of importing the adapter sub-packages: reading
    # prices must not import (and register) an HTTP adapter.
    from importlib import resources  # noqa: PLC0415 - read on the first lookup: 8 ms of `import streamfns`

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


def _shown(value: object) -> str:
    """A JSON value as an error message quotes it (short)."""
    text = json.dumps(value, ensure_ascii=False) if value is not None else "null"
    return text if len(text) <= 40 else text[:39] + "…"


@dataclass(frozen=True, slots=True)
class _Where:
    """The file and the field path a value was read from, for :class:`CatalogError` messages."""

    source: str
    path: str = ""

    def at(self, name: str | int) -> _Where:
        if isinstance(name, int):
            return _Where(self.source, f"{self.path}[{name}]")
        return _Where(self.source, f"{self.path}.{name}" if self.path else name)

    def fail(self, problem: str) -> NoReturn:
        raise CatalogError(f"{self.source}: {self.path}: {problem}" if self.path else f"{self.source}: {problem}")


def _need(where: _Where, value: object, kind: type[Any], what: str) -> Any:
    # bool is an int to Python, never to a catalog: ``"max_tokens": true`` is a mistake.
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        where.fail(f"expected {what}, not {_shown(value)}")
    return value


def _string(where: _Where, value: object, *, empty: bool = True) -> str:
    text: str = _need(where, value, str, "a string")
    if not empty and not text.strip():
        where.fail("expected a non-empty string")
    return text


def _count(where: _Where, value: object, *, least: int) -> int:
    number: int = _need(where, value, int, "a whole number")
    if number < least:
        where.fail(f"expected a whole number of at least {least}, not {number}")
    return number


#: The fields of a catalog ``cost`` object that hold a rate (USD per million tokens).
_RATES = ("input", "output", "cache_read", "cache_write")


def _cost(where: _Where, value: object) -> dict[str, Any]:
    """A ``cost`` object, checked: not empty, known fields only (a misspelt rate would silently price a
    part at $0), finite non-negative rates, a known basis, and no rates where the basis says there are
    none (a rate of 0 is tolerated there)."""
    cost = _object(value)
    if cost is None:
        where.fail(f"expected an object of rates, not {_shown(value)}")
    if not cost:
        # {} would read as metered at $0 — a price nobody quoted — while no cost at all is unknown.
        where.fail("an empty cost says nothing: give its rates or basis, or leave it out (the price is unknown)")
    for name in cost:
        if name not in (*_RATES, "basis"):
            hint = f" (spelled {name!r} in pi's JSON; here snake_case)" if name in ("cacheRead", "cacheWrite") else ""
            where.at(name).fail(f"unknown cost field{hint}; expected one of {', '.join((*_RATES, 'basis'))}")
    for name in _RATES:
        if name in cost:
            rate = cost[name]
            if not isinstance(rate, int | float) or isinstance(rate, bool):
                where.at(name).fail(f"expected a number, not {_shown(rate)}")
            if not math.isfinite(rate) or rate < 0:
                where.at(name).fail(f"expected a finite number of at least 0, not {rate!r}")
    basis = cost.get("basis", "metered")
    if basis not in COST_BASES:
        where.at("basis").fail(f"expected one of {', '.join(COST_BASES)}, not {_shown(basis)}")
    if basis in ("free", "unknown") and any(cost.get(name) for name in _RATES):
        where.fail(f"a price of basis {basis!r} has no rates (leave them out)")
    return cost


def _model_fields(where: _Where, raw: dict[str, Any], *, template: bool) -> None:
    """Check a model entry (``template``: a provider's ``any_model``, which answers every id)."""
    if template:
        for name in ("id", "api", "aliases"):
            if name in raw:
                where.at(name).fail("an any_model entry answers every id of the file's api: it takes no " + name)
    else:
        if "id" not in raw:
            where.at("id").fail("missing (every model needs an id)")
        _string(where.at("id"), raw["id"], empty=False)
        if "aliases" in raw:
            for index, alias in enumerate(_need(where.at("aliases"), raw["aliases"], list, "a list of ids")):
                _string(where.at("aliases").at(index), alias, empty=False)
        if "api" in raw:
            _string(where.at("api"), raw["api"], empty=False)
    for name in ("name", "base_url", "note"):
        if name in raw:
            _string(where.at(name), raw[name])
    for name, least in (("context_window", 0), ("max_tokens", 1)):
        if name not in raw:
            where.at(name).fail("missing (a whole number)")
        _count(where.at(name), raw[name], least=least)
    if "reasoning" in raw:
        _need(where.at("reasoning"), raw["reasoning"], bool, "true or false")
    if "input" in raw:
        kinds = _need(where.at("input"), raw["input"], list, 'a list of "text" and "image"')
        for index, kind in enumerate(kinds):
            if kind not in ("text", "image"):
                where.at("input").at(index).fail(f'expected "text" or "image", not {_shown(kind)}')
    if "cost" in raw:
        _cost(where.at("cost"), raw["cost"])
    if "headers" in raw:
        for header, value in _need(where.at("headers"), raw["headers"], dict, "an object of strings").items():
            _string(where.at("headers").at(header), value)
    if "compat" in raw:
        _need(where.at("compat"), raw["compat"], dict, "an object")
    if "thinking_level_map" in raw:
        levels = _need(where.at("thinking_level_map"), raw["thinking_level_map"], dict, "an object")
        for level, value in levels.items():
            if level not in THINKING_LEVELS:
                where.at("thinking_level_map").at(level).fail(f"not a thinking level ({', '.join(THINKING_LEVELS)})")
            if value is not None:
                _string(where.at("thinking_level_map").at(level), value)


def _entries(source: str, parsed: object) -> Iterator[_Entry]:
    """The file's entries, each checked (see docs/models.md, "The models.json format"): a wrong one
    raises :class:`CatalogError` naming ``source`` and the field's path."""
    top = _Where(source)
    document = _object(parsed)
    if document is None or "providers" not in document:
        top.fail("expected an object with a 'providers' list")
    api = document.get("api")
    if api is not None:
        _string(top.at("api"), api, empty=False)
    providers = _need(top.at("providers"), document["providers"], list, "a list of provider groups")
    for number, item in enumerate(providers):
        where = top.at("providers").at(number)
        group = _object(item)
        if group is None:
            where.fail(f"expected an object, not {_shown(item)}")
        if "provider" not in group:
            where.at("provider").fail("missing (every providers[] entry needs a 'provider' name)")
        provider = _string(where.at("provider"), group["provider"], empty=False)
        group_url = _string(where.at("base_url"), group.get("base_url", ""))
        if "any_model" in group:
            template = _object(group["any_model"])
            if template is None:
                where.at("any_model").fail(f"expected an object, not {_shown(group['any_model'])}")
            if not isinstance(api, str):
                where.at("any_model").fail(f"the any_model of {provider} needs the file's 'api'")
            _model_fields(where.at("any_model"), template, template=True)
            yield _Entry(
                model={**template, "id": _ANY},
                api=api,
                provider=provider,
                base_url=group_url,
                source=source,
                path=where.at("any_model").path,
            )
        models = _need(where.at("models"), group.get("models", []), list, "a list of models")
        for index, model_item in enumerate(models):
            at = where.at("models").at(index)
            raw = _object(model_item)
            if raw is None:
                at.fail(f"expected an object, not {_shown(model_item)}")
            _model_fields(at, raw, template=False)
            model_api = raw.get("api", api)
            if not isinstance(model_api, str):
                at.at("api").fail(f"missing: model {raw['id']!r} names no api, and the file names none")
            yield _Entry(
                model=raw,
                api=model_api,
                provider=provider,
                base_url=str(raw.get("base_url", group_url)),
                source=source,
                path=at.path,
            )


@dataclass(frozen=True, slots=True)
class _ProviderCatalog:
    entries: tuple[_Entry, ...]
    by_id: dict[str, _Entry]
    #: The fields of any id the provider does not list (its ``any_model``), when it answers any id.
    any_model: _Entry | None = None

    @property
    def apis(self) -> frozenset[str]:
        """The wire apis the provider's entries (and its ``any_model``) are served on."""
        found = {entry.api for entry in self.entries}
        if self.any_model is not None:
            found.add(self.any_model.api)
        return frozenset(found)


#: The id under which a provider group's ``any_model`` entry travels from the file to the index.
_ANY: str = "\x00any"


def _read(source: str, file: Traversable | Path) -> list[_Entry]:
    try:
        document = json.loads(file.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise CatalogError(f"{source}: not JSON: {exc}") from None
    return list(_entries(source, document))


def load_models_file(path: str | os.PathLike[str]) -> list[Model]:
    """Every model a ``models.json`` file lists (as :func:`list_models` would give them; an
    ``any_model`` entry is checked but not listed), read and checked as the catalog reads it — the
    same code path: every entry field by field, and then the file as a whole (no provider lists an id
    or an alias twice, counting every group of that provider; no provider has two ``any_model``
    entries) — for an adapter author checking the file their package declares before shipping it.
    The file is checked on its own: a model another catalog file also lists is not looked for.

    Raises :class:`CatalogError` naming the file and the wrong field's path
    (``models.json: providers[0].models[2].cost.input: expected a number, not "3"``), and for a file
    that cannot be read or is not JSON. The format is in docs/models.md, "The models.json format".
    """
    file = Path(path)
    try:
        entries = _read(str(path), file)
    except (OSError, UnicodeDecodeError) as exc:
        raise CatalogError(f"{path}: cannot be read: {exc}") from None
    merged = _Merged()
    merged.add(entries, built_in=True)
    return [_build(entry) for entry in merged.listed()]


def _names(entry: _Entry) -> list[str]:
    aliases = entry.model.get("aliases", [])
    return [entry.model["id"], *(name for name in cast("list[object]", aliases) if isinstance(name, str))]


def _twice(entry: _Entry, name: str, other: _Entry | None) -> str:
    """The message for ``name`` listed twice: by ``other``, or (None) by ``entry`` itself."""
    what = f"model {entry.provider}/{name} is listed twice"
    if other is None:
        return f"{entry.source}: {entry.path}: {what} (its id and aliases repeat it)"
    if other.source == entry.source:
        return f"{entry.source}: {entry.path}: {what} (also at {other.path})"
    return f"{what}: in {other.source} and {entry.source}"


@dataclass(slots=True)
class _Merged:
    """The catalog files read so far, merged per provider: the one place that refuses what no single
    entry shows wrong (an id or alias listed twice, two ``any_model`` entries of one provider)."""

    entries: dict[str, list[_Entry]] = dataclasses.field(default_factory=dict[str, list[_Entry]])
    by_id: dict[str, dict[str, _Entry]] = dataclasses.field(default_factory=dict[str, dict[str, _Entry]])
    any_models: dict[str, _Entry] = dataclasses.field(default_factory=dict[str, _Entry])

    def add(self, found: list[_Entry], *, built_in: bool) -> None:
        """Add one file's entries. A clash raises :class:`CatalogError` when ``built_in`` (this
        package's bug, or :func:`load_models_file`'s answer); else the entry is skipped and reported
        (an installed adapter's file: the entries read before it win)."""
        for entry in found:
            problem = self._clash(entry)
            if problem is not None:
                if built_in:
                    raise CatalogError(problem)
                _report(f"{problem}; the entry in {entry.source} is skipped")
                continue
            self.entries.setdefault(entry.provider, [])
            known = self.by_id.setdefault(entry.provider, {})
            if entry.model["id"] == _ANY:
                self.any_models[entry.provider] = entry
                continue
            self.entries[entry.provider].append(entry)
            for name in _names(entry):
                known[name] = entry

    def _clash(self, entry: _Entry) -> str | None:
        if entry.model["id"] == _ANY:
            other = self.any_models.get(entry.provider)
            if other is None:
                return None
            where = other.path if other.source == entry.source else f"{other.source}: {other.path}"
            return f"{entry.source}: {entry.path}: provider {entry.provider} has two any_model entries (also {where})"
        names = _names(entry)
        known = self.by_id.get(entry.provider, {})
        clash = next((name for name in names if name in known), None)
        if clash is not None:
            return _twice(entry, clash, known[clash])
        repeated = next((name for index, name in enumerate(names) if name in names[:index]), None)
        return _twice(entry, repeated, None) if repeated is not None else None

    def listed(self) -> list[_Entry]:
        """Every listed entry (no ``any_model``), provider by provider in the order first read."""
        return [entry for items in self.entries.values() for entry in items]

    def providers(self) -> dict[str, _ProviderCatalog]:
        """The merged catalog, one :class:`_ProviderCatalog` per provider."""
        return {
            provider: _ProviderCatalog(
                entries=tuple(items), by_id=self.by_id[provider], any_model=self.any_models.get(provider)
            )
            for provider, items in self.entries.items()
        }


@functools.cache
def _index() -> dict[str, _ProviderCatalog]:
    merged = _Merged()
    for source, file, built_in in _catalog_files():
        try:
            found = _read(source, file)
        except (CatalogError, OSError, UnicodeDecodeError) as exc:
            if built_in:
                raise CatalogError(str(exc)) from None
            _report(f"catalog {source} is skipped: {exc}")
            continue
        merged.add(found, built_in=built_in)
    return merged.providers()


def _hosted(cost: ModelCost, host: str | None) -> ModelCost:
    """The price of a model sent to ``host``. ``free`` means a server of the user's own; a model priced
    so but sent to Ollama Cloud — the hosted service of such models, which the Ollama adapter names
    (:func:`streamfns.ollama.is_cloud_host`: one rule for its key, its listing and this) — is paid by
    its plan: ``subscription``, never free. Only a free price sent to a named host asks."""
    if cost.basis != "free" or not host:
        return cost
    from streamfns.ollama import is_cloud_host  # noqa: PLC0415 - the adapter owns the rule; asked only here

    return ModelCost(basis="subscription") if is_cloud_host(host) else cost


def _host(url: str) -> str | None:
    try:
        return urlsplit(url).hostname
    except ValueError:  # a malformed URL (an unclosed IPv6 bracket) names no host
        return None


def _build(entry: _Entry, *, host: str | None = None) -> Model:
    """A fresh model from ``entry``, priced for ``host`` when one is named (see :func:`_hosted`)."""
    raw = entry.model
    # No cost at all: the file does not know the price, so it is unknown, never $0 (see _cost).
    cost = cast("dict[str, Any]", raw.get("cost", {"basis": "unknown"}))
    level_map = cast("dict[str, str | None] | None", raw.get("thinking_level_map"))
    return Model(
        id=raw["id"],
        name=raw.get("name", ""),
        api=entry.api,
        provider=entry.provider,
        base_url=entry.base_url,
        reasoning=bool(raw.get("reasoning", False)),
        input=list(raw.get("input", ["text"])),
        cost=_hosted(
            ModelCost(
                input=float(cost.get("input", 0.0)),
                output=float(cost.get("output", 0.0)),
                cache_read=float(cost.get("cache_read", 0.0)),
                cache_write=float(cost.get("cache_write", 0.0)),
                basis=cost.get("basis", "metered"),
            ),
            host,
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


def get_model(provider: str, model_id: str, *, base_url: str | None = None) -> Model:
    """Return a fresh ``Model`` for ``model_id`` of ``provider``, sent to ``base_url`` instead of the
    catalog's endpoint when one is given — and priced for it: a model the catalog prices ``free``
    (a server of your own) sent to Ollama Cloud (``https://ollama.com``) is ``subscription``.

    A dated id and its alias (``claude-sonnet-4-5`` / ``claude-sonnet-4-5-20250929``) resolve to
    the same model, whose ``id`` is the canonical one the vendor reports back in responses, so
    replayed turns are recognised as coming from the same model.

    A provider with an ``any_model`` entry (``ollama``) answers every id. Raises ``KeyError`` for an
    unknown provider or id; the message lists the closest known ids.
    """
    if base_url is None:
        return _build(_entry(provider, model_id))
    model = _build(_entry(provider, model_id), host=_host(base_url))
    model.base_url = base_url
    return model


def model_from_spec(spec: str, *, base_url: str | None = None) -> Model:
    """The model a command line names as ``provider/model-id`` (as :func:`get_model` finds it), sent to
    ``base_url`` instead of the catalog's endpoint when one is given (a proxy, a compatible server) and
    priced for it as :func:`get_model` prices it.

    Raises ``ValueError`` whose message a command can print as is: a spec without both parts, an
    unknown provider or id (naming the closest known ones), a base URL that is not http(s).
    """
    provider, _, model_id = spec.partition("/")
    if not provider or not model_id:
        raise ValueError(f"--model must look like provider/model-id, not {spec!r}")
    if base_url is not None and not base_url.startswith(("http://", "https://")):
        raise ValueError(f"--base-url must be an http:// or https:// URL, not {base_url!r}")
    try:
        return get_model(provider, model_id, base_url=base_url)
    except KeyError as exc:  # the catalog's message names the close ids
        raise ValueError(str(exc.args[0]) if exc.args else str(exc)) from None


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


def model_for_recording(api: str, model_id: str, *, host: str | None = None) -> Model:
    """The model a recording of wire api ``api`` made with ``model_id`` came from (a fresh ``Model``
    whose ``api`` is ``api``), so a replay is priced — or said to be unpriced — honestly.

    The api decides the catalog: only the providers that serve ``api`` (a listed model or an
    ``any_model`` of that api) are asked. Among them, a model listed under ``model_id`` (an id or an
    alias) wins, one on ``api`` first — the same model a provider lists for another of its apis still
    knows its prices (``gpt-4o`` recorded through the Responses api is listed for chat completions) —
    and, among several, the one whose base URL has the recording's ``host``. Else the ``any_model``
    of a provider of ``api`` answers (a catch-all never claims a model of another api: Ollama's
    answers Ollama recordings only). Either is priced for ``host`` as :func:`get_model` prices a model
    for its ``base_url`` (a free model recorded on Ollama Cloud was paid by its plan: ``subscription``).
    Else the model is not in the catalog: its provider is the one of ``api`` whose base URL has
    ``host``, else the api's only provider, else ``recorded``; its price is ``unknown`` (never $0).

    Raises :class:`CatalogError` when a built-in catalog file is broken.
    """
    serving = {name: catalog for name, catalog in _index().items() if api in catalog.apis}
    listed = [(name, catalog.by_id[model_id]) for name, catalog in serving.items() if model_id in catalog.by_id]
    listed.sort(key=lambda found: found[1].api != api)  # stable: catalog order within each group
    if listed:
        on_host = [found for found in listed if host and urlsplit(found[1].base_url).hostname == host]
        return dataclasses.replace(_build((on_host or listed)[0][1], host=host), api=api)
    templates = [catalog.any_model for catalog in serving.values() if catalog.any_model is not None]
    templates = [template for template in templates if template.api == api]
    if templates and model_id.strip():
        on_host = [t for t in templates if host and urlsplit(t.base_url).hostname == host]
        template = (on_host or templates)[0]
        return _build(
            _Entry({**template.model, "id": model_id}, api, template.provider, template.base_url, template.source),
            host=host,
        )
    by_host = [
        (name, entry.base_url)
        for name, catalog in serving.items()
        for entry in catalog.entries
        if host and entry.api == api and urlsplit(entry.base_url).hostname == host
    ]
    if by_host:
        provider, base_url = by_host[0]
    elif len(serving) == 1:
        provider = next(iter(serving))
        base_url = next((entry.base_url for entry in serving[provider].entries if entry.api == api), "")
    else:
        provider, base_url = "recorded", "https://recorded.invalid"
    return Model(id=model_id, api=api, provider=provider, base_url=base_url, cost=ModelCost(basis="unknown"))


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
