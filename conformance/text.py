"""Text that came from an adapter, made safe to show: control characters escaped, exceptions described.

Everything an adapter writes — exception messages, error messages, names, the file names of its
cassettes — may reach a report, a terminal, an XML file or a one-line error. :func:`printable`
escapes what a terminal would act on (ESC starts a sequence that can retitle the window or clear
the screen), what hides or reorders text (zero-width and bidi controls), what XML 1.0 forbids and
what UTF-8 cannot encode (lone surrogates). :func:`describe_exception` turns an exception into an
exact ``str`` without letting it fail.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["class_name", "describe_exception", "kind_of", "printable"]

#: C0 and C1 controls and DEL; zero-width, bidi and other invisible formatting characters; lone
#: surrogates (not encodable); U+FFFE/U+FFFF (not characters, forbidden in XML).
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ud800-\udfff\ufffe\uffff]")

#: The longest exception message quoted.
_EXCEPTION_LIMIT = 300


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every unsafe character (see the module docstring) written as ``\\xNN`` or
    ``\\uNNNN``; a line break becomes ``\\x0a``, so one line stays one line."""
    return _UNPRINTABLE.sub(_escape, text)


def kind_of(value: object) -> type[object]:
    """``type(value)``: the one question that never runs the object's code (``isinstance`` may, through
    a ``__class__`` property), so the first to ask of anything an adapter hands over."""
    return type(value)


def class_name(kind: type[Any]) -> str:
    """``kind.__qualname__`` as an exact ``str``; never raises (a metaclass may answer anything)."""
    try:
        return str.__str__(kind.__qualname__)
    except BaseException:
        return "object of a class that will not say its name"


def describe_exception(exc: BaseException) -> str:
    """``Type: message`` (the message cut to 300 characters), an exact ``str``; never raises,
    whatever ``exc`` is. The text is not escaped (renderers do that): it is data."""
    name = class_name(type(exc))
    try:
        # __str__ may return a str subclass: str.__str__ copies it out, running none of its code.
        text = str.__str__(str(exc))[:_EXCEPTION_LIMIT]
    except BaseException:  # an adapter's exception may refuse to be printed
        text = "<its str() raised>"
    return f"{name}: {text}" if text else name
