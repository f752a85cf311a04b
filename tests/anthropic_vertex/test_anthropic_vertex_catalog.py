"""Claude on Vertex AI in the catalog, the registry and the harness: one provider, Gemini and Claude."""

from __future__ import annotations

import pytest

import streamfns
from conformance.targets import builtin_targets
from streamfns.anthropic_vertex import stream_anthropic_vertex
from streamfns.catalog import get_model, list_models
from streamfns.cli import main

pytestmark = pytest.mark.parallel  # no I/O


def test_google_vertex_lists_gemini_and_claude() -> None:
    models = list_models("google-vertex")
    claude = [model for model in models if model.api == "anthropic-vertex"]
    assert {model.api for model in models} == {"google-generative-ai", "anthropic-vertex"}
    assert len(claude) == 9
    for model in claude:
        assert model.provider == "google-vertex"
        assert model.base_url == ""  # derived from the location
        assert model.id.startswith("claude-")
        assert "@" in model.id or model.id == "claude-opus-4-6"
        assert 0 < model.cost.cache_read < model.cost.input < model.cost.output
        assert model.max_tokens <= model.context_window
        assert "image" in model.input
    sonnet = get_model("google-vertex", "claude-sonnet-4-5@20250929")
    assert (sonnet.api, sonnet.cost.input, sonnet.cost.output, sonnet.reasoning) == ("anthropic-vertex", 3, 15, True)
    assert sonnet.compat == {
        "adaptive_thinking": False,
        "supports_temperature": True,
        "interleaved_thinking": True,
        "regional_price_multiplier": 1.1,
    }


def test_the_models_command_shows_both(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "google-vertex"]) == 0
    out = capsys.readouterr().out
    assert "google-vertex/claude-sonnet-4-5@20250929  anthropic-vertex" in out
    assert "google-vertex/gemini-2.5-pro" in out


def test_the_registry_and_the_harness_know_the_api() -> None:
    assert streamfns.get_stream_fn("anthropic-vertex") is stream_anthropic_vertex
    assert builtin_targets()["anthropic-vertex"].capabilities.api == "anthropic-vertex"
