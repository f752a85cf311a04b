"""Ollama Cloud is paid by a plan: a model the catalog prices ``free`` (a server of your own) is
``subscription`` when it is sent to, or was recorded on, ``ollama.com`` — by the one rule the Ollama
adapter owns (``streamfns.ollama.is_cloud_host``), which its key and its server listing use too."""

from __future__ import annotations

import pytest

from normalize import Model
from streamfns.catalog import get_model, model_for_recording, model_from_spec
from streamfns.ollama import api_key_for, is_cloud_host

pytestmark = pytest.mark.parallel  # clock-blind: no socket, sleep or timeout


@pytest.mark.parametrize(
    ("host", "cloud"),
    [
        ("ollama.com", True),
        ("eu.ollama.com", True),
        ("OLLAMA.COM", True),
        ("ollama.com.", True),
        ("localhost", False),
        ("notollama.com", False),
        ("ollama.com.evil.example", False),
        ("", False),
        (None, False),
    ],
)
def test_the_cloud_is_ollama_com_and_its_subdomains(host: str | None, cloud: bool) -> None:
    assert is_cloud_host(host) is cloud


def test_the_key_follows_the_same_rule() -> None:
    def key(base_url: str) -> bool:
        return api_key_for(Model(id="m", api="ollama-chat", provider="ollama", base_url=base_url)).required

    assert (key("https://ollama.com"), key("https://EU.ollama.com/"), key("http://box:11434")) == (True, True, False)


@pytest.mark.parametrize("host", ["ollama.com", "eu.ollama.com"])
def test_a_recording_made_on_the_cloud_was_paid_by_the_plan(host: str) -> None:
    pulled = model_for_recording("ollama-chat", "gpt-oss:120b", host=host)  # the catch-all answers
    assert (pulled.provider, pulled.cost.basis) == ("ollama", "subscription")
    listed = model_for_recording("ollama-chat", "gpt-oss:20b", host=host)  # a listed id
    assert (listed.name, listed.cost.basis) == ("GPT-OSS 20B (Ollama)", "subscription")


def test_a_recording_made_on_your_own_server_stays_free() -> None:
    assert model_for_recording("ollama-chat", "gpt-oss:120b", host="localhost").cost.basis == "free"
    assert model_for_recording("ollama-chat", "gpt-oss:120b").cost.basis == "free"


def test_a_model_sent_to_the_cloud_is_priced_for_it() -> None:
    cloud = get_model("ollama", "gpt-oss:120b", base_url="https://ollama.com")
    assert (cloud.base_url, cloud.cost.basis) == ("https://ollama.com", "subscription")
    assert model_from_spec("ollama/gpt-oss:120b", base_url="https://ollama.com").cost.basis == "subscription"
    compatible = get_model("ollama-openai", "llama3.2", base_url="https://ollama.com/v1")
    assert compatible.cost.basis == "subscription", "Ollama's /v1 endpoint on the cloud too"
    assert get_model("ollama", "gpt-oss:120b", base_url="http://box:11434").cost.basis == "free"
    assert get_model("ollama", "gpt-oss:120b").cost.basis == "free"


def test_a_priced_model_sent_to_the_cloud_host_keeps_its_price() -> None:
    # Only a free price means "your own server"; a metered one is the vendor's whatever the host.
    proxied = get_model("anthropic", "claude-haiku-4-5", base_url="https://ollama.com")
    assert proxied.cost == get_model("anthropic", "claude-haiku-4-5").cost
