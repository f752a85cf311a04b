"""Strict and best-effort JSON for tool-call arguments.

Two different questions, kept apart on purpose (a salvaged object must never be executed):

- :func:`parse_arguments` — is this the *complete* JSON object? Strict, with one deterministic repair
  (raw control characters and invalid escapes inside strings, which some vendors emit), never salvage.
- :func:`parse_partial` — what does the prefix received so far say? Best effort, for live previews.
"""

from __future__ import annotations

from typing import Any, cast

import jiter

__all__ = ["ArgumentsError", "parse_arguments", "parse_partial", "repair_json"]

_VALID_ESCAPES = frozenset('"\\/bfnrtu')
_HEX = frozenset("0123456789abcdefABCDEF")


class ArgumentsError(ValueError):
    """The arguments text is not one complete JSON object; ``incomplete`` tells truncation apart."""

    def __init__(self, message: str, *, incomplete: bool) -> None:
        super().__init__(message)
        self.incomplete = incomplete


def repair_json(text: str) -> str:
    """Escape raw control characters and stray backslashes inside JSON strings; leave the rest alone."""
    out: list[str] = []
    in_string = False
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if not in_string:
            out.append(ch)
            in_string = ch == '"'
            i += 1
            continue
        if ch == '"':
            in_string = False
            out.append(ch)
        elif ch == "\\":
            nxt = text[i + 1] if i + 1 < n else ""
            if nxt == "u" and all(c in _HEX for c in text[i + 2 : i + 6]) and i + 6 <= n:
                out.append(text[i : i + 6])
                i += 6
                continue
            if nxt and nxt in _VALID_ESCAPES and nxt != "u":
                out.append(ch + nxt)
                i += 2
                continue
            out.append("\\\\")
        elif ch < " ":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}.get(ch, f"\\u{ord(ch):04x}"))
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _strict(text: str) -> Any:
    return jiter.from_json(text.encode("utf-8", "surrogatepass"))


def parse_arguments(text: str) -> dict[str, Any]:
    """Parse complete tool-call arguments: blank text is ``{}``; anything else must be one JSON object.

    Raises :class:`ArgumentsError` (``incomplete=True`` when the text is a valid prefix of JSON).
    """
    if not text or text.isspace():
        return {}
    try:
        value = _strict(text)
    except ValueError:
        repaired = repair_json(text)
        try:
            value = _strict(repaired)
        except ValueError as exc:
            # jiter says "EOF while parsing …" exactly when the text is a cut-off prefix.
            incomplete = "EOF" in str(exc)
            raise ArgumentsError(f"tool-call arguments are not complete JSON ({exc})", incomplete=incomplete) from None
    if not isinstance(value, dict):
        raise ArgumentsError("tool-call arguments are not a JSON object", incomplete=False)
    return cast("dict[str, Any]", value)


def parse_partial(text: str) -> dict[str, Any]:
    """Best-effort view of a JSON object prefix; ``{}`` when nothing useful can be read. Never raises."""
    if not text:
        return {}
    raw = text.encode("utf-8", "surrogatepass")
    try:
        value = jiter.from_json(raw, partial_mode="trailing-strings")
    except ValueError:
        try:
            value = jiter.from_json(repair_json(text).encode("utf-8", "surrogatepass"), partial_mode="trailing-strings")
        except ValueError:
            return {}
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}
