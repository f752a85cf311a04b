"""The thinking-level policy shared by adapters whose vendor takes an effort name or a token budget.

``StreamOptions.reasoning`` is one of pi-ai's levels (``minimal`` … ``max``). A vendor that takes an
*effort* gets the model's own name for the level (``Model.thinking_level_map``) or, where the map
names none, the common one (:func:`effort_for`); a vendor that takes a *budget* gets a token count
(:func:`thinking_budget`), which the caller caps so that :data:`MIN_ANSWER_TOKENS` stay for the answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from normalize import ThinkingLevel

__all__ = ["DEFAULT_THINKING_BUDGETS", "MIN_ANSWER_TOKENS", "effort_for", "thinking_budget"]

#: Thinking-token budgets per level; ``xhigh`` and ``max`` use ``high``'s.
DEFAULT_THINKING_BUDGETS: Final[Mapping[str, int]] = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}
#: Output tokens kept for the answer when a thinking budget has to fit under the output cap.
MIN_ANSWER_TOKENS: Final = 1024
_DEFAULT_EFFORT: Final[Mapping[str, str]] = {"minimal": "low", "low": "low", "medium": "medium", "high": "high"}


def effort_for(level: ThinkingLevel, level_map: Mapping[str, str | None]) -> str:
    """The effort name to send for ``level``: the model's own (``level_map``), else the common one.
    ``xhigh`` and ``max`` exist only where the model's map names them; elsewhere they mean ``high``."""
    mapped = level_map.get(level)
    if mapped:
        return mapped
    return _DEFAULT_EFFORT.get(level, "high")


def thinking_budget(level: ThinkingLevel, overrides: Mapping[str, int] | None = None) -> int:
    """The token budget for ``level``: ``overrides`` (``StreamOptions.thinking_budgets``) first, then
    :data:`DEFAULT_THINKING_BUDGETS`; levels above ``high`` use ``high``'s."""
    key = level if level in DEFAULT_THINKING_BUDGETS else "high"
    if overrides and key in overrides:
        return overrides[key]
    return DEFAULT_THINKING_BUDGETS[key]
