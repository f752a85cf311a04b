"""The registry and the catalog derive from the adapter packages' declarations (and entry points)."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from collections.abc import Iterator

import pytest

import streamfns
from normalize import Context, Model, UserMessage
from normalize.wire import registry as wire_registry
from streamfns import _adapters, _registry, catalog
from streamfns.catalog import CatalogError, get_model, list_models, list_providers
from streamfns.kit import ENTRY_POINT_GROUP

CONTEXT = Context(messages=[UserMessage(content="hi")])


def test_a_fresh_import_lists_the_builtin_apis() -> None:
    code = "import streamfns; print(','.join(streamfns.registered_apis()))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    apis = out.stdout.strip().split(",")
    assert set(_adapters.builtin_adapters()) <= set(apis)
    assert "anthropic-messages" in apis


def test_every_builtin_package_declares_itself_and_its_catalog_is_consistent() -> None:
    for name in _adapters.builtin_packages():
        adapter = _adapters.builtin_adapters()
        assert any(a.package == f"streamfns.{name}" for a in adapter.values()), name
    for model in list_models():
        assert model.api in streamfns.registered_apis(), f"{model.provider}/{model.id} has no adapter for {model.api}"


async def test_a_model_whose_api_is_not_a_string_is_an_error_stream() -> None:
    model = Model(id="m", api=["x"], provider="p")  # pyright: ignore[reportArgumentType]
    result = await streamfns.stream(model, CONTEXT).result()
    assert result.error_info is not None
    assert result.error_info.kind == "config"
    assert "model.api" in (result.error_message or "")


async def test_an_unknown_api_names_the_known_ones() -> None:
    result = await streamfns.stream(Model(id="m", api="nope", provider="p"), CONTEXT).result()
    assert "anthropic-messages" in (result.error_message or "")


def test_a_hand_registration_wins_over_discovery_and_unregistering_sticks() -> None:
    original = streamfns.get_stream_fn("anthropic-messages")
    assert original is not None

    def mine(model: Model, context: Context, options: object = None, /) -> object:
        raise NotImplementedError

    try:
        streamfns.register_api("anthropic-messages", mine)  # pyright: ignore[reportArgumentType]
        assert streamfns.get_stream_fn("anthropic-messages") is mine
        streamfns.unregister_api("anthropic-messages")
        assert streamfns.get_stream_fn("anthropic-messages") is None
    finally:
        streamfns.register_api("anthropic-messages", original)


class _FakeEntryPoint:
    def __init__(self, name: str, value: str) -> None:
        self.name, self.value = name, value

    def load(self) -> object:
        module_name, _, attr = self.value.partition(":")
        module = importlib.import_module(module_name)
        return getattr(module, attr) if attr else module


@pytest.fixture
def plugins(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    entries = [
        _FakeEntryPoint("echo", "tests.kit.plugin:ADAPTER"),
        _FakeEntryPoint("broken", "tests.kit.does_not_exist:ADAPTER"),
        _FakeEntryPoint("clash", "tests.kit.plugin_clash.served:ADAPTER"),
        _FakeEntryPoint("anthropic-messages", "streamfns.anthropic"),  # the built-in's own entry: no clash
        _FakeEntryPoint("echo-clash", "tests.kit.plugin_clash:ADAPTER"),
    ]

    def entry_points(*, group: str) -> list[_FakeEntryPoint]:
        return entries if group == ENTRY_POINT_GROUP else []

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    saved_problems = list(_adapters._problems)  # pyright: ignore[reportPrivateUsage]
    _adapters.installed_adapters.cache_clear()
    catalog._index.cache_clear()  # pyright: ignore[reportPrivateUsage]
    monkeypatch.setattr(_registry, "_discovered", False)
    # The plugins' wire profiles are registered as they are found: put the profile registry back as
    # it was, so no later test finds an "echo" profile that only this fixture's entry points declare.
    saved_profiles = dict(wire_registry._registered)  # pyright: ignore[reportPrivateUsage]
    wire_registry._load_entry_points.cache_clear()  # pyright: ignore[reportPrivateUsage]
    yield
    _adapters.installed_adapters.cache_clear()
    catalog._index.cache_clear()  # pyright: ignore[reportPrivateUsage]
    _adapters._problems[:] = saved_problems  # pyright: ignore[reportPrivateUsage]
    streamfns.unregister_api("echo")
    wire_registry._registered.clear()  # pyright: ignore[reportPrivateUsage]
    wire_registry._registered.update(saved_profiles)  # pyright: ignore[reportPrivateUsage]
    wire_registry._load_entry_points.cache_clear()  # pyright: ignore[reportPrivateUsage]


@pytest.mark.usefixtures("plugins")
def test_installed_adapters_appear_in_the_registry_and_the_catalog() -> None:
    assert "echo" in streamfns.registered_apis()
    assert "echo-cloud" in list_providers()
    large = get_model("echo-cloud", "echo-large")
    assert (large.api, large.base_url, large.cost.input) == ("echo", "https://echo.example/v1", 1.5)
    assert get_model("echo-cloud", "echo-legacy").api == "echo-v0", "a model entry may name its own api"
    problems = streamfns.adapter_problems()
    assert any("'broken'" in problem and "failed to load" in problem for problem in problems), problems
    assert any("'clash'" in problem and "already served" in problem for problem in problems), problems
    assert not any("entry point 'anthropic-messages'" in problem for problem in problems), problems


@pytest.mark.usefixtures("plugins")
def test_a_plugin_catalog_that_repeats_a_builtin_model_is_skipped_and_named_never_raised() -> None:
    builtin = get_model("anthropic", "claude-sonnet-4-5")
    assert builtin.base_url == "https://api.anthropic.com", "the built-in entry wins"
    assert builtin.api == "anthropic-messages"
    anthropic = list_models("anthropic")
    assert [m.id for m in anthropic].count(builtin.id) == 1
    assert all(m.base_url != "https://clash.example/v1" for m in anthropic)
    assert get_model("echo-clash-cloud", "echo-small").context_window == 8000, "the plugin's own model stays"
    problems = streamfns.adapter_problems()
    assert any(
        "model anthropic/claude-sonnet-4-5 is listed twice" in problem
        and "tests.kit.plugin_clash/models.json is skipped" in problem
        for problem in problems
    ), problems
    assert any("echo-clash-cloud/echo-small is listed twice" in problem for problem in problems), problems


@pytest.mark.usefixtures("plugins")
def test_streamfns_models_names_the_skipped_entries_and_lists_the_rest(capsys: pytest.CaptureFixture[str]) -> None:
    from streamfns.cli import main

    assert main(["models", "anthropic"]) == 0
    out, err = capsys.readouterr()
    assert "anthropic/claude-sonnet-4-5" in out
    assert "clash.example" not in out
    assert "warning: model anthropic/claude-sonnet-4-5 is listed twice" in err


@pytest.mark.usefixtures("plugins")
def test_a_broken_plugin_catalog_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib.resources import files

    broken = files("tests.kit.plugin_clash").joinpath("served.py")  # not JSON
    real = catalog._catalog_files  # pyright: ignore[reportPrivateUsage]
    monkeypatch.setattr(catalog, "_catalog_files", lambda: iter([*real(), ("plugin/models.json", broken, False)]))
    catalog._index.cache_clear()  # pyright: ignore[reportPrivateUsage]
    assert "anthropic" in list_providers()
    assert any(
        "catalog plugin/models.json is skipped: plugin/models.json: not JSON" in p for p in streamfns.adapter_problems()
    )


@pytest.mark.usefixtures("plugins")
async def test_a_model_whose_adapter_failed_to_load_is_told_why() -> None:
    model = Model(id="m", api="broken-api", provider="p")
    result = await streamfns.stream(model, Context(messages=[UserMessage(content="hi")])).result()
    assert result.error_info is not None
    assert result.error_info.kind == "config"
    assert "no StreamFn is registered for api 'broken-api'" in (result.error_message or "")
    assert "'broken'" in (result.error_message or "")
    assert "failed to load" in (result.error_message or "")


def test_a_model_listed_in_two_catalogs_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib.resources import files

    builtin = files("streamfns").joinpath("anthropic", "models.json")
    monkeypatch.setattr(catalog, "_catalog_files", lambda: iter([("a.json", builtin, True), ("b.json", builtin, True)]))
    catalog._index.cache_clear()  # pyright: ignore[reportPrivateUsage]
    try:
        with pytest.raises(CatalogError, match=r"listed twice: in a\.json and b\.json"):
            list_providers()
    finally:
        catalog._index.cache_clear()  # pyright: ignore[reportPrivateUsage]
