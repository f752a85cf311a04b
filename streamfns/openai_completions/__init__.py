"""The OpenAI Chat Completions StreamFn (api ``openai-completions``), declared for the adapter kit.

One adapter for OpenAI's chat models and every server that speaks the same protocol (Groq, xAI,
DeepSeek, OpenRouter, Mistral, Together, Fireworks, Cerebras, Moonshot, z.ai, Qwen, and local vLLM,
Ollama, LM Studio and llama.cpp servers). What differs between them is data: a
:class:`~streamfns.openai_completions.compat.CompletionsCompat` profile per model, which also names
the key variable (``OPENAI_API_KEY``, ``GROQ_API_KEY`` …; local servers need none). ``request.py``
renders the payload, ``decode.py`` maps chunks to the builder, ``errors.py`` reads error bodies;
:mod:`streamfns.kit` does the rest.
"""

from streamfns.kit import Adapter, WireApi
from streamfns.openai_completions.compat import CompletionsCompat, api_key_for, compat_for
from streamfns.openai_completions.decode import VENDOR, CompletionsDecoder
from streamfns.openai_completions.ending import ENDING
from streamfns.openai_completions.errors import ERRORS, error_body, stream_error
from streamfns.openai_completions.request import build_request

__all__ = ["ADAPTER", "WIRE", "CompletionsCompat", "compat_for", "stream_openai_completions"]

WIRE = WireApi(
    api="openai-completions",
    vendor=VENDOR,
    key=api_key_for,
    build_request=build_request,
    decoder=CompletionsDecoder,
    errors=ERRORS,
    ending=ENDING,
    error_body=error_body,
    stream_error=stream_error,
    recordings={
        "text": "oai__text_usage_gpt4o",
        "tool": "pai__tool_call_gpt4o_mini",
        "parallel": "pai__parallel_tool_calls_usage_gpt4o",
        "thinking": "pai__deepseek_reasoner_reasoning_content",
    },
)
stream_openai_completions = WIRE.stream_fn
ADAPTER = Adapter.from_wire(
    WIRE,
    package=__name__,
    demo=(
        ("oai__text_usage_gpt4o", "text with usage (OpenAI)", "What's the weather like in SF?"),
        (
            "vercel__deepseek_reasoner_tool_call",
            "reasoning, then a tool call (DeepSeek)",
            "What is the weather in San Francisco?",
        ),
    ),
)
