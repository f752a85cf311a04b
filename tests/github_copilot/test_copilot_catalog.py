"""The ``github-copilot`` provider in the catalog: each model on the api Copilot serves it on, at
Copilot's endpoint, priced as a plan (``subscription``) — and the request shaping those apis give it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from normalize import Context, StreamOptions, UserMessage
from streamfns import cli
from streamfns.anthropic import ANTHROPIC_KEY, COPILOT_KEY, api_key_for
from streamfns.anthropic.request import build_request as build_messages
from streamfns.catalog import get_model, list_models, list_providers, model_from_spec
from streamfns.openai_completions.compat import compat_for, profile_name_for
from streamfns.openai_completions.request import build_request as build_chat
from streamfns.openai_responses.request import build_request as build_responses

pytestmark = pytest.mark.parallel

ROOT = Path(__file__).resolve().parents[2]
COPILOT = "github-copilot"
BASE_URL = "https://api.individual.githubcopilot.com"
CATALOGS = {
    "anthropic-messages": ROOT / "streamfns" / "anthropic" / "models.json",
    "openai-responses": ROOT / "streamfns" / "openai_responses" / "models.json",
    "openai-completions": ROOT / "streamfns" / "openai_completions" / "models.json",
}
#: The same model on its vendor's own api (provider, id): a Copilot entry's rates are that list price.
VENDOR_MODEL = {
    "claude-haiku-4.5": ("anthropic", "claude-haiku-4-5"),
    "claude-opus-4.5": ("anthropic", "claude-opus-4-5"),
    "claude-opus-4.6": ("anthropic", "claude-opus-4-6"),
    "claude-sonnet-4": ("anthropic", "claude-sonnet-4-0"),
    "claude-sonnet-4.5": ("anthropic", "claude-sonnet-4-5"),
    "claude-sonnet-4.6": ("anthropic", "claude-sonnet-4-6"),
    "gemini-2.5-pro": ("google", "gemini-2.5-pro"),
    "gemini-3-flash-preview": ("google", "gemini-3-flash-preview"),
    "gemini-3-pro-preview": ("google", "gemini-3-pro-preview"),
    "gemini-3.1-pro-preview": ("google", "gemini-3.1-pro-preview"),
    "gpt-4.1": ("openai", "gpt-4.1"),
    "gpt-4o": ("openai", "gpt-4o"),
    "grok-code-fast-1": ("xai", "grok-code-fast-1"),
    "gpt-5": ("openai", "gpt-5"),
    "gpt-5-mini": ("openai", "gpt-5-mini"),
    "gpt-5.1": ("openai", "gpt-5.1"),
    "gpt-5.1-codex": ("openai", "gpt-5.1-codex"),
    "gpt-5.1-codex-max": ("openai", "gpt-5.1-codex-max"),
    "gpt-5.1-codex-mini": ("openai", "gpt-5.1-codex-mini"),
    "gpt-5.2": ("openai", "gpt-5.2"),
    "gpt-5.4": ("openai", "gpt-5.4"),
}
CONTEXT = Context(messages=[UserMessage(content="Hello")])


def copilot_entries() -> list[tuple[str, dict[str, Any]]]:
    """(api, entry) for every model of a github-copilot group, read from the files themselves."""
    found: list[tuple[str, dict[str, Any]]] = []
    for path in CATALOGS.values():
        document = json.loads(path.read_text(encoding="utf-8"))
        for group in document["providers"]:
            if group["provider"] == COPILOT:
                assert group["base_url"] == BASE_URL
                found.extend((entry.get("api", document["api"]), entry) for entry in group["models"])
    return found


def routed_api(model_id: str) -> str:
    """The api pi-ai's catalog generator routes a Copilot model id to."""
    if re.match(r"^claude-(haiku|sonnet|opus)-4([.\-]|$)", model_id):
        return "anthropic-messages"
    if model_id.startswith("gpt-5"):
        return "openai-responses"
    return "openai-completions"


def test_each_model_is_on_the_api_copilot_serves_it_on() -> None:
    entries = copilot_entries()
    assert len(entries) == 23
    assert {api for api, _ in entries} == set(CATALOGS)
    for api, entry in entries:
        assert api == routed_api(entry["id"]), entry["id"]
        model = get_model(COPILOT, entry["id"])
        assert (model.api, model.provider, model.base_url) == (api, COPILOT, BASE_URL)
        assert 0 < model.max_tokens <= model.context_window
        assert model.input in (["text", "image"], ["text"])
        assert entry.get("note"), "every figure of a Copilot entry says where it comes from"
    assert COPILOT in list_providers()
    assert {model.id for model in list_models(COPILOT)} == {entry["id"] for _, entry in entries}


def test_every_copilot_model_is_priced_as_a_plan_never_unknown_or_a_bare_zero() -> None:
    for _, entry in copilot_entries():
        assert entry["cost"]["basis"] == "subscription", entry["id"]
        model = get_model(COPILOT, entry["id"])
        assert model.cost.basis == "subscription"
        assert model.cost.known


@pytest.mark.parametrize(("copilot_id", "vendor"), sorted(VENDOR_MODEL.items()))
def test_rates_given_are_the_vendors_list_price_for_the_same_model(copilot_id: str, vendor: tuple[str, str]) -> None:
    copilot = get_model(COPILOT, copilot_id).cost
    listed = get_model(*vendor).cost
    assert listed.basis == "metered"
    assert (copilot.input, copilot.output, copilot.cache_read) == (listed.input, listed.output, listed.cache_read)
    assert copilot.cache_write in (0.0, listed.cache_write)
    assert copilot.input > 0


def test_models_without_a_list_price_carry_no_rates() -> None:
    unlisted = [entry["id"] for _, entry in copilot_entries() if entry["id"] not in VENDOR_MODEL]
    assert sorted(unlisted) == ["gpt-5.2-codex", "gpt-5.3-codex"]
    for model_id in unlisted:
        cost = get_model(COPILOT, model_id).cost
        assert (cost.basis, cost.input, cost.output) == ("subscription", 0.0, 0.0)


def test_the_models_command_lists_them_as_paid_by_the_plan(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["models", COPILOT]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith(f"{COPILOT}/")]
    assert len(lines) == 23
    for line in lines:
        assert " plan " in line, line
        assert "unknown" not in line
        assert "$0" not in line


def test_a_command_line_spec_resolves_to_the_catalog_entry() -> None:
    model = model_from_spec("github-copilot/claude-sonnet-4.5")
    assert (model.api, model.id, model.base_url) == ("anthropic-messages", "claude-sonnet-4.5", BASE_URL)
    assert model_from_spec("github-copilot/gpt-5.3-codex").api == "openai-responses"
    assert model_from_spec("github-copilot/grok-code-fast-1").api == "openai-completions"


# ------------------------------------------------------------------------------------ request shaping


def test_responses_models_send_no_reasoning_effort_when_none_is_asked_for() -> None:
    model = get_model(COPILOT, "gpt-5.3-codex")
    request = build_responses(model, CONTEXT, StreamOptions())
    assert request.url == f"{BASE_URL}/responses"
    assert "reasoning" not in request.payload, "Copilot takes no effort 'none' (pi-ai leaves reasoning out)"
    assert "temperature" not in build_responses(model, CONTEXT, StreamOptions(temperature=0.2)).payload
    high = build_responses(model, CONTEXT, StreamOptions(reasoning="high")).payload
    assert high["reasoning"] == {"effort": "high", "summary": "auto"}
    # An OpenAI model on OpenAI's own api still turns reasoning off explicitly.
    assert build_responses(get_model("openai", "gpt-5.1"), CONTEXT, StreamOptions()).payload["reasoning"] == {
        "effort": "none"
    }


def test_chat_models_use_copilots_profile_no_effort_no_developer_role_no_store() -> None:
    model = get_model(COPILOT, "gemini-3-pro-preview")
    compat = compat_for(model)
    assert compat.profile == COPILOT
    assert (compat.reasoning_effort, compat.thinking_format, compat.developer_role, compat.store) == (
        False,
        "none",
        False,
        False,
    )
    context = Context(system_prompt="Be brief.", messages=[UserMessage(content="Hello")])
    request = build_chat(model, context, StreamOptions(reasoning="high"))
    assert request.url == f"{BASE_URL}/chat/completions"
    payload = request.payload
    assert "reasoning_effort" not in payload
    assert "reasoning" not in payload
    assert "store" not in payload
    assert payload["messages"][0]["role"] == "system"


@pytest.mark.parametrize(
    "base_url",
    ["https://api.individual.githubcopilot.com", "https://api.business.githubcopilot.com", "https://githubcopilot.com"],
)
def test_a_hand_built_model_at_a_copilot_host_gets_copilots_profile(base_url: str) -> None:
    model = get_model(COPILOT, "gpt-4.1")
    model.provider = "my-copilot-proxy"
    model.base_url = base_url
    assert profile_name_for(model) == COPILOT


def test_other_spellings_of_the_provider_get_copilots_profile() -> None:
    model = get_model(COPILOT, "gpt-4.1")
    for spelling in ("copilot", "GitHub-Copilot", "github_copilot"):
        model.provider = spelling
        model.base_url = "https://proxy.example.test/v1"
        assert profile_name_for(model) == COPILOT, spelling


def test_claude_models_take_a_copilot_token_as_a_bearer_never_anthropics_key() -> None:
    model = get_model(COPILOT, "claude-sonnet-4.5")
    assert api_key_for(model) is COPILOT_KEY
    assert COPILOT_KEY.headers("tid=fake") == {"authorization": "Bearer tid=fake"}
    assert COPILOT_KEY.env == (), "ANTHROPIC_API_KEY must never reach Copilot's host"
    assert api_key_for(get_model("anthropic", "claude-sonnet-4-5")) is ANTHROPIC_KEY


def test_claude_models_ask_for_no_one_hour_cache_at_copilot() -> None:
    model = get_model(COPILOT, "claude-sonnet-4.5")
    request = build_messages(model, CONTEXT, StreamOptions(cache_retention="long"))
    assert request.url == f"{BASE_URL}/v1/messages"
    markers = json.dumps(request.payload)
    assert '"ttl"' not in markers
    assert "ephemeral" in markers
    on_anthropic = build_messages(
        get_model("anthropic", "claude-sonnet-4-5"), CONTEXT, StreamOptions(cache_retention="long")
    )
    assert '"ttl": "1h"' in json.dumps(on_anthropic.payload)
