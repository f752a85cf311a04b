"""Ollama's per-model flags (``Model.compat``), read strictly with :func:`streamfns.kit.parse_compat`.

They reach what the native api offers and the OpenAI-compatible ``/v1`` endpoint ignores:

- ``num_ctx``: the context length to run the model with. Sent only when set here (the catalog sets it
  for the models it lists): Ollama's own default is small, and a guess could exhaust the machine.
- ``options``: any other runtime option, sent as is in ``options`` (``num_gpu``, ``top_k``,
  ``repeat_penalty``, ``seed``, ``stop`` …); ``num_ctx`` above and the request's own ``max_tokens``
  (``num_predict``) and ``temperature`` take precedence over the same names here.
- ``keep_alive``: how long the server keeps the model loaded (``"5m"``, ``0``, ``-1``).
- ``format``: structured output, ``"json"`` or a JSON schema object.
- ``think_levels``: the model takes ``think`` as ``"low"|"medium"|"high"`` (gpt-oss) instead of a bool.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["OllamaCompat"]


@dataclass(frozen=True, slots=True)
class OllamaCompat:
    """See the module docstring."""

    num_ctx: int | None = None
    options: dict[str, Any] = field(default_factory=dict[str, Any])
    keep_alive: str | int | None = None
    format: str | dict[str, Any] | None = None
    think_levels: bool = False
