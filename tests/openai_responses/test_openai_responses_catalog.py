"""The Responses catalog: OpenAI's reasoning models and Azure as its own provider, and the CLI picking
this api for them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from streamfns import cli
from streamfns.catalog import get_model, list_models
from streamfns.openai_responses.request import AZURE_BASE_URL_PLACEHOLDER

pytestmark = pytest.mark.parallel

CATALOG = Path(__file__).resolve().parents[2] / "streamfns" / "openai_responses" / "models.json"
#: OpenAI's chat models belong to the chat-completions catalog, never here.
CHAT_MODELS = ("gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano")


def entries() -> list[tuple[str, dict[str, Any]]]:
    document = json.loads(CATALOG.read_text(encoding="utf-8"))
    assert document["api"] == "openai-responses"
    return [(group["provider"], model) for group in document["providers"] for model in group["models"]]


def test_the_catalog_holds_openai_and_azure() -> None:
    providers = {provider for provider, _ in entries()}
    assert providers == {"openai", "azure-openai-responses", "github-copilot"}
    openai_ids = {model.id for model in list_models("openai") if model.api == "openai-responses"}
    assert {
        "gpt-5",
        "gpt-5-mini",
        "gpt-5-nano",
        "gpt-5.1",
        "gpt-5-codex",
        "o1",
        "o3",
        "o3-mini",
        "o4-mini",
    } <= openai_ids


@pytest.mark.parametrize("model_id", CHAT_MODELS)
def test_chat_models_are_not_listed_here(model_id: str) -> None:
    names = {name for _, entry in entries() for name in (entry["id"], *entry.get("aliases", []))}
    assert model_id not in names


def test_every_entry_is_a_priced_reasoning_model_with_limits() -> None:
    for provider, entry in entries():
        model = get_model(provider, entry["id"])
        assert model.api == "openai-responses"
        assert model.reasoning
        if model.cost.basis == "subscription":
            continue  # Copilot's plan models: tests/github_copilot/test_copilot_catalog.py
        assert model.cost.input > 0
        assert model.cost.output > model.cost.input
        assert 0 < model.cost.cache_read < model.cost.input
        assert 0 < model.max_tokens < model.context_window
        assert set(model.input) <= {"text", "image"}


def test_dated_snapshots_resolve_to_the_canonical_model() -> None:
    assert get_model("openai", "gpt-5-2025-08-07").id == "gpt-5"
    assert get_model("openai", "o4-mini-2025-04-16").id == "o4-mini"
    assert get_model("openai", "gpt-5.6").id == "gpt-5.6-sol"


def test_azure_is_its_own_provider_on_the_placeholder_base_url() -> None:
    azure = get_model("azure-openai-responses", "gpt-5")
    assert azure.base_url == AZURE_BASE_URL_PLACEHOLDER
    assert azure.api == "openai-responses"


def test_models_that_cannot_stop_reasoning_refuse_temperature() -> None:
    for provider, entry in entries():
        model = get_model(provider, entry["id"])
        off = (model.thinking_level_map or {}).get("off", "none")
        assert ((model.compat or {}).get("supports_temperature", True)) is (off == "none"), model.id


def test_the_cli_streams_openai_reasoning_models_through_this_api(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Without a key nothing is sent, and the error names the adapter and the variable it read.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert cli.main(["chat", "--model", "openai/gpt-5", "hello"]) == 1
    out = capsys.readouterr()
    assert "no OpenAI Responses API key" in out.out + out.err
    assert "OPENAI_API_KEY" in out.out + out.err
