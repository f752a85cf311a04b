"""Strict and best-effort JSON for tool-call arguments.

Two different questions, kept apart on purpose (a salvaged object must never be executed):

- :func:`parse_arguments` — is this the *complete* JSON object? Strict, with one deterministic repair
  (raw control characters and invalid escapes inside strings, which some vendors emit), never salvage.
- :func:`parse_partial` — what does the prefix received so far say? Best effort, for live previews.
"""

from __future__ import annotations

import re
from typing import Any, cast

import jiter

__all__ = [
    "ArgumentsError",
    "JsonRepairer",
    "parse_arguments",
    "parse_partial",
    "parse_strict",
    "partial_object",
    "repair_json",
]

_VALID_ESCAPES = frozenset('"\\/bfnrt')
_HEX = frozenset("0123456789abcdefABCDEF")


class ArgumentsError(ValueError):
    """The arguments text is not one complete JSON object; ``incomplete`` tells truncation apart."""

    def __init__(self, message: str, *, incomplete: bool) -> None:
        super().__init__(message)
        self.incomplete = incomplete


_SPECIAL = re.compile(r'["\\]')
_CONTROL_ESCAPES: dict[int, str] = {
    code: {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}.get(chr(code), f"\\u{code:04x}")
    for code in range(0x20)
}


class JsonRepairer:
    """Repairs JSON text fragment by fragment, each character looked at once.

    Inside strings, raw control characters are escaped and a backslash that does not start a valid
    escape is doubled; outside strings nothing changes, so valid JSON passes through unchanged. The
    work is linear and runs at C speed between quotes and backslashes (``re`` finds them,
    ``str.translate`` escapes the runs between): 8 MB of arguments full of raw TABs cost one pass,
    never a re-scan of what came before. A backslash at the end of a fragment is held back until the
    next fragment (or :meth:`finish`) shows what it escapes.
    """

    __slots__ = ("_held", "_in_string")

    def __init__(self) -> None:
        self._in_string: bool = False
        self._held: str = ""

    def feed(self, text: str) -> str:
        """The repaired form of ``text``, continuing where the previous fragment stopped."""
        if self._held:
            text = self._held + text
            self._held = ""
        out: list[str] = []
        in_string = self._in_string
        i, n = 0, len(text)
        while i < n:
            if not in_string:
                j = text.find('"', i)
                if j < 0:
                    out.append(text[i:])
                    break
                out.append(text[i : j + 1])
                i, in_string = j + 1, True
                continue
            match = _SPECIAL.search(text, i)
            if match is None:
                out.append(text[i:].translate(_CONTROL_ESCAPES))
                break
            j = match.start()
            if j > i:
                out.append(text[i:j].translate(_CONTROL_ESCAPES))
            if text[j] == '"':
                out.append('"')
                i, in_string = j + 1, False
                continue
            escape = text[j + 1 : j + 2]
            if escape == "u":
                digits = text[j + 2 : j + 6]
                if all(c in _HEX for c in digits):
                    if len(digits) == 4:
                        out.append(text[j : j + 6])
                        i = j + 6
                        continue
                    if j + 6 > n:  # a \u escape cut by the fragment's end: wait for the rest
                        self._held = text[j:]
                        break
            elif not escape:
                self._held = text[j:]
                break
            elif escape in _VALID_ESCAPES:
                out.append(text[j : j + 2])
                i = j + 2
                continue
            out.append("\\\\")
            i = j + 1
        self._in_string = in_string
        return "".join(out)

    def finish(self) -> str:
        """The repaired form of what was held back, at the end of the text."""
        held, self._held = self._held, ""
        if not held:
            return ""
        # Only a backslash is ever held, inside a string: at the end it escapes nothing.
        return "\\\\" + held[1:].translate(_CONTROL_ESCAPES)


def repair_json(text: str) -> str:
    """Escape raw control characters and stray backslashes inside JSON strings; leave the rest alone.

    One linear pass (see :class:`JsonRepairer`).
    """
    repairer = JsonRepairer()
    return repairer.feed(text) + repairer.finish()


def _strict(text: str) -> Any:
    return jiter.from_json(text.encode("utf-8", "surrogatepass"))


def parse_strict(text: str) -> dict[str, Any]:
    """Parse complete tool-call arguments exactly as given (no repair): blank text is ``{}``;
    anything else must be one JSON object. Raises :class:`ArgumentsError`."""
    if not text or text.isspace():
        return {}
    try:
        value = _strict(text)
    except ValueError as exc:
        # jiter says "EOF while parsing …" exactly when the text is a cut-off prefix.
        incomplete = "EOF" in str(exc)
        raise ArgumentsError(f"tool-call arguments are not complete JSON ({exc})", incomplete=incomplete) from None
    if not isinstance(value, dict):
        raise ArgumentsError("tool-call arguments are not a JSON object", incomplete=False)
    return cast("dict[str, Any]", value)


def parse_arguments(text: str) -> dict[str, Any]:
    """Parse complete tool-call arguments: blank text is ``{}``; anything else must be one JSON object,
    possibly after :func:`repair_json`.

    Raises :class:`ArgumentsError` (``incomplete=True`` when the text is a valid prefix of JSON).
    """
    try:
        return parse_strict(text)
    except ArgumentsError:
        return parse_strict(repair_json(text))


def partial_object(text: str) -> dict[str, Any] | None:
    """The JSON object that the prefix ``text`` starts, as far as it goes (no repair); None when the
    prefix is not the start of a JSON object."""
    try:
        value = jiter.from_json(text.encode("utf-8", "surrogatepass"), partial_mode="trailing-strings")
    except ValueError:
        return None
    return cast("dict[str, Any]", value) if isinstance(value, dict) else None


def parse_partial(text: str) -> dict[str, Any]:
    """Best-effort view of a JSON object prefix; ``{}`` when nothing useful can be read. Never raises."""
    if not text:
        return {}
    value = partial_object(text)
    if value is None:
        value = partial_object(repair_json(text))
    return value if value is not None else {}
