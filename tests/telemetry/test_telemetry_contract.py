"""What the telemetry may and may not say: the conventions' names and provider values, message content
only on request, keys never, and ``import streamfns`` without OpenTelemetry."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from normalize import (
    Context,
    ImageContent,
    StreamOptions,
    TextContent,
    ToolResultMessage,
    UserMessage,
)
from streamfns.kit import MAX_ERROR_TEXT, MAX_ID_TEXT, telemetry
from tests.adapters import ANTHROPIC, CONTEXT, reads_client
from tests.telemetry._otel import Recorded, recorded
from tests.telemetry._replay import stream_of

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.parallel  # clock-blind: in-memory transports; the subprocess has no tight timeout

semconv_attributes = pytest.importorskip("opentelemetry.semconv._incubating.attributes.gen_ai_attributes")
semconv_metrics = pytest.importorskip("opentelemetry.semconv._incubating.metrics.gen_ai_metrics")
server_attributes = pytest.importorskip("opentelemetry.semconv.attributes.server_attributes")
error_attributes = pytest.importorskip("opentelemetry.semconv.attributes.error_attributes")

TEXT = ANTHROPIC.recorded_chunks("llma__text_haiku45")
TOOLS = ANTHROPIC.recorded_chunks("llma__parallel_tool_use_x2_haiku45")


def test_every_name_is_the_one_the_conventions_publish() -> None:
    ours = {
        name: value
        for name, value in vars(telemetry).items()
        if name.isupper() and name != "SEMCONV_VERSION" and isinstance(value, str) and "." in value
    }
    published = {
        "OPERATION_NAME": semconv_attributes.GEN_AI_OPERATION_NAME,
        "PROVIDER_NAME": semconv_attributes.GEN_AI_PROVIDER_NAME,
        "REQUEST_MODEL": semconv_attributes.GEN_AI_REQUEST_MODEL,
        "REQUEST_MAX_TOKENS": semconv_attributes.GEN_AI_REQUEST_MAX_TOKENS,
        "REQUEST_TEMPERATURE": semconv_attributes.GEN_AI_REQUEST_TEMPERATURE,
        "REQUEST_STREAM": semconv_attributes.GEN_AI_REQUEST_STREAM,
        "RESPONSE_MODEL": semconv_attributes.GEN_AI_RESPONSE_MODEL,
        "RESPONSE_ID": semconv_attributes.GEN_AI_RESPONSE_ID,
        "RESPONSE_FINISH_REASONS": semconv_attributes.GEN_AI_RESPONSE_FINISH_REASONS,
        "RESPONSE_TIME_TO_FIRST_CHUNK": semconv_attributes.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK,
        "USAGE_INPUT_TOKENS": semconv_attributes.GEN_AI_USAGE_INPUT_TOKENS,
        "USAGE_OUTPUT_TOKENS": semconv_attributes.GEN_AI_USAGE_OUTPUT_TOKENS,
        "USAGE_CACHE_READ_INPUT_TOKENS": semconv_attributes.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
        "USAGE_CACHE_CREATION_INPUT_TOKENS": semconv_attributes.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
        "USAGE_REASONING_OUTPUT_TOKENS": semconv_attributes.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS,
        "TOKEN_TYPE": semconv_attributes.GEN_AI_TOKEN_TYPE,
        "INPUT_MESSAGES": semconv_attributes.GEN_AI_INPUT_MESSAGES,
        "OUTPUT_MESSAGES": semconv_attributes.GEN_AI_OUTPUT_MESSAGES,
        "SYSTEM_INSTRUCTIONS": semconv_attributes.GEN_AI_SYSTEM_INSTRUCTIONS,
        "SERVER_ADDRESS": server_attributes.SERVER_ADDRESS,
        "SERVER_PORT": server_attributes.SERVER_PORT,
        "ERROR_TYPE": error_attributes.ERROR_TYPE,
        "HTTP_STATUS": "http.response.status_code",
        "RETRY_EVENT": "streamfns.retry",
        "RETRY_ATTEMPT": "streamfns.retry.attempt",
        "RETRY_DELAY": "streamfns.retry.delay_s",
        "USAGE_COST": "streamfns.usage.cost_usd",
        "USAGE_COST_BASIS": "streamfns.usage.cost_basis",
        "METRIC_DURATION": semconv_metrics.GEN_AI_CLIENT_OPERATION_DURATION,
        "METRIC_TOKEN_USAGE": semconv_metrics.GEN_AI_CLIENT_TOKEN_USAGE,
        "METRIC_TIME_TO_FIRST_CHUNK": semconv_metrics.GEN_AI_CLIENT_OPERATION_TIME_TO_FIRST_CHUNK,
        "METRIC_TIME_PER_OUTPUT_CHUNK": semconv_metrics.GEN_AI_CLIENT_OPERATION_TIME_PER_OUTPUT_CHUNK,
    }
    assert ours == published
    assert semconv_attributes.GenAiOperationNameValues.CHAT.value == "chat"


@pytest.mark.parametrize(
    ("provider", "api", "expected"),
    [
        ("anthropic", "anthropic-messages", "anthropic"),
        ("openai", "openai-completions", "openai"),
        ("openai", "openai-responses", "openai"),
        ("google", "google-generative-ai", "gcp.gemini"),
        ("google-vertex", "google-generative-ai", "gcp.vertex_ai"),
        ("google-vertex", "anthropic-vertex", "gcp.vertex_ai"),
        ("anthropic", "anthropic-vertex", "gcp.vertex_ai"),
        ("amazon-bedrock", "bedrock-converse-stream", "aws.bedrock"),
        ("amazon-bedrock", "anthropic-bedrock", "aws.bedrock"),
        ("anthropic", "anthropic-bedrock", "aws.bedrock"),
        ("my-bedrock-proxy", "my-api", "aws.bedrock"),
        ("azure-openai-responses", "openai-responses", "azure.ai.openai"),
        ("xai", "openai-completions", "x_ai"),
        ("mistral", "openai-completions", "mistral_ai"),
        ("deepseek", "openai-completions", "deepseek"),
        ("groq", "openai-completions", "groq"),
        ("ollama", "ollama-chat", "ollama"),
        ("openrouter", "openai-completions", "openrouter"),
        ("", "my-api", "my-api"),
    ],
)
def test_providers_map_to_the_well_known_values_and_others_keep_their_names(
    provider: str, api: str, expected: str
) -> None:
    assert telemetry.provider_name(provider, api) == expected


def test_every_well_known_value_used_is_one_the_conventions_list() -> None:
    # Read through the enum's members: instantiating it warns (the class is marked deprecated).
    listed = {member.value for member in semconv_attributes.GenAiProviderNameValues.__members__.values()}
    ours = {telemetry.provider_name(p, a) for p, a in [("google", ""), ("", "anthropic-vertex")]}
    ours |= {telemetry.provider_name(p, "x") for p in ("anthropic", "openai", "amazon-bedrock", "azure", "xai")}
    ours |= {telemetry.provider_name(p, "x") for p in ("mistral", "deepseek", "groq", "cohere", "perplexity")}
    ours |= {telemetry.provider_name("ibm-watsonx", "x")}
    assert ours <= listed


# -- content only on request; keys never ------------------------------------------------------------


def _everything_said(otel: Recorded) -> list[str]:
    """Every string the telemetry sent anywhere: span names, attributes, event attributes, status
    descriptions, metric point attributes."""
    said: list[str] = []
    for span in otel.spans():
        said.append(span.name)
        said.extend(str(value) for value in (span.attributes or {}).values())
        for event in span.events:
            said.append(event.name)
            said.extend(str(value) for value in (event.attributes or {}).values())
        said.append(str(span.status.description))
    for name in (
        "gen_ai.client.operation.duration",
        "gen_ai.client.token.usage",
        "gen_ai.client.operation.time_to_first_chunk",
    ):
        for point in otel.points(name):
            said.extend(f"{key}={value}" for key, value in point.attributes.items())
    return said


def _keys() -> dict[str, str]:
    """Obviously fake keys, built at run time."""
    return {
        "option": "sk-ant-" + "TEST" * 8,
        "option_header": "opt-" + "SECRET" * 5,
        "model_header": "mdl-" + "PRIVATE" * 4,
        "url": "url-" + "HIDDEN" * 5,
    }


@pytest.mark.parametrize("capture", [False, True])
@pytest.mark.parametrize(("status", "reads"), [(200, TEXT), (401, None)])
async def test_no_key_reaches_any_attribute_event_status_or_metric(
    capture: bool, status: int, reads: list[bytes] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(telemetry.CAPTURE_CONTENT_ENV, "true" if capture else "false")
    keys = _keys()
    model = ANTHROPIC.model(
        base_url=f"https://user:{keys['url']}@api.anthropic.com/?key={keys['url']}",
        headers={"x-model-credential": keys["model_header"]},
    )
    if reads is None:
        # A server that echoes every credential it was sent in its error message.
        echoed = " ".join(keys.values())
        body = {"type": "error", "error": {"type": "authentication_error", "message": f"bad credentials: {echoed}"}}
        reads = [json.dumps(body).encode()]
    with recorded() as otel:
        async with reads_client(reads, status=status, content_type="text/event-stream") as client:
            options = StreamOptions(
                api_key=keys["option"],
                headers={"x-gateway-token": keys["option_header"]},
                http_client=client,
                max_retries=0,
            )
            stream = stream_of(ANTHROPIC.adapter, model, CONTEXT, options)
            message = await stream.result()
        said = _everything_said(otel)
    assert message.stop_reason == ("stop" if status == 200 else "error")
    assert len(otel.spans()) == 1
    assert said
    for key in keys.values():
        leaks = [value for value in said if key in value or key[4:] in value]
        assert leaks == [], key
    attributes = dict(otel.span().attributes or {})
    assert attributes["server.address"] == "api.anthropic.com"


async def _run(context: Context, monkeypatch: pytest.MonkeyPatch, capture: str | None) -> dict[str, Any]:
    if capture is None:
        monkeypatch.delenv(telemetry.CAPTURE_CONTENT_ENV, raising=False)
    else:
        monkeypatch.setenv(telemetry.CAPTURE_CONTENT_ENV, capture)
    with recorded() as otel:
        async with reads_client(TOOLS) as client:
            options = StreamOptions(api_key="test-key", http_client=client, max_retries=0)
            await stream_of(ANTHROPIC.adapter, ANTHROPIC.model(), context, options).result()
        return dict(otel.span().attributes or {})


CONVERSATION = Context(
    system_prompt="Be brief.",
    messages=[
        UserMessage(content="Weather in Paris and Rome?", timestamp=0),
        ToolResultMessage(tool_call_id="call_1", tool_name="weather", content=[TextContent(text="sunny")], timestamp=0),
    ],
)


@pytest.mark.parametrize("capture", [None, "false", "1", "yes", ""])
async def test_message_content_is_not_recorded_unless_asked(
    capture: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    attributes = await _run(CONVERSATION, monkeypatch, capture)
    assert not {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"} & set(attributes)
    assert not any("Paris" in str(value) or "sunny" in str(value) for value in attributes.values())


@pytest.mark.parametrize("capture", ["true", "TRUE", " True "])
async def test_message_content_is_recorded_as_the_conventions_shape_it_when_asked(
    capture: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    attributes = await _run(CONVERSATION, monkeypatch, capture)
    assert json.loads(str(attributes["gen_ai.system_instructions"])) == [{"type": "text", "content": "Be brief."}]
    assert json.loads(str(attributes["gen_ai.input.messages"])) == [
        {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris and Rome?"}]},
        {
            "role": "tool",
            "parts": [
                {"type": "tool_call_response", "id": "call_1", "response": [{"type": "text", "content": "sunny"}]}
            ],
        },
    ]
    output = json.loads(str(attributes["gen_ai.output.messages"]))
    assert len(output) == 1
    assert output[0]["role"] == "assistant"
    assert output[0]["finish_reason"] == "tool_use"
    tool_calls = [part for part in output[0]["parts"] if part["type"] == "tool_call"]
    assert len(tool_calls) == 2
    assert all(set(part) == {"type", "id", "name", "arguments"} for part in tool_calls)


# -- import cost ------------------------------------------------------------------------------------------


def _python(code: str) -> subprocess.CompletedProcess[str]:
    """``code`` run by a fresh interpreter in the repository (no tight timeout: the bound is for a hang)."""
    command = [sys.executable, "-c", code]
    return subprocess.run(command, capture_output=True, text=True, check=True, timeout=120, cwd=ROOT)


def test_import_streamfns_imports_no_opentelemetry_module() -> None:
    code = (
        "import sys\n"
        "import streamfns, streamfns.kit, streamfns.kit.telemetry, streamfns.anthropic, streamfns.kit.wire\n"
        "print(sorted(name for name in sys.modules if name.startswith('opentelemetry')))\n"
    )
    done = _python(code)
    assert done.stdout.strip() == "[]"


def test_the_first_stream_without_a_provider_imports_the_api_once_and_makes_no_span_object() -> None:
    code = (
        "import sys\n"
        "from streamfns.kit import telemetry\n"
        "from normalize import Context, Model\n"
        "model = Model(id='m', api='anthropic-messages', provider='anthropic')\n"
        "print(telemetry.start('anthropic-messages', model, Context(), None))\n"
        "print('opentelemetry.trace' in sys.modules, 'opentelemetry.sdk' in sys.modules)\n"
    )
    done = _python(code)
    assert done.stdout.split("\n")[:2] == ["None", "True False"]


# -- a hostile server -------------------------------------------------------------------------------------


async def test_a_server_sending_huge_ids_and_reasons_cannot_bloat_the_span() -> None:
    message_start = TEXT[0]
    response_id = json.loads(message_start.split(b"data: ", 1)[1])["message"]["id"]
    huge_id = "msg_" + "A" * 200_000
    huge_reason = "R" * 200_000
    reads = [chunk.replace(response_id.encode(), huge_id.encode()) for chunk in TEXT]
    reads = [chunk.replace(b'"end_turn"', json.dumps(huge_reason).encode()) for chunk in reads]
    assert reads != TEXT
    with recorded() as otel:
        async with reads_client(reads) as client:
            options = StreamOptions(api_key="test-key", http_client=client, max_retries=0)
            message = await stream_of(ANTHROPIC.adapter, ANTHROPIC.model(), CONTEXT, options).result()
        span = otel.span()
    # The message keeps what the vendor said, bounded (vendor text: an id's first MAX_ID_TEXT bytes, a stop
    # reason's first MAX_ERROR_TEXT, each cut marked, issue 35); the span keeps a bounded piece of it.
    assert message.response_id == huge_id[:MAX_ID_TEXT] + f"… [cut: {len(huge_id) - MAX_ID_TEXT:,} more bytes]"
    assert message.raw_stop_reason is not None
    assert message.raw_stop_reason.startswith(huge_reason[:MAX_ERROR_TEXT])
    assert message.raw_stop_reason.endswith(f"[cut: {len(huge_reason) - MAX_ERROR_TEXT:,} more bytes]")
    attributes = dict(span.attributes or {})
    assert attributes["gen_ai.response.id"] == huge_id[:255] + "…"
    assert attributes["gen_ai.response.finish_reasons"] == (message.raw_stop_reason[:255] + "…",)
    description = span.status.description or ""
    assert len(description) <= 1024
    assert all(len(str(value)) <= 1024 for value in attributes.values())


def test_without_the_api_installed_streams_run_untraced() -> None:
    code = (
        "import sys, asyncio\n"
        "sys.modules['opentelemetry'] = None  # as if the extra were not installed\n"
        "from streamfns.kit import telemetry\n"
        "from tests.adapters import ANTHROPIC, CONTEXT\n"
        "from cassettes import library\n"
        "assert telemetry.start('anthropic-messages', ANTHROPIC.model(), CONTEXT, None) is None\n"
        "events, message = asyncio.run(ANTHROPIC.replay(library.load('llma__text_haiku45')))\n"
        "print(message.stop_reason, sorted(n for n in sys.modules if n.startswith('opentelemetry.')))\n"
    )
    done = _python(code)
    assert done.stdout.strip() == "stop []"


async def test_captured_images_are_their_media_type_never_their_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    data = "iVBORw0KGgo" + "Q" * 4000
    context = Context(
        messages=[
            UserMessage(
                content=[TextContent(text="What is this?"), ImageContent(data=data, mime_type="image/png")],
                timestamp=0,
            )
        ]
    )
    attributes = await _run(context, monkeypatch, "true")
    assert json.loads(str(attributes["gen_ai.input.messages"])) == [
        {
            "role": "user",
            "parts": [
                {"type": "text", "content": "What is this?"},
                {"type": "blob", "modality": "image", "mime_type": "image/png"},
            ],
        }
    ]
    assert not any(data[:40] in str(value) for value in attributes.values())
