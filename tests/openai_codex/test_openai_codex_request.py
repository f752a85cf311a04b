"""Codex request building: the Responses request, shaped by the backend's rules (instructions, store,
the fields it refuses, its headers), and sent with the login's headers in place of a key."""

from __future__ import annotations

import json

import pytest

from conformance.loopback import LoopbackServer, Scripted
from normalize import Context, StreamOptions, SystemMessage, Tool, UserMessage
from streamfns.catalog import get_model
from streamfns.openai_codex import stream_openai_codex
from streamfns.openai_codex.request import DEFAULT_INSTRUCTIONS, ORIGINATOR, SENT_FIELDS, build_request
from tests.openai_codex._codex import CODEX, STREAMS, FakeLogin, cassette, codex_login

WEATHER = Tool(
    name="get_weather",
    description="Current weather for a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
TOKEN = "codex-test-access-token-0001"


def context(system: str | None = "Be brief.", *, tools: list[Tool] | None = None) -> Context:
    return Context(system_prompt=system, messages=[UserMessage(content="Hi", timestamp=0)], tools=tools)


@pytest.mark.parallel
def test_the_system_prompt_is_the_instructions_not_an_input_message() -> None:
    request = build_request(CODEX.model(), context("Be brief."), StreamOptions())
    payload = request.payload
    assert payload["instructions"] == "Be brief."
    assert payload["input"] == [{"role": "user", "content": [{"type": "input_text", "text": "Hi"}]}]
    assert request.url == "https://chatgpt.com/backend-api/codex/responses"


@pytest.mark.parallel
def test_instructions_are_sent_even_without_a_system_prompt() -> None:
    payload = build_request(CODEX.model(), context(None), StreamOptions()).payload
    assert payload["instructions"] == DEFAULT_INSTRUCTIONS
    assert payload["input"][0]["role"] == "user"


@pytest.mark.parallel
def test_a_later_system_message_stays_in_the_input() -> None:
    later = Context(
        system_prompt="Be brief.",
        messages=[UserMessage(content="Hi", timestamp=0), SystemMessage(content="Now in French.", timestamp=0)],
    )
    payload = build_request(CODEX.model(), later, StreamOptions()).payload
    assert payload["instructions"] == "Be brief."
    assert payload["input"][-1] == {"role": "developer", "content": "Now in French."}


@pytest.mark.parallel
def test_store_is_false_stream_true_and_refused_fields_are_dropped() -> None:
    options = StreamOptions(max_tokens=500, temperature=0.3, session_id="s-1", cache_retention="long")
    payload = build_request(CODEX.model(reasoning=False), context(tools=[WEATHER]), options).payload
    assert payload["store"] is False
    assert payload["stream"] is True
    for refused in ("max_output_tokens", "temperature", "top_p", "prompt_cache_retention"):
        assert refused not in payload, refused
    assert set(payload) <= SENT_FIELDS
    assert payload["prompt_cache_key"] == "s-1"
    assert payload["tools"][0]["name"] == "get_weather"


@pytest.mark.parallel
def test_reasoning_asks_for_the_encrypted_content() -> None:
    payload = build_request(CODEX.model(), context(), StreamOptions(reasoning="high")).payload
    assert payload["reasoning"] == {"effort": "high", "summary": "auto"}
    assert payload["include"] == ["reasoning.encrypted_content"]


@pytest.mark.parallel
def test_the_catalog_efforts_hold_a_model_to_what_it_takes() -> None:
    mini = get_model("openai-codex", "gpt-5.1-codex-mini")
    assert build_request(mini, context(), StreamOptions(reasoning="low")).payload["reasoning"]["effort"] == "medium"
    codex = get_model("openai-codex", "gpt-5.3-codex")
    assert build_request(codex, context(), StreamOptions(reasoning="xhigh")).payload["reasoning"]["effort"] == "xhigh"


@pytest.mark.parallel
def test_headers_name_the_beta_the_originator_and_the_session() -> None:
    headers = build_request(CODEX.model(), context(), StreamOptions(session_id="session-42")).headers
    assert headers["openai-beta"] == "responses=experimental"
    assert headers["originator"] == ORIGINATOR
    assert headers["session_id"] == "session-42"
    assert headers["accept"] == "text/event-stream"
    assert "session_id" not in build_request(CODEX.model(), context(), StreamOptions()).headers
    assert "authorization" not in headers, "the login's header is the signer's, per attempt"


@pytest.mark.parallel
def test_a_base_url_of_the_models_own_is_kept() -> None:
    request = build_request(CODEX.model(base_url="http://127.0.0.1:8080/codex/"), context(), StreamOptions())
    assert request.url == "http://127.0.0.1:8080/codex/responses"


def replay_plan() -> Scripted:
    body = [chunk.data for chunk in cassette(STREAMS["text"]).interactions[0].response.chunks]
    return Scripted(chunks=[(0.0, chunk) for chunk in body])


async def test_the_request_sent_carries_the_logins_headers_and_no_key() -> None:
    login = FakeLogin(TOKEN)
    with codex_login(login):
        async with LoopbackServer(replay_plan()) as server:
            model = CODEX.model(base_url=server.base_url)
            message = await stream_openai_codex(model, context(), StreamOptions(session_id="s-9")).result()
            assert message.stop_reason == "stop", message.error_message
            received = server.requests[0]
    assert received.path == "/responses"
    assert received.headers["authorization"] == f"Bearer {TOKEN}"
    assert received.headers["chatgpt-account-id"] == "acct-test-0001"
    assert received.headers["openai-beta"] == "responses=experimental"
    assert received.headers["originator"] == ORIGINATOR
    assert received.headers["session_id"] == "s-9"
    body = json.loads(received.body)
    assert body["store"] is False
    assert body["instructions"] == "Be brief."
    assert len(login.signed) == 1
