"""Error bodies of OpenAI-compatible servers that are not OpenAI's own shape: FastAPI validation
``detail`` lists (vLLM, LiteLLM), ``detail`` strings, Ollama's bare ``{"error": "..."}``, a flat
``{"object": "error"}`` (vLLM) and plain text."""

from __future__ import annotations

import json

import pytest

from normalize import ErrorKind
from streamfns.openai_completions.errors import ERRORS

pytestmark = pytest.mark.parallel

JSON = {"content-type": "application/json"}


@pytest.mark.parametrize(
    ("status", "body", "kind", "message"),
    [
        (
            422,
            {"detail": [{"loc": ["body", "messages", 0, "role"], "msg": "field required", "type": "missing"}]},
            "invalid_request",
            "body.messages.0.role: field required",
        ),
        (400, {"detail": "Model 'llama-99' is not served here"}, "invalid_request", "Model 'llama-99' is not served"),
        (404, {"error": "model 'qwen3:8b' not found, try pulling it first"}, "not_found", "model 'qwen3:8b' not found"),
        (
            400,
            {
                "object": "error",
                "message": "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens.",
                "type": "BadRequestError",
                "code": 400,
            },
            "context_overflow",
            "maximum context length is 8192",
        ),
        (503, "upstream connect error or disconnect/reset before headers", "server", "upstream connect error"),
    ],
    ids=["fastapi-detail-list", "detail-string", "ollama-string", "vllm-flat-overflow", "plain-text-503"],
)
def test_compatible_servers_error_bodies_get_a_kind_and_their_own_words(
    status: int, body: object, kind: ErrorKind, message: str
) -> None:
    raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    failure = ERRORS.from_body(status, JSON if not isinstance(body, str) else {"content-type": "text/plain"}, raw)
    assert failure.info.kind == kind, failure.message
    assert failure.info.status == status
    assert message in failure.message
    assert failure.info.retryable == (status >= 500)
