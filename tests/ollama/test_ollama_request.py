"""The ``/api/chat`` request, the server address, the key rule and the catalog's open model list."""

from __future__ import annotations

import pytest

import streamfns
from normalize import (
    AssistantMessage,
    Context,
    ImageContent,
    StreamOptions,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from streamfns.kit import CompatError
from streamfns.ollama import DEFAULT_HOST, api_key_for, build_request, host_from_env
from tests.adapters import OLLAMA

pytestmark = pytest.mark.parallel  # clock-blind: pure functions

TOOL = Tool(name="weather", description="Weather in a city.", parameters={"type": "object", "properties": {}})


def _reply() -> AssistantMessage:
    return AssistantMessage(
        content=[
            ThinkingContent(thinking="hmm"),
            TextContent(text="Let me look."),
            ToolCall(id="call_1", name="weather", arguments={"city": "Paris"}),
        ],
        api="ollama-chat",
        provider="ollama",
        model="llama3.2",
        usage=Usage(),
        stop_reason="toolUse",
        timestamp=0,
    )


def test_a_full_conversation_renders_as_ollama_messages() -> None:
    context = Context(
        system_prompt="Be brief.",
        messages=[
            UserMessage(
                content=[TextContent(text="Look:"), ImageContent(data="aGk=", mime_type="image/png")], timestamp=0
            ),
            _reply(),
            ToolResultMessage(
                tool_call_id="call_1", tool_name="weather", content=[TextContent(text="sunny")], timestamp=0
            ),
        ],
        tools=[TOOL],
    )
    vision = OLLAMA.model(input=["text", "image"])  # a text-only model gets a placeholder instead (transcript_for)
    request = build_request(vision, context, StreamOptions(max_tokens=100, temperature=0.5, reasoning="off"))
    assert request.url == "http://localhost:11434/api/chat"
    assert request.payload == {
        "model": "llama3.2",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Look:", "images": ["aGk="]},
            {
                "role": "assistant",
                "content": "Let me look.",
                "thinking": "hmm",
                "tool_calls": [{"function": {"name": "weather", "arguments": {"city": "Paris"}}}],
            },
            {"role": "tool", "tool_name": "weather", "content": "sunny"},
        ],
        "stream": True,
        "tools": [
            {
                "type": "function",
                "function": {"name": "weather", "description": "Weather in a city.", "parameters": TOOL.parameters},
            }
        ],
        "think": False,
        "options": {"num_predict": 100, "temperature": 0.5},
    }


def test_think_is_sent_only_when_asked_and_as_a_level_where_the_model_takes_one() -> None:
    context = Context(messages=[UserMessage(content="hi", timestamp=0)])
    plain = OLLAMA.model()
    assert "think" not in build_request(plain, context, StreamOptions()).payload
    assert build_request(plain, context, StreamOptions(reasoning="high")).payload["think"] is True
    gpt_oss = streamfns.get_model("ollama", "gpt-oss:20b")
    assert build_request(gpt_oss, context, StreamOptions(reasoning="medium")).payload["think"] == "medium"
    assert build_request(gpt_oss, context, StreamOptions(reasoning="minimal")).payload["think"] == "low"
    assert build_request(gpt_oss, context, StreamOptions(reasoning="xhigh")).payload["think"] == "high"
    assert build_request(gpt_oss, context, StreamOptions(reasoning="off")).payload["think"] is False


def test_num_ctx_only_when_known_and_runtime_options_pass_through() -> None:
    context = Context(messages=[UserMessage(content="hi", timestamp=0)])
    listed = streamfns.get_model("ollama", "qwen3:8b")
    assert build_request(listed, context, StreamOptions()).payload["options"] == {"num_ctx": 40960}
    unlisted = streamfns.get_model("ollama", "my-finetune:latest")
    assert "options" not in build_request(unlisted, context, StreamOptions()).payload
    tuned = OLLAMA.model(
        compat={
            "num_ctx": 8192,
            "options": {"num_gpu": 1, "top_k": 20, "repeat_penalty": 1.1, "num_predict": 5},
            "keep_alive": "10m",
            "format": {"type": "object"},
        }
    )
    payload = build_request(tuned, context, StreamOptions(max_tokens=64)).payload
    assert payload["options"] == {"num_gpu": 1, "top_k": 20, "repeat_penalty": 1.1, "num_predict": 64, "num_ctx": 8192}
    assert (payload["keep_alive"], payload["format"]) == ("10m", {"type": "object"})
    with pytest.raises(CompatError):
        build_request(OLLAMA.model(compat={"num_ctxx": 1}), context, StreamOptions())


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", DEFAULT_HOST),
        ("0.0.0.0", "http://0.0.0.0:11434"),
        ("gpu-box", "http://gpu-box:11434"),
        ("gpu-box:9999", "http://gpu-box:9999"),
        ("https://example.test", "https://example.test:443"),
        ("http://example.test/ollama", "http://example.test:80/ollama"),
        ("ollama.com", "https://ollama.com:443"),
        ("[::1]:11434", "http://[::1]:11434"),
        ("::1", "http://[::1]:11434"),
        ("host:99999", DEFAULT_HOST),
    ],
)
def test_ollama_host_reads_as_the_ollama_command_reads_it(value: str, expected: str) -> None:
    assert host_from_env(value) == expected


def test_the_base_url_wins_over_ollama_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "gpu-box:1234")
    context = Context(messages=[UserMessage(content="hi", timestamp=0)])
    assert build_request(streamfns.get_model("ollama", "llama3.2"), context, StreamOptions()).url == (
        "http://gpu-box:1234/api/chat"
    )
    assert build_request(OLLAMA.model(base_url="http://other:1/"), context, StreamOptions()).url == (
        "http://other:1/api/chat"
    )


def test_ollama_cloud_requires_the_key_and_local_servers_do_not() -> None:
    assert api_key_for(OLLAMA.model(base_url="https://ollama.com")).required is True
    assert api_key_for(OLLAMA.model()).required is False
    assert api_key_for(OLLAMA.model()).env == ("OLLAMA_API_KEY",)


def test_any_pulled_model_is_usable_and_the_v1_entry_has_its_own_provider() -> None:
    model = streamfns.get_model("ollama", "mistral-nemo:12b-instruct-q4")
    assert (model.api, model.provider, model.id, model.base_url) == (
        "ollama-chat",
        "ollama",
        "mistral-nemo:12b-instruct-q4",
        "",
    )
    assert (model.reasoning, model.input, model.cost.input, model.cost.output) == (True, ["text"], 0, 0)
    assert model.compat == {}
    assert [m.id for m in streamfns.list_models("ollama")] == ["llama3.2", "qwen3:8b", "gpt-oss:20b", "gemma3:1b"]
    assert {m.api for m in streamfns.list_models("ollama-openai")} == {"openai-completions"}
    native = {m.id for m in streamfns.list_models("ollama")}
    assert all(m.provider != "ollama" for m in streamfns.list_models() if m.api == "openai-completions")
    assert native
