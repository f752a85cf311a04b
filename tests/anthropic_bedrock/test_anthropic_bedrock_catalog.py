"""Claude on Bedrock in the catalog, the registry and the harness: its own provider, beside ConverseStream's."""

from __future__ import annotations

import re

import pytest

import streamfns
from conformance.targets import builtin_targets
from streamfns.anthropic_bedrock import stream_anthropic_bedrock
from streamfns.catalog import get_model, list_models

pytestmark = pytest.mark.parallel  # no I/O

BEDROCK_ID = re.compile(r"(?:(?:us|eu|global)\.)?anthropic\.claude-[a-z0-9-]+-v\d+(?::\d+)?")


def test_the_provider_lists_claude_ids_and_inference_profiles_with_prices() -> None:
    models = list_models("amazon-bedrock-anthropic")
    assert len(models) == 33
    assert {model.api for model in models} == {"anthropic-bedrock"}
    for model in models:
        assert BEDROCK_ID.fullmatch(model.id), model.id
        assert 0 < model.cost.cache_read < model.cost.input < model.cost.output
        assert model.max_tokens <= model.context_window
    prefixes = {model.id.split(".", 1)[0] for model in models}
    assert prefixes == {"us", "eu", "global", "anthropic"}
    profile = get_model("amazon-bedrock-anthropic", "global.anthropic.claude-opus-4-6-v1")
    assert (profile.cost.input, profile.cost.output, profile.compat) == (
        5,
        25,
        {"adaptive_thinking": True, "supports_temperature": True},
    )


def test_the_same_claude_id_stays_conversestreams_under_amazon_bedrock() -> None:
    model_id = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    assert get_model("amazon-bedrock-anthropic", model_id).api == "anthropic-bedrock"
    assert get_model("amazon-bedrock", model_id).api == "bedrock-converse-stream"


def test_the_registry_and_the_harness_know_the_api() -> None:
    assert streamfns.get_stream_fn("anthropic-bedrock") is stream_anthropic_bedrock
    assert builtin_targets()["anthropic-bedrock"].capabilities.api == "anthropic-bedrock"


@pytest.mark.parametrize(
    "model_id",
    [
        "anthropic.claude-opus-4-6-v1",
        "anthropic.claude-opus-4-5-20251101-v1:0",
        "anthropic.claude-sonnet-4-5-20250929-v1:0",
        "anthropic.claude-haiku-4-5-20251001-v1:0",
    ],
)
def test_regional_ids_of_newer_claude_models_carry_the_premium_and_global_does_not(model_id: str) -> None:
    # A regional endpoint (an in-region id or a us./eu. profile) costs 10% more than the global. profile
    # for Claude Sonnet 4.5, Haiku 4.5 and Opus 4.5 onwards; older models keep one price everywhere.
    in_region = get_model("amazon-bedrock-anthropic", model_id).cost
    for regional in (in_region, get_model("amazon-bedrock-anthropic", f"us.{model_id}").cost):
        base = get_model("amazon-bedrock-anthropic", f"global.{model_id}").cost
        for field in ("input", "output", "cache_read", "cache_write"):
            assert getattr(regional, field) == pytest.approx(1.1 * getattr(base, field)), field
    older = get_model("amazon-bedrock-anthropic", "anthropic.claude-sonnet-4-20250514-v1:0").cost
    assert older == get_model("amazon-bedrock-anthropic", "global.anthropic.claude-sonnet-4-20250514-v1:0").cost
