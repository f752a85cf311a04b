"""Request matching: method + normalized URL + canonical body, minus ignored JSON paths.

Both sides go through the same scrubbing before comparison (the recording was scrubbed when
it was written, and `ReplayTransport` scrubs it again under its policy; the live request is
scrubbed as it arrives), so a key in a live header or query string never prevents a match.
When nothing matches, `explain` says how the nearest recording differs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

import httpx

from cassettes.canonical import NotJSON, canonical_json, drop_paths, json_diff, parse_json
from cassettes.model import JSONValue, RecordedRequest

__all__ = ["MatchKey", "explain", "match_key", "nearest", "normalize_url"]


def normalize_url(url: str) -> str:
    """Scheme and host lower-cased, default port dropped, query sorted, fragment dropped."""
    parsed = httpx.URL(url)
    pairs = sorted(parsed.params.multi_items())
    query = urlencode(pairs).encode("ascii") if pairs else None
    return str(parsed.copy_with(query=query, fragment=None))


def _body_value(body: bytes, ignore_paths: Sequence[str]) -> JSONValue | NotJSON:
    value = parse_json(body) if body else NotJSON()
    if isinstance(value, NotJSON):
        return value
    return drop_paths(value, ignore_paths)


@dataclass(frozen=True, slots=True)
class MatchKey:
    """What two requests must share to match."""

    method: str
    url: str
    body: bytes


def match_key(request: RecordedRequest, ignore_paths: Sequence[str] = ()) -> MatchKey:
    """The key of a (scrubbed) request: JSON bodies compare canonically without `ignore_paths`."""
    value = _body_value(request.body, ignore_paths)
    body = request.body if isinstance(value, NotJSON) else canonical_json(value)
    return MatchKey(request.method.upper(), normalize_url(request.url), body)


def _excerpt(body: bytes) -> str:
    text = body[:60].decode("utf-8", errors="replace")
    return repr(text) + ("…" if len(body) > 60 else "")


def explain(recorded: RecordedRequest, sent: RecordedRequest, ignore_paths: Sequence[str] = ()) -> list[str]:
    """How `sent` differs from `recorded`, one readable line per difference (empty if they match)."""
    differences: list[str] = []
    if recorded.method.upper() != sent.method.upper():
        differences.append(f"method: recorded {recorded.method}, sent {sent.method}")
    recorded_url, sent_url = normalize_url(recorded.url), normalize_url(sent.url)
    if recorded_url != sent_url:
        differences.append(f"url: recorded {recorded_url}, sent {sent_url}")
    left, right = _body_value(recorded.body, ignore_paths), _body_value(sent.body, ignore_paths)
    if not isinstance(left, NotJSON) and not isinstance(right, NotJSON):
        differences.extend(f"body {line}" for line in json_diff(left, right))
    elif recorded.body != sent.body:
        differences.append(
            f"body: recorded {len(recorded.body)} bytes {_excerpt(recorded.body)}, "
            f"sent {len(sent.body)} bytes {_excerpt(sent.body)}"
        )
    return differences


def _distance(recorded: RecordedRequest, sent: RecordedRequest, ignore_paths: Sequence[str]) -> int:
    score = 0
    if recorded.method.upper() != sent.method.upper():
        score += 10_000
    left, right = httpx.URL(normalize_url(recorded.url)), httpx.URL(normalize_url(sent.url))
    if (left.host, left.path) != (right.host, right.path):
        score += 1_000
    elif left.query != right.query:
        score += 100
    score += sum(1 for line in explain(recorded, sent, ignore_paths) if line.startswith("body"))
    return score


def nearest(
    candidates: Sequence[tuple[int, RecordedRequest]], sent: RecordedRequest, ignore_paths: Sequence[str] = ()
) -> tuple[int, list[str]] | None:
    """The (index, differences) of the candidate closest to `sent`, or None without candidates."""
    if not candidates:
        return None
    index, best = min(candidates, key=lambda item: _distance(item[1], sent, ignore_paths))
    return index, explain(best, sent, ignore_paths)
