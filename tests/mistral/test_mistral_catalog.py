"""Mistral in the catalog, the registry, the entry points and the harness: provider ``mistral`` is the
native api now, and the recordings its declaration names are bundled."""

from __future__ import annotations

import importlib.metadata

import pytest

import conformance.targets
import streamfns
from cassettes import library
from conformance.targets import builtin_targets
from streamfns.catalog import list_models
from streamfns.kit import parse_compat
from streamfns.mistral import ADAPTER, MistralCompat, stream_mistral
from tests.adapters import texts
from tests.mistral._mistral import MISTRAL

pytestmark = pytest.mark.parallel  # no I/O

IDS = {
    "mistral-large-latest",
    "mistral-medium-latest",
    "mistral-small-latest",
    "codestral-latest",
    "magistral-medium-latest",
    "magistral-small-latest",
}


def test_provider_mistral_is_served_by_the_native_api() -> None:
    models = list_models("mistral")
    assert {model.id for model in models} == IDS
    for model in models:
        where = model.id
        assert (model.api, model.base_url) == ("mistral-conversations", "https://api.mistral.ai/v1"), where
        assert 0 < model.max_tokens <= model.context_window, where
        assert 0 <= model.cost.cache_read < model.cost.input < model.cost.output, where
        compat = parse_compat(MistralCompat, model.compat)  # the request would refuse a mistake
        if model.reasoning:
            assert model.thinking_level_map is not None, where
            effort = compat.reasoning_style == "effort"
            assert (model.thinking_level_map.get("off") == "none") == effort, where
        else:
            assert model.thinking_level_map is None, where
    large = streamfns.get_model("mistral", "mistral-large-latest")
    assert (large.cost.input, large.cost.output, large.cost.cache_read, large.context_window) == (
        0.5,
        1.5,
        0.05,
        262144,
    )
    assert large.input == ["text", "image"]


def test_the_registry_the_entry_point_and_the_harness_know_the_api() -> None:
    assert streamfns.get_stream_fn("mistral-conversations") is stream_mistral
    assert "mistral-conversations" in streamfns.registered_apis()
    entries = {e.name: e.value for e in importlib.metadata.entry_points(group="streamfns.adapters")}
    assert entries["mistral-conversations"] == "streamfns.mistral:ADAPTER"
    assert builtin_targets()["mistral-conversations"].capabilities.api == "mistral-conversations"
    assert conformance.targets.mistral in builtin_targets().values()


def test_the_recordings_the_declaration_names_are_bundled() -> None:
    assert ADAPTER.profile is not None
    named = [*ADAPTER.profile.recordings.values(), *(name for name, _, _ in ADAPTER.demo)]
    for name in named:
        assert library.load(name).api == "mistral-conversations", name


async def test_streamfns_stream_dispatches_a_catalog_model_here() -> None:
    cassette = library.load("prism__stream_basic_text_1_1_mistral-small-latest")
    _, message = await MISTRAL.replay(cassette, streamfns.get_model("mistral", "mistral-small-latest"))
    assert texts(message) == "I'm a large language model created by Mistral AI."
    assert (message.api, message.provider) == ("mistral-conversations", "mistral")
    assert message.usage.cost.input == pytest.approx(7 * 0.15 / 1e6)
