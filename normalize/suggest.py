"""The hint an error message gives for an unknown name: the closest known names, else all of them.

One rule for every command and look-up that refuses a name (a model id, a provider, an api, a
recording), so they all answer a typo the same way. Pure text; it imports nothing of ours.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["close_names", "did_you_mean"]

#: How alike a known name must be to be offered (difflib's ratio): "claude-sonet-4-5" finds
#: "claude-sonnet-4-5" (0.97) and "opnai" finds "openai" (0.91), but "nope" does not find "openai"
#: (0.6) nor "claude-sonet-4-5" "claude-haiku-4-5" (0.69): a far guess reads as nonsense, where the
#: list of every known name helps.
CUTOFF = 0.7


def close_names(name: str, known: Iterable[str], *, limit: int = 5) -> list[str]:
    """Up to ``limit`` names of ``known`` that look like ``name``, the closest first."""
    return difflib.get_close_matches(name, list(known), n=limit, cutoff=CUTOFF)


def did_you_mean(name: str, known: Iterable[str], *, what: str, limit: int = 5) -> str:
    """``"did you mean: a, b?"`` when names of ``known`` look like ``name``; otherwise ``"known
    {what}: …"`` listing every known name sorted (``"known {what}: none"`` when there is none).
    Never empty, so a caller can always append it after ``"; "``."""
    choices = sorted(set(known))
    close = close_names(name, choices, limit=limit)
    if close:
        return f"did you mean: {', '.join(close)}?"
    return f"known {what}: {', '.join(choices) or 'none'}"
