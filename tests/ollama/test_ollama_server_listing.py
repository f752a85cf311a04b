"""``pulled_models``: what a reachable server has pulled, with context sizes from ``/api/show``; None when
no server answers (``streamfns models ollama`` then lists the catalog and says any pulled model works)."""

from __future__ import annotations

import httpx
import pytest

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
