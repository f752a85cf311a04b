"""Bedrock's per-model flags (``Model.compat``), read strictly with :func:`streamfns.kit.parse_compat`.

- ``region``: the AWS region the model is called in (else the environment's: see
  :func:`streamfns.kit.aws.bedrock_region`); an ARN id names its own.
- ``claude``: the model is Anthropic Claude (None: decided from the id, ``anthropic.`` after an optional
  inference-profile prefix). Claude gets ``maxTokens`` always (Bedrock's default is 4096), thinking
  budgets in ``additionalModelRequestFields``, its reasoning signatures replayed, and cache points.
- ``cache_points``: the model takes ``cachePoint`` blocks (None: Claude and Amazon Nova do).
- ``long_cache_ttl``: ``cache_retention="long"`` sends a one-hour ``ttl`` on cache points.
- ``guardrail``: a ``guardrailConfig`` sent as is (``guardrailIdentifier``, ``guardrailVersion``,
  optional ``trace``, ``streamProcessingMode``).
- ``interleaved_thinking``: with tools and thinking, ask Claude to think between tool calls (the
  ``interleaved-thinking-2025-05-14`` beta).
- ``additional_fields``: more ``additionalModelRequestFields`` (a model's own parameters, ``top_k``);
  the thinking fields this adapter sets take precedence.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["BedrockCompat"]


@dataclass(frozen=True, slots=True)
class BedrockCompat:
    """See the module docstring."""

    region: str | None = None
    claude: bool | None = None
    cache_points: bool | None = None
    long_cache_ttl: bool = False
    guardrail: dict[str, Any] | None = None
    interleaved_thinking: bool = True
    additional_fields: dict[str, Any] = field(default_factory=dict[str, Any])
