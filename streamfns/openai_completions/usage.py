"""A Chat Completions ``usage`` object as the normalized usage fields (pure arithmetic, no I/O).

``input`` excludes cache reads and writes; cache reads come from ``prompt_tokens_details.cached_tokens``,
else ``prompt_cache_hit_tokens`` (DeepSeek), else a top-level ``cached_tokens`` (Kimi); cache writes
from ``prompt_tokens_details.cache_write_tokens`` (OpenRouter). ``completion_tokens`` already includes
reasoning tokens and is the output as is; ``completion_tokens_details.reasoning_tokens`` is a
breakdown of it, never more than it. Hostile counts (negative, larger than the prompt) are clamped.
"""

from __future__ import annotations

from typing import Any

from streamfns.kit import int_or_none, obj

__all__ = ["usage_fields"]


def usage_fields(usage: dict[str, Any]) -> dict[str, int | None]:
    """The keyword arguments for ``MessageBuilder.usage`` from one ``usage`` object; fields the
    object does not state are left out (None), so an earlier chunk's values stand. (The builder
    keeps reasoning within the output: OpenRouter has reported more, and a later chunk may lower the
    output without restating the reasoning.)"""
    prompt = int_or_none(usage.get("prompt_tokens"))
    completion = int_or_none(usage.get("completion_tokens"))
    reasoning = int_or_none(obj(usage.get("completion_tokens_details")).get("reasoning_tokens"))
    if prompt is None:
        return {"output": completion, "reasoning": reasoning}
    details = obj(usage.get("prompt_tokens_details"))
    cache_read = int_or_none(details.get("cached_tokens"))
    if cache_read is None:
        cache_read = int_or_none(usage.get("prompt_cache_hit_tokens"))
    if cache_read is None:
        cache_read = int_or_none(usage.get("cached_tokens"))
    prompt = max(0, prompt)
    cache_read = min(max(0, cache_read or 0), prompt)
    cache_write = min(max(0, int_or_none(details.get("cache_write_tokens")) or 0), prompt - cache_read)
    return {
        "input": prompt - cache_read - cache_write,
        "output": completion,
        "cache_read": cache_read,
        "cache_write": cache_write,
        "reasoning": reasoning,
    }
