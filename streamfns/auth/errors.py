"""The exceptions of :mod:`streamfns.auth`: none of their messages ever quotes a token.

A message that carries an OAuth server's own words quotes them only after every token known at that
point is blanked (:func:`streamfns.kit.redact`) and the text is cut short (:func:`quote_vendor`).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable
from typing import cast

from normalize import ErrorKind
from streamfns.kit import redact

__all__ = ["LoginExpired", "LoginFailed", "LoginRequired", "StoreError", "quote_vendor"]

#: The most characters of an OAuth server's text a message quotes.
VENDOR_QUOTE_CHARS = 300
#: JSON fields of an OAuth answer whose values are credentials: blanked wherever they also appear.
#: A run of token characters this long that mixes letters and digits is taken for a credential this
#: client does not know (a rotated token, a code from an earlier flow) and blanked as well: error
#: words (``refresh_token_invalidated``) and plain URLs have no digits and stay readable.
_TOKEN_LIKE = re.compile(r"[A-Za-z0-9._~+/=%:;-]{20,}")
_REDACTED = "[redacted]"
_TOKEN_FIELD = re.compile(
    r"(?:access_token|refresh_token|id_token|token|device_code|authorization_code|code_verifier)"
    r"[\"']?\s*[:=]\s*[\"']?([^\"'&\s,;}]{8,})"
)
TOKEN_FIELDS = frozenset(
    {"access_token", "refresh_token", "id_token", "token", "device_code", "authorization_code", "code_verifier"}
)


class StoreError(Exception):
    """The credential store cannot be used as it is: the message names the file and the fix, never a token."""


class LoginFailed(Exception):
    """A login (or a refresh) did not complete: denied, code expired, aborted, server error.

    ``kind`` is the :data:`normalize.ErrorKind` a stream that needed this login ends with: ``auth``
    unless the OAuth server could not be reached (``network``, ``timeout``) or failed (``server``).
    """

    def __init__(self, message: str, *, kind: ErrorKind = "auth") -> None:
        super().__init__(message)
        self.message = message
        self.kind: ErrorKind = kind


class LoginRequired(LoginFailed):
    """No credential is stored for the provider; the message names its login command."""

    def __init__(self, message: str, *, login_command: str) -> None:
        super().__init__(message)
        self.login_command = login_command


class LoginExpired(LoginFailed):
    """The provider refused a refresh (revoked, expired); the message names its login command."""

    def __init__(self, message: str, *, login_command: str) -> None:
        super().__init__(message)
        self.login_command = login_command


def _token_values(value: object, into: list[str]) -> None:
    # Every string under a token-named key, at any depth: a hostile server may nest an echo.
    if isinstance(value, dict):
        for key, item in cast("dict[object, object]", value).items():
            if isinstance(item, str) and key in TOKEN_FIELDS:
                into.append(item)
            else:
                _token_values(item, into)
    elif isinstance(value, list):
        for item in cast("list[object]", value):
            _token_values(item, into)


def _blank_token_like(match: re.Match[str]) -> str:
    word = match.group(0)
    mixed = any(ch.isdigit() for ch in word) and any(ch.isalpha() for ch in word)
    return _REDACTED if mixed else word


def quote_vendor(text: str, secrets: Iterable[str]) -> str:
    """``text`` (an OAuth server's answer) fit to quote in a message: every spelling of every one of
    ``secrets`` and of every token-named field the text itself carries (``access_token``, ``token`` …)
    blanked, and every long token-like word too (letters and digits mixed: a credential not known
    here), then cut to :data:`VENDOR_QUOTE_CHARS` characters; whitespace runs become one space and control
    characters ``U+FFFD``."""
    # NULs first: text in a wide encoding read as bytes (UTF-16 as UTF-8) spells every token with a
    # NUL between its characters, which no redaction matches and a terminal shows as nothing.
    text = text.replace("\x00", "")
    sample = text[:4096]
    if sample and sum(ch.isprintable() or ch.isspace() for ch in sample) < 0.9 * len(sample):
        return "(a body that is not text)"
    known = [secret for secret in secrets if secret]
    with contextlib.suppress(ValueError):
        _token_values(json.loads(text), known)
    # Not JSON (cut, a form body, a text page): the same fields found by their spelling.
    known += (match.group(1) for match in _TOKEN_FIELD.finditer(text[: 64 * 1024]))
    # Redact before cutting (the cut must not leave half a secret), then cut what is left.
    cleaned = _TOKEN_LIKE.sub(_blank_token_like, " ".join(redact(text, known, limit=64 * 1024).split()))
    if len(cleaned) > VENDOR_QUOTE_CHARS:
        cleaned = cleaned[:VENDOR_QUOTE_CHARS] + " …"
    # A terminal shows these messages: no control characters (escape sequences) from the server.
    return "".join(ch if ch.isprintable() else "\ufffd" for ch in cleaned)
