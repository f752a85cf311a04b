"""Compat profiles (chosen from the provider, the host, or ``compat["profile"]``, overridable per
model) and the catalog."""

from __future__ import annotations

import re
from typing import Any

import pytest

import streamfns
from normalize import Context, StreamOptions, UserMessage
from streamfns.catalog import list_models
from streamfns.kit import CompatError
from streamfns.openai_completions import stream_openai_completions
from streamfns.openai_completions.compat import PROFILES, api_key_for, compat_for, profile_name_for
from tests.adapters import OPENAI_COMPLETIONS as OC

pytestmark = pytest.mark.parallel


@pytest.mark.parametrize(
    ("provider", "base_url", "expected"),
    [
        ("openai", "https://gateway.example/v1", "openai"),  # the provider says who it is
        ("x-ai", "", "xai"),
        ("dashscope", "", "qwen"),
        ("llama.cpp", "", "llamacpp"),
        ("custom", "https://api.groq.com/openai/v1", "groq"),
        ("custom", "https://eu.api.deepseek.com/v1", "deepseek"),  # a subdomain of a known host
        ("custom", "https://openrouter.ai/api/v1", "openrouter"),
        ("custom", "https://myorg.snowflakecomputing.com/api/v2/cortex/v1", "snowflake"),
        ("custom", "http://127.0.0.1:8000/v1", "local"),
        ("custom", "http://localhost:11434/v1", "local"),
        ("custom", "https://notgroq.com/v1", "generic"),  # a suffix match needs a dot
        ("custom", "not a url at all", "generic"),
    ],
)
def test_the_profile_comes_from_the_provider_then_the_host(provider: str, base_url: str, expected: str) -> None:
    assert profile_name_for(OC.model(base_url=base_url, provider=provider)) == expected


def test_compat_profile_names_the_starting_point_and_keys_override_single_fields() -> None:
    target = OC.model(
        base_url="https://llm.acme.test/v1",
        provider="acme",
        compat={"profile": "deepseek", "max_tokens_field": "max_completion_tokens"},
    )
    compat = compat_for(target)
    assert compat.profile == "deepseek"
    assert compat.thinking_format == "deepseek"
    assert compat.max_tokens_field == "max_completion_tokens"
    assert compat.key_env == ("DEEPSEEK_API_KEY",)


@pytest.mark.parametrize(
    ("compat", "message"),
    [
        ({"profile": "nope"}, "must be one of"),
        ({"profile": 3}, "must be one of"),
        ({"thinking_fromat": "qwen"}, "unknown Model.compat key 'thinking_fromat'"),
        ({"thinking_format": "nope"}, "thinking_format"),
        ({"usage_in_stream": "yes"}, "usage_in_stream"),
        ({"finish_reasons": {"done": "finished"}}, "finish_reasons must map"),
        ({"reasoning_fields": []}, "reasoning_fields"),
        ({"reasoning_fields": [""]}, "reasoning_fields"),
        ({"strict_tools": True, "supports_strict_tools": False}, "strict_tools"),
    ],
)
def test_compat_mistakes_are_refused_with_a_message_naming_them(compat: dict[str, Any], message: str) -> None:
    with pytest.raises(CompatError, match=re.escape(message)):
        compat_for(OC.model(compat=compat))


def test_openrouter_anthropic_models_get_cache_markers() -> None:
    assert compat_for(
        OC.model(base_url="https://openrouter.ai/api/v1", id="anthropic/claude-haiku-4.5", provider="openrouter")
    ).cache_control
    assert not compat_for(
        OC.model(base_url="https://openrouter.ai/api/v1", id="openai/gpt-4o", provider="openrouter")
    ).cache_control
    off = OC.model(
        base_url="https://openrouter.ai/api/v1",
        id="anthropic/x",
        provider="openrouter",
        compat={"cache_control": False},
    )
    assert not compat_for(off).cache_control


@pytest.mark.parametrize(
    ("provider", "base_url", "env", "required"),
    [
        ("openai", "", ("OPENAI_API_KEY",), True),
        ("groq", "", ("GROQ_API_KEY",), True),
        ("xai", "", ("XAI_API_KEY",), True),
        ("deepseek", "", ("DEEPSEEK_API_KEY",), True),
        ("openrouter", "", ("OPENROUTER_API_KEY",), True),
        ("mistral", "", ("MISTRAL_API_KEY",), True),
        ("together", "", ("TOGETHER_API_KEY",), True),
        ("fireworks", "", ("FIREWORKS_API_KEY",), True),
        ("cerebras", "", ("CEREBRAS_API_KEY",), True),
        ("moonshot", "", ("MOONSHOT_API_KEY",), True),
        ("zai", "", ("ZAI_API_KEY",), True),
        ("qwen", "", ("DASHSCOPE_API_KEY",), True),
        ("vllm", "", ("VLLM_API_KEY",), False),
        ("ollama", "", ("OLLAMA_API_KEY",), False),  # an alias of ollama-openai for a hand-built /v1 model
        ("ollama-openai", "", ("OLLAMA_API_KEY",), False),
        ("lmstudio", "", ("LM_API_TOKEN",), False),
        ("llamacpp", "", ("LLAMA_API_KEY",), False),
        ("my-gateway", "https://gw.example/v1", ("MY_GATEWAY_API_KEY",), True),
        ("my-box", "http://localhost:9000/v1", ("MY_BOX_API_KEY",), False),
    ],
)
def test_the_key_variable_per_provider(provider: str, base_url: str, env: tuple[str, ...], required: bool) -> None:
    rule = api_key_for(OC.model(base_url=base_url, provider=provider))
    assert (rule.env, rule.required, rule.header, rule.scheme) == (env, required, "authorization", "Bearer")


async def test_a_broken_compat_is_the_error_reported_even_without_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    # The kit builds the request (which checks compat) before it asks for the key, so the mistake
    # that matters is named, not hidden behind "set GROQ_API_KEY".
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    with pytest.raises(CompatError, match="bogus"):
        api_key_for(OC.model(base_url="https://api.groq.com/openai/v1", provider="groq", compat={"bogus": 1}))
    broken = OC.model(base_url="https://api.groq.com/openai/v1", provider="groq", compat={"bogus": 1})
    stream = stream_openai_completions(broken, Context(messages=[UserMessage(content="hi")]), StreamOptions())
    result = await stream.result()
    assert result.error_info is not None
    assert result.error_info.kind == "config"
    assert "bogus" in (result.error_message or "")


def test_every_named_profile_is_valid() -> None:
    for name, profile in PROFILES.items():
        assert profile.profile == name
        assert compat_for(OC.model(compat={"profile": name})).profile == name


# ------------------------------------------------------------------------------------ the catalog

CHAT_PROVIDERS = [
    "openai",
    "groq",
    "xai",
    "deepseek",
    "openrouter",
    "together",
    "fireworks",
    "cerebras",
    "moonshot",
    "zai",
    "qwen",
    "vllm",
    "ollama-openai",
    "lmstudio",
    "llamacpp",
]
#: The Responses adapter owns these OpenAI ids; the chat catalog must never list them.
RESPONSES_IDS = re.compile(r"^(gpt-5|o\d|codex|.*codex)")


def ours() -> list[Any]:
    return [m for m in list_models() if m.api == "openai-completions"]


def test_the_catalog_has_a_representative_set_per_provider() -> None:
    by_provider: dict[str, list[str]] = {}
    for entry in ours():
        by_provider.setdefault(entry.provider, []).append(entry.id)
    assert set(CHAT_PROVIDERS) <= set(by_provider)
    for provider in CHAT_PROVIDERS:
        assert by_provider[provider], provider
    assert {"gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano"} <= set(by_provider["openai"])


def test_mistral_models_are_the_native_apis_not_listed_here() -> None:
    # Provider mistral is served by mistral-conversations (streamfns.mistral); its profile here stays for
    # gateways that speak Mistral's dialect of chat completions (compat={"profile": "mistral"}).
    assert [m.id for m in ours() if m.provider == "mistral"] == []
    assert streamfns.get_model("mistral", "mistral-large-latest").api == "mistral-conversations"


def test_no_openai_reasoning_or_codex_model_is_listed_here() -> None:
    listed = [m.id for m in ours() if m.provider == "openai"]
    assert not [i for i in listed if RESPONSES_IDS.match(i)]


def test_every_entry_is_usable() -> None:
    for entry in ours():
        where = f"{entry.provider}/{entry.id}"
        compat = compat_for(entry)  # parses, or the request would be refused
        assert entry.base_url.startswith(("https://", "http://localhost")), where
        assert 0 < entry.max_tokens <= entry.context_window, where
        cost = entry.cost
        assert min(cost.input, cost.output, cost.cache_read, cost.cache_write) >= 0, where
        if entry.base_url.startswith("http://localhost"):
            assert not compat.key_required, where
            assert cost.input == cost.output == 0, where
        if entry.thinking_level_map is not None:
            assert entry.reasoning, f"{where}: a level map on a model that does not reason"


@pytest.mark.parametrize(
    ("provider", "model_id"),
    [
        ("openai", "gpt-4o"),
        ("groq", "llama-3.3-70b-versatile"),
        ("xai", "grok-4-0709"),  # an alias
        ("deepseek", "deepseek-reasoner"),
        ("openrouter", "anthropic/claude-sonnet-4.5"),
        ("ollama-openai", "qwen3:8b"),
    ],
)
def test_get_model_finds_chat_models(provider: str, model_id: str) -> None:
    found = streamfns.get_model(provider, model_id)
    assert found.api == "openai-completions"
    assert found.provider == provider


def test_the_registry_serves_the_api() -> None:
    assert "openai-completions" in streamfns.registered_apis()
