"""The Google package's declaration: catalog, registry, demo recordings and conformance target."""

from __future__ import annotations

import pytest

import streamfns
from cassettes import library
from conformance.targets import builtin_targets
from normalize import Context, StreamOptions, UserMessage
from streamfns.catalog import get_model, list_models
from streamfns.google import ADAPTER, stream_google

CURRENT = (
    "gemini-3.1-pro-preview",
    "gemini-3-pro-preview",
    "gemini-3-flash-preview",
    "gemini-2.5-pro",
    "gemini-2.5-flash",
    "gemini-2.5-flash-lite",
)


def test_the_catalog_lists_current_gemini_models_on_both_endpoints_with_sane_prices() -> None:
    for provider, base_url in (("google", "https://generativelanguage.googleapis.com/v1beta"), ("google-vertex", "")):
        # google-vertex also serves Claude (api anthropic-vertex, its own catalog): only Gemini is checked here.
        models = {model.id: model for model in list_models(provider) if model.api == "google-generative-ai"}
        assert set(CURRENT) <= set(models)
        for model in models.values():
            assert model.api == "google-generative-ai"
            assert model.base_url == base_url
            assert model.max_tokens <= model.context_window
            assert 0 < model.cost.cache_read < model.cost.input < model.cost.output or model.cost.cache_read == 0
            assert model.cost.input > 0
            assert "image" in model.input
            if model.id.startswith(("gemini-2.5", "gemini-3")):
                assert model.reasoning
    assert get_model("google", "gemini-2.5-flash").cost.output == 2.5


def test_the_registry_and_the_harness_know_the_api() -> None:
    assert "google-generative-ai" in streamfns.registered_apis()
    assert streamfns.get_stream_fn("google-generative-ai") is stream_google
    assert builtin_targets()["google-generative-ai"].capabilities.api == "google-generative-ai"


def test_the_demo_names_a_thinking_and_a_function_call_recording() -> None:
    assert len(ADAPTER.demo) == 2
    for name, what, prompt in ADAPTER.demo:
        assert library.load(name).interactions[0].response.status == 200
        assert what
        assert prompt


@pytest.mark.parametrize("provider", ["google", "google-vertex"])
async def test_catalog_models_stream_through_the_registry(provider: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION"):
        monkeypatch.delenv(name, raising=False)
    model = get_model(provider, "gemini-2.5-flash")
    model.base_url = "http://127.0.0.1:9/v1"  # refused: nothing listens there
    result = await streamfns.stream(
        model, Context(messages=[UserMessage(content="hi")]), StreamOptions(api_key="test-key", max_retries=0)
    ).result()
    assert result.error_info is not None
    # The Gemini API gets as far as the network; Vertex stops first, for want of a project.
    assert result.error_info.kind == ("network" if provider == "google" else "config")
