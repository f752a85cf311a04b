"""``pulled_models``: what a reachable server has pulled, with context sizes from ``/api/show``; None when
no server answers (``streamfns models ollama`` then lists the catalog and says any pulled model works)."""

from __future__ import annotations

import httpx
import pytest

from streamfns import cli
from streamfns.ollama.server import pulled_models

pytestmark = pytest.mark.parallel  # clock-blind: an in-process transport

SHOW = {
    "gemma3:1b": {"model_info": {"gemma3.context_length": 32768}, "capabilities": ["completion"]},
    "qwen3:8b": {"model_info": {"qwen3.context_length": 40960}, "capabilities": ["completion", "tools", "thinking"]},
}


def handler(request: httpx.Request) -> httpx.Response:
    if request.url.path == "/api/tags":
        return httpx.Response(200, json={"models": [{"name": "gemma3:1b"}, {"name": "qwen3:8b"}, {"nope": 1}]})
    name = httpx.Request("POST", request.url, content=request.content).read().decode()
    model = next(key for key in SHOW if f'"{key}"' in name)
    return httpx.Response(200, json=SHOW[model])


def test_the_pulled_models_with_their_context_sizes() -> None:
    found = pulled_models("http://box:11434", transport=httpx.MockTransport(handler))
    assert found is not None
    assert [(m.id, m.api, m.context_window, m.reasoning, m.base_url) for m in found] == [
        ("gemma3:1b", "ollama-chat", 32768, False, "http://box:11434"),
        ("qwen3:8b", "ollama-chat", 40960, True, "http://box:11434"),
    ]


def test_no_server_or_a_wrong_answer_is_none() -> None:
    def refused(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    assert pulled_models("http://box:1", transport=httpx.MockTransport(refused)) is None
    assert pulled_models("http://box:1", transport=httpx.MockTransport(lambda r: httpx.Response(200, json=[]))) is None
    assert pulled_models("http://box:1", transport=httpx.MockTransport(lambda r: httpx.Response(404))) is None


@pytest.mark.parametrize(
    ("base", "basis"),
    [("http://box:11434", "free"), ("https://ollama.com", "subscription"), ("https://eu.ollama.com", "subscription")],
)
def test_a_pulled_model_is_free_on_ones_own_server_and_paid_by_a_plan_on_ollama_cloud(base: str, basis: str) -> None:
    found = pulled_models(base, transport=httpx.MockTransport(handler))
    assert found is not None
    assert {model.cost.basis for model in found} == {basis}


def test_models_ollama_with_an_ollama_host_that_could_send_elsewhere_asks_no_server_and_says_why(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    asked: list[str] = []
    monkeypatch.setattr("streamfns.ollama.server.pulled_models", lambda *a, **k: asked.append("asked"))  # pyright: ignore[reportUnknownLambdaType, reportUnknownArgumentType]
    monkeypatch.setenv("OLLAMA_HOST", "x@127.0.0.1:9/")
    assert cli.main(["models", "ollama"]) == 0
    captured = capsys.readouterr()
    assert asked == []
    assert "OLLAMA_HOST" in captured.err
    assert "no server was asked" in captured.err
    assert "no Ollama server answered" not in captured.err
    assert "x@" not in captured.err, "user info is never quoted"
    assert "llama3.2" in captured.out, "the catalog's models are listed"
