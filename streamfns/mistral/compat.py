"""Mistral's per-model options (``Model.compat``), read strictly with :func:`streamfns.kit.parse_compat`.

The request parameters Mistral's chat api has and the normalized request does not, and how a thinking
level is asked for:

- ``tool_choice``: ``"auto"``, ``"none"``, ``"any"`` (some tool must be called), ``"required"``, or one
  function as Mistral names it: ``{"type": "function", "function": {"name": "get_weather"}}``. Unset: the
  server's default (``auto``).
- ``parallel_tool_calls``: whether the model may call several tools in one turn. Unset: the server's
  default (it may).
- ``reasoning_style``: how ``StreamOptions.reasoning`` is asked for. ``"effort"`` (Mistral Small 4,
  Medium 3.5): ``reasoning_effort`` — the model's ``thinking_level_map`` name for the level, else
  ``"high"``; ``off`` sends ``"none"``. ``"prompt_mode"`` (Magistral, which always reasons): a level
  other than ``off`` sends ``prompt_mode: "reasoning"`` (the server's reasoning system prompt); ``off``
  sends nothing, as the model cannot stop. Without ``reasoning`` nothing is sent (the server's default).
- ``reasoning_effort`` and ``prompt_mode``: a fixed value sent on every request, in place of what the
  level would send (``"none"``/``"high"``; ``"reasoning"``).
- ``extra_body``: merged into the payload last (``safe_prompt``, ``random_seed``, ``response_format`` …).

A key the dataclass does not name, or a value of the wrong type, is a ``config`` error before anything
is sent; so is a ``tool_choice`` that is neither one of the words nor a function naming a tool.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal, cast

from streamfns.kit import CompatError

__all__ = ["TOOL_CHOICES", "MistralCompat", "ReasoningStyle"]

ReasoningStyle = Literal["effort", "prompt_mode"]
#: The words ``tool_choice`` takes (a function is given as an object instead).
TOOL_CHOICES: Final = frozenset({"auto", "none", "any", "required"})


@dataclass(frozen=True, slots=True, kw_only=True)
class MistralCompat:
    """See the module docstring."""

    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    reasoning_style: ReasoningStyle = "prompt_mode"
    reasoning_effort: str | None = None
    prompt_mode: str | None = None
    extra_body: dict[str, Any] = field(default_factory=dict[str, Any])

    def __post_init__(self) -> None:
        choice = self.tool_choice
        if isinstance(choice, str) and choice not in TOOL_CHOICES:
            raise CompatError(
                f"Model.compat['tool_choice'] must be one of {', '.join(sorted(TOOL_CHOICES))} or "
                f'{{"type": "function", "function": {{"name": ...}}}}, got {choice!r}'
            )
        if isinstance(choice, dict) and not _names_a_function(choice):
            raise CompatError(
                'Model.compat[\'tool_choice\'] as an object must be {"type": "function", "function": {"name": '
                f"<a tool's name>}}}}, got {choice!r}"
            )


def _names_a_function(choice: dict[str, Any]) -> bool:
    function: object = choice.get("function")
    if choice.get("type", "function") != "function" or not isinstance(function, dict):
        return False
    name = cast("dict[str, object]", function).get("name")
    return isinstance(name, str) and bool(name)
