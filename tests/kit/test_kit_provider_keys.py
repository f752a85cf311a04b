"""The kit's naming rules shared by adapters: a provider's ``<PROVIDER>_API_KEY`` variable and the
length-capped prompt-cache key; and the two OpenAI adapters that use them agreeing."""

from __future__ import annotations

import hashlib

import pytest

from normalize import Model
from streamfns.kit import ApiKey, prompt_cache_key, provider_key_env
from streamfns.kit.keys import PROMPT_CACHE_KEY_MAX
from streamfns.openai_completions.compat import api_key_for as completions_key
from streamfns.openai_responses import api_key_for as responses_key


@pytest.mark.parametrize(
    ("provider", "expected"),
    [
        ("acme", ("ACME_API_KEY",)),
        ("Acme", ("ACME_API_KEY",)),
        ("my-gateway", ("MY_GATEWAY_API_KEY",)),
        ("-edge-", ("EDGE_API_KEY",)),  # the Responses rule once made this _EDGE__API_KEY
        ("a..b  c", ("A_B_C_API_KEY",)),  # a run of unsafe characters is one underscore
        ("llama.cpp", ("LLAMA_CPP_API_KEY",)),
        ("café", ("CAF_API_KEY",)),  # only ASCII letters and digits reach the variable name
        ("x\n=$(rm)", ("X_RM_API_KEY",)),  # nothing a shell or an env file would read as syntax
        ("", ()),
        ("---", ()),
        ("ü", ()),
    ],
)
def test_provider_key_env(provider: str, expected: tuple[str, ...]) -> None:
    assert provider_key_env(provider) == expected
    for name in expected:
        assert name.isascii()
        assert name.replace("_", "").isalnum()


def test_provider_key_env_plugs_into_an_api_key_rule() -> None:
    assert ApiKey(env=provider_key_env("my-gateway")).env == ("MY_GATEWAY_API_KEY",)


def test_prompt_cache_key_keeps_short_session_ids_and_digests_long_ones() -> None:
    assert prompt_cache_key("session-42") == "session-42"
    exact = "s" * PROMPT_CACHE_KEY_MAX
    assert prompt_cache_key(exact) == exact
    long_id = "s" * (PROMPT_CACHE_KEY_MAX + 1)
    key = prompt_cache_key(long_id)
    assert len(key) == PROMPT_CACHE_KEY_MAX
    assert key == "sfn_" + hashlib.sha256(long_id.encode()).hexdigest()[: PROMPT_CACHE_KEY_MAX - 4]
    assert key == prompt_cache_key(long_id)  # stable: the same session keeps its cache
    assert prompt_cache_key(long_id + "x") != key
    # Non-ASCII and lone surrogates are digested, never an encoding error.
    assert len(prompt_cache_key("é" * 100)) == PROMPT_CACHE_KEY_MAX
    assert prompt_cache_key("\ud800" * 100).startswith("sfn_")


def test_prompt_cache_key_with_another_cap() -> None:
    assert len(prompt_cache_key("x" * 100, max_length=32)) == 32
    assert prompt_cache_key("x" * 32, max_length=32) == "x" * 32
    with pytest.raises(ValueError, match="no room"):
        prompt_cache_key("x" * 100, max_length=10)


def _model(api: str, provider: str) -> Model:
    return Model(id="m", api=api, provider=provider, base_url="https://gw.example/v1")


@pytest.mark.parametrize("provider", ["my-gateway", "-edge-", "Acme", "a..b  c"])
def test_both_openai_adapters_name_the_same_variable(provider: str) -> None:
    assert completions_key(_model("openai-completions", provider)).env == provider_key_env(provider)
    assert responses_key(_model("openai-responses", provider)).env == provider_key_env(provider)


@pytest.mark.parametrize("provider", ["azure", "Azure", "AZURE-openai-responses", "azure-openai-responses"])
def test_responses_sends_azure_keys_in_the_api_key_header_whatever_the_case(provider: str) -> None:
    rule = responses_key(_model("openai-responses", provider))
    assert rule.env == ("AZURE_OPENAI_API_KEY",)
    assert rule.headers("test-key") == {"api-key": "test-key"}


def test_responses_names_no_variable_for_a_provider_without_letters() -> None:
    # No guessed variable (it was OPENAI_COMPATIBLE_API_KEY): the key must be given explicitly.
    assert responses_key(_model("openai-responses", "---")).env == ()
    assert responses_key(_model("openai-responses", "OpenAI")).env == ("OPENAI_API_KEY",)
