"""Strict and best-effort JSON for tool-call arguments.

Two different questions, kept apart on purpose (a salvaged object must never be executed):

- :func:`parse_arguments` — is this the *complete* JSON object? Strict, with one deterministic repair
  (raw control characters and invalid escapes inside strings, which some vendors emit), never salvage.
- :func:`parse_partial` — what does the prefix received so far say? Best effort, for live previews.

:func:`arguments_text` goes the other way, for arguments that arrived whole: strict JSON text.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from json.encoder import encode_basestring as _encode_basestring
from typing import Any, cast

import jiter

__all__ = [
    "ArgumentsError",
    "JsonRepairer",
    "arguments_round_trip",
    "arguments_text",
    "parse_arguments",
    "parse_partial",
    "parse_strict",
    "partial_object",
    "repair_json",
]


class ArgumentsError(ValueError):
    """The arguments text is not one complete JSON object; ``incomplete`` tells truncation apart."""

    def __init__(self, message: str, *, incomplete: bool) -> None:
        super().__init__(message)
        self.incomplete = incomplete


# A string's body up to its closing quote (or the text's end): any character but a quote or a
# backslash, or a backslash with whatever it escapes (a stray one too: it is repaired below).
_BODY = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)
# The valid escapes, found left to right as a JSON reader finds them (so the pairs of a run of
# backslashes are the escaped backslashes they are): every backslash outside them is stray.
_VALID_ESCAPE = re.compile(r'(\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))')
# A \u escape cut by the end of a fragment: held back until the next one shows its digits.
_CUT_UNICODE = re.compile(r"\\u[0-9a-fA-F]{0,3}\Z")
_CONTROL_ESCAPES: dict[int, str] = {
    code: {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}.get(chr(code), f"\\u{code:04x}")
    for code in range(0x20)
}


def _repaired_body(body: str) -> str:
    """A string body with stray backslashes doubled and control characters escaped. ``split`` keeps
    the valid escapes at odd positions; the text between them is fixed with C-speed ``replace`` and
    ``translate``, however many stray backslashes or control characters it holds."""
    if "\\" not in body:
        return body.translate(_CONTROL_ESCAPES)
    parts = _VALID_ESCAPE.split(body)
    for index in range(0, len(parts), 2):
        parts[index] = parts[index].replace("\\", "\\\\").translate(_CONTROL_ESCAPES)
    return "".join(parts)


def _escape_starts_at(body: str, position: int) -> bool:
    """Whether the backslash at ``position`` starts an escape (an even run of backslashes before it)."""
    run = position - len(body[:position].rstrip("\\"))
    return run % 2 == 0


class JsonRepairer:
    """Repairs JSON text fragment by fragment, each character looked at once.

    Inside strings, raw control characters are escaped and a backslash that does not start a valid
    escape is doubled; outside strings nothing changes, so valid JSON passes through unchanged. The
    work is linear and runs at C speed whatever the text holds: ``re`` finds each string's end and
    doubles stray backslashes, ``str.translate`` escapes control characters — 8 MB of arguments full
    of raw TABs or stray backslashes cost one pass, never a re-scan of what came before. A backslash
    (or a ``\\u`` escape) at the end of a fragment is held back until the next fragment (or
    :meth:`finish`) shows what it escapes.
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
            end = _BODY.match(text, i).end()  # pyright: ignore[reportOptionalMemberAccess] - matches ""
            if end < n and text[end] == '"':
                out.append(_repaired_body(text[i:end]))
                out.append('"')
                i, in_string = end + 1, False
                continue
            # The fragment ends inside the string: hold back a lone last backslash or a cut \u escape.
            body = text[i:end]
            if end < n:
                self._held = text[end:]  # the lone backslash the body could not pair
            else:
                cut = _CUT_UNICODE.search(body)
                if cut is not None and _escape_starts_at(body, cut.start()):
                    self._held = body[cut.start() :]
                    body = body[: cut.start()]
            out.append(_repaired_body(body))
            break
        self._in_string = in_string
        return "".join(out)

    def finish(self) -> str:
        """The repaired form of what was held back, at the end of the text."""
        held, self._held = self._held, ""
        if not held:
            return ""
        # Only a backslash (or a cut \u escape) is held, inside a string: at the end it escapes nothing.
        return "\\\\" + held[1:].translate(_CONTROL_ESCAPES)


def repair_json(text: str) -> str:
    """Escape raw control characters and stray backslashes inside JSON strings; leave the rest alone.

    One linear pass (see :class:`JsonRepairer`).
    """
    repairer = JsonRepairer()
    return repairer.feed(text) + repairer.finish()


def _strict(text: str) -> Any:
    # NaN and Infinity are not JSON: no vendor accepts them back, and a tool must never see them.
    return jiter.from_json(text.encode("utf-8", "surrogatepass"), allow_inf_nan=False)


def _non_finite(value: Any) -> bool:
    """Whether a parsed JSON value holds a float that is not finite: a number too large for a float
    (``1e999``) parses as infinity even when ``NaN``/``Infinity`` literals are refused. Iterative: the
    depth of what the parser accepted never becomes Python recursion."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = item.__class__
        if kind is float:
            if not math.isfinite(item):
                return True
        elif kind is dict:
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
    return False


def _not_json(value: object) -> object:
    raise TypeError(f"{type(value).__name__} is not a JSON value")


# One compact, strict encoder built once: ``json.dumps`` builds an encoder object per call, which
# costs more than the encoding itself for the small argument objects of a tool call. No markers: a
# cycle (only an adapter bug can make one) ends in RecursionError, which arguments_text reports.
# The C encoder of the json module (absent on interpreters without its accelerator).
_c_make_encoder: Callable[..., object] | None = getattr(json.encoder, "c_make_encoder", None)
_c_encoder: Callable[[object, int], list[str] | tuple[str, ...]] | None = (
    cast(
        "Callable[[object, int], list[str] | tuple[str, ...]]",
        _c_make_encoder(None, _not_json, _encode_basestring, None, ":", ",", False, False, False),
    )
    if _c_make_encoder is not None
    else None
)


def arguments_text(arguments: dict[str, Any]) -> str:
    """Tool-call arguments as compact JSON text (non-ASCII kept as is), for a call that arrived whole
    and is sent on as one delta. Strict: ``NaN``, infinities, a value JSON cannot carry or a cycle
    raise :class:`ArgumentsError` — what cannot be written as JSON is never passed on as arguments."""
    try:
        if _c_encoder is not None:
            return "".join(_c_encoder(arguments, 0))
        return json.dumps(arguments, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (ValueError, TypeError, RecursionError) as exc:
        raise ArgumentsError(f"tool-call arguments cannot be written as JSON ({exc})", incomplete=False) from None


def arguments_round_trip(arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """``arguments`` as compact JSON text (:func:`arguments_text`) and that text parsed back: what a
    call that arrived whole sends as its one delta, and the arguments its message holds — exactly
    JSON, whatever the mapping held (an int key comes back a string, a tuple a list). Raises
    :class:`ArgumentsError` as :func:`arguments_text` does."""
    text = arguments_text(arguments)
    try:
        # The encoder wrote no NaN or infinity (it refuses them), so the non-finite walk of
        # parse_strict has nothing to find here; a lone surrogate in a string is not UTF-8 and fails.
        value = _strict(text)
    except ValueError as exc:
        raise ArgumentsError(f"tool-call arguments cannot be written as JSON ({exc})", incomplete=False) from None
    return text, cast("dict[str, Any]", value)


def parse_strict(text: str) -> dict[str, Any]:
    """Parse complete tool-call arguments exactly as given (no repair): blank text is ``{}``;
    anything else must be one JSON object of strict JSON — ``NaN``, ``Infinity`` and numbers out of a
    float's range are refused. Raises :class:`ArgumentsError`."""
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
    if _non_finite(value):
        raise ArgumentsError(
            "tool-call arguments hold a number JSON cannot carry (out of a float's range)", incomplete=False
        )
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
    prefix is not the start of a strict JSON object (``NaN``, ``Infinity`` and out-of-range numbers
    are not JSON: a preview never shows a value the final parse would refuse)."""
    try:
        value = jiter.from_json(
            text.encode("utf-8", "surrogatepass"), partial_mode="trailing-strings", allow_inf_nan=False
        )
    except ValueError:
        return None
    if not isinstance(value, dict) or _non_finite(value):
        return None
    return cast("dict[str, Any]", value)


def parse_partial(text: str) -> dict[str, Any]:
    """Best-effort view of a JSON object prefix; ``{}`` when nothing useful can be read. Never raises."""
    if not text:
        return {}
    value = partial_object(text)
    if value is None:
        value = partial_object(repair_json(text))
    return value if value is not None else {}
