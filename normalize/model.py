"""Model descriptions: plain data naming the wire protocol, the vendor endpoint and the prices."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from normalize._jsonmodel import JsonModel

__all__ = ["Model", "ModelCost"]


@dataclass(slots=True, kw_only=True)
class ModelCost(JsonModel):
    """Prices in USD per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


@dataclass(slots=True, kw_only=True)
class Model(JsonModel):
    """A model to call.

    ``api`` is the wire protocol (``anthropic-messages``, ``openai-completions`` …) and decides which
    StreamFn runs; ``provider`` is the vendor or endpoint. ``compat`` holds per-api quirk flags and
    ``thinking_level_map`` maps thinking levels to vendor values (``None`` = unsupported level).
    """

    id: str
    api: str
    provider: str
    name: str = ""
    base_url: str = ""
    reasoning: bool = False
    input: list[Literal["text", "image"]] = field(default_factory=lambda: ["text"])
    cost: ModelCost = field(default_factory=ModelCost)
    context_window: int = 128_000
    max_tokens: int = 8_192
    headers: dict[str, str] | None = None
    compat: dict[str, Any] | None = None
    thinking_level_map: dict[str, str | None] | None = None

    def __post_init__(self) -> None:
        if not self.name:
            self.name = self.id
