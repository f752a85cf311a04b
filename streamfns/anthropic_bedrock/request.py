"""Context → Claude on Amazon Bedrock ``invoke-with-response-stream`` request. Pure but for reading where it goes.

The body is the Anthropic Messages request :func:`streamfns.anthropic.request.build_request` renders
(transcript, system, tools, cache markers, thinking, temperature: all decided there), transformed the
way Bedrock takes it: no ``model`` (the URL names it) and no ``stream`` (the path says it),
``anthropic_version: "bedrock-2023-05-31"`` in the body, and the beta flags in the body as the
``anthropic_beta`` list (Bedrock reads no ``anthropic-beta`` header). The endpoint is
:func:`streamfns.kit.bedrock_runtime_url` (``model.base_url``; else ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``
/ ``AWS_ENDPOINT_URL``; else the region's — ``Model.compat["region"]``, an ARN's own, ``AWS_REGION``
…): the one read of the environment.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Final

from normalize import Context, Model, StreamOptions
from streamfns.anthropic.request import AnthropicCompat
from streamfns.anthropic.request import build_request as build_messages_request
from streamfns.kit import WireRequest, bedrock_model_path, bedrock_runtime_url, parse_compat

__all__ = ["BEDROCK_ANTHROPIC_VERSION", "EVENT_STREAM", "AnthropicBedrockCompat", "build_request", "request_url"]

#: The Messages version Bedrock takes, in the body.
BEDROCK_ANTHROPIC_VERSION: Final = "bedrock-2023-05-31"
#: The media type of the streamed answer.
EVENT_STREAM: Final = "application/vnd.amazon.eventstream"
#: The compat flags that are Bedrock's, not the Messages request's.
_BEDROCK_FLAGS: Final = ("region", "betas")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AnthropicBedrockCompat(AnthropicCompat):
    """Per-model flags (``Model.compat``): the Anthropic ones (:class:`~streamfns.anthropic.request.AnthropicCompat`),
    the AWS ``region`` (None: an ARN's own, ``AWS_REGION``, ``AWS_DEFAULT_REGION``, the AWS profile's,
    ``us-east-1``) and extra Anthropic ``betas`` to send in ``anthropic_beta``."""

    region: str | None = None
    betas: tuple[str, ...] = ()


def request_url(model: Model) -> str:
    """``{endpoint}/model/{id}/invoke-with-response-stream``, the id one path segment (``:`` and an
    ARN's ``/`` percent-encoded). Raises :class:`~streamfns.kit.CompatError` (a ``config`` error, nothing
    sent) for an id that is empty or a dot segment (which would move the request, and its signature,
    to another path), and for a region or an endpoint variable that fails its check
    (:func:`streamfns.kit.bedrock_runtime_url`)."""
    path = bedrock_model_path(model.id)  # the id first: a bad id is the problem whatever the region
    return f"{bedrock_runtime_url(model)}/model/{path}/invoke-with-response-stream"


def build_request(model: Model, context: Context, options: StreamOptions | None = None) -> WireRequest:
    """Render ``context`` as a streaming Claude request on Bedrock (see the module docstring).

    ``Model.compat`` is read as :class:`AnthropicBedrockCompat` (an unknown flag raises
    :class:`~streamfns.kit.CompatError`).
    """
    compat = parse_compat(AnthropicBedrockCompat, model.compat)
    url = request_url(model)
    messages_flags = {key: value for key, value in (model.compat or {}).items() if key not in _BEDROCK_FLAGS}
    inner = build_messages_request(dataclasses.replace(model, compat=messages_flags or None), context, options)
    payload: dict[str, Any] = {"anthropic_version": BEDROCK_ANTHROPIC_VERSION}
    payload.update((key, value) for key, value in inner.payload.items() if key not in ("model", "stream"))
    betas = [beta.strip() for beta in inner.headers.get("anthropic-beta", "").split(",") if beta.strip()]
    betas = list(dict.fromkeys([*betas, *compat.betas]))
    if betas:
        payload["anthropic_beta"] = betas
    headers = {"accept": EVENT_STREAM, "content-type": "application/json"}
    return WireRequest(url=url, payload=payload, headers=headers)
