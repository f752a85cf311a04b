"""Replays land on the provider of their own api, and a price nobody knows reads as unknown — in the
model lookup, ``streamfns replay`` and ``streamfns models`` — never as $0."""

from __future__ import annotations

import httpx
import pytest

from cassettes import library
from normalize import Cost, ModelCost
from streamfns.catalog import model_for_recording
from streamfns.cli import main
from streamfns.demo import model_for_cassette
from streamfns.ollama.server import pulled_models
from streamfns.render import format_cost

pytestmark = pytest.mark.parallel


def test_a_catch_all_entry_never_claims_a_model_of_another_api() -> None:
    # Ollama's any_model answers every id of ollama-chat; a chat-completions recording of an id no
    # provider lists used to come out as ollama at $0.
    model = model_for_recording("openai-completions", "gpt-3.5-turbo-0125", host="api.openai.com")
    assert (model.provider, model.api, model.base_url) == ("openai", "openai-completions", "https://api.openai.com/v1")
    assert model.cost.basis == "unknown"
    elsewhere = model_for_recording("openai-completions", "sonar", host="api.perplexity.ai")
    assert (elsewhere.provider, elsewhere.cost.basis) == ("recorded", "unknown")
    # anthropic-messages has two providers (anthropic, github-copilot): the host tells them apart.
    on_anthropic = model_for_recording("anthropic-messages", "claude-unlisted-9", host="api.anthropic.com")
    assert on_anthropic.provider == "anthropic"
    assert model_for_recording("cohere-chat", "command-unlisted-9").provider == "cohere", "its only provider"


def test_the_api_of_the_recording_decides_the_catalog() -> None:
    local = model_for_recording("ollama-chat", "my-finetune:latest")
    assert (local.provider, local.api, local.cost.basis) == ("ollama", "ollama-chat", "free")
    listed = model_for_recording("openai-completions", "llama3.2", host="localhost")
    assert (listed.provider, listed.cost.basis) == ("ollama-openai", "free")
    # The same model a provider lists for another of its apis still knows its prices.
    responses = model_for_recording("openai-responses", "gpt-4o", host="api.openai.com")
    assert (responses.provider, responses.api, responses.cost.basis) == ("openai", "openai-responses", "metered")
    assert responses.cost.input > 0


@pytest.mark.parametrize(
    "name", ["tl__parallel_tool_calls_gpt35", "vercel__perplexity_citations", "vercel__text_model-unstated"]
)
def test_no_bundled_recording_of_another_api_lands_on_ollama(name: str) -> None:
    cassette = library.load(name)
    model = model_for_cassette(cassette)
    assert model.provider not in ("ollama", "ollama-openai")
    assert model.api == cassette.api
    assert model.cost.basis == "unknown"


def test_every_bundled_recording_lands_on_a_provider_of_its_api() -> None:
    for name in library.names():
        cassette = library.load(name)
        if cassette.api is None:
            continue
        model = model_for_cassette(cassette)
        if model.provider == "ollama":
            assert cassette.api == "ollama-chat", name


def test_streamfns_replay_says_unknown_for_a_price_nobody_knows(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "tl__parallel_tool_calls_gpt35"]) == 0
    out = capsys.readouterr().out
    assert ", cost unknown\n" in out
    assert "cost $0.000000" not in out


def test_format_cost_names_the_basis() -> None:
    assert format_cost(Cost(input=0.001, total=0.001)) == "$0.001000"
    assert format_cost(Cost(basis="free")) == "free"
    assert format_cost(Cost(basis="unknown")) == "unknown"
    assert format_cost(Cost(basis="subscription")) == "subscription"
    assert format_cost(Cost(basis="subscription", total=0.5)) == "subscription ($0.500000 at list prices)"


def test_streamfns_models_shows_free_and_unknown_prices_as_words(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["models", "lmstudio"]) == 0
    rows = capsys.readouterr().out.splitlines()[1:]
    assert rows
    assert all(row.split()[4:8] == ["free", "free", "free", "free"] for row in rows), rows
    from streamfns import cli

    real = cli.list_models

    def unpriced(provider: str | None = None) -> list[object]:
        found = real(provider)
        for model in found:
            model.cost = ModelCost(basis="unknown")
        return list(found)

    monkeypatch.setattr(cli, "list_models", unpriced)
    assert main(["models", "anthropic"]) == 0
    rows = capsys.readouterr().out.splitlines()[1:]
    assert all(row.split()[4:8] == ["unknown"] * 4 for row in rows), rows


def test_models_a_local_ollama_server_has_pulled_are_free() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/tags":
            return httpx.Response(200, json={"models": [{"name": "my-finetune:latest"}]})
        return httpx.Response(200, json={"model_info": {}, "capabilities": ["completion"]})

    found = pulled_models("http://box:11434", transport=httpx.MockTransport(answer))
    assert found is not None
    assert [(m.id, m.cost.basis) for m in found] == [("my-finetune:latest", "free")]
