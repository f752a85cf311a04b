"""``StopTable``: a vendor's stop (finish) reasons declared as data, and how each one ends the message.

Every wire api names why a response stopped in its own words (``end_turn``, ``STOP``,
``finish_reason: "length"``, ``incomplete_details.reason``). A decoder maps that word with one table
instead of a hand-written function, so the mapping reads as a list and every adapter shape maps the
same way:

- a reason in ``stops`` ends the message normally: ``stop``, ``length`` or ``toolUse`` (the builder
  turns ``stop`` into ``toolUse`` when a complete tool call exists);
- a reason in ``errors`` (or starting with a prefix in ``error_prefixes``, for families that grow,
  like Gemini's ``IMAGE_*`` filters) ends it as an error of that kind, the raw reason as the error's
  ``code``;
- anything else is the ``unknown`` kind — a ``protocol`` error by default, since a word we cannot
  read must not pass as success.

Messages: ``messages`` gives the text for a reason or for a kind (the reason wins); otherwise
``error_message`` (``"{vendor} stopped the response: {raw}"``) for a known error reason and
``unknown_message`` for an unknown one.
Templates may use ``{vendor}`` and ``{raw}``; a ``detail`` the vendor sent with the reason (Gemini's
``finishMessage``) is appended after a colon. Pure data and arithmetic: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import NamedTuple, get_args

from normalize import ErrorInfo, ErrorKind, MessageBuilder, StopReason

__all__ = ["StopMapping", "StopTable"]

#: What a reason in ``stops`` may map to: the normal ends of a message.
_NORMAL_STOPS = frozenset({"stop", "length", "toolUse"})
_ERROR_KINDS = frozenset(get_args(ErrorKind))


class StopMapping(NamedTuple):
    """A vendor's reason, mapped: the stop reason, and for an error its info and message."""

    reason: StopReason
    error: ErrorInfo | None
    message: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class StopTable:
    """One vendor's stop reasons (see the module docstring). Checked when declared: a ``stops`` value
    that is not ``stop|length|toolUse`` or an error kind that does not exist raises ``ValueError``."""

    vendor: str
    stops: Mapping[str, StopReason]
    errors: Mapping[str, ErrorKind] = field(default_factory=dict[str, ErrorKind])
    error_prefixes: Mapping[str, ErrorKind] = field(default_factory=dict[str, ErrorKind])
    messages: Mapping[str, str] = field(default_factory=dict[str, str])
    unknown: ErrorKind = "protocol"
    #: Whether an unknown reason may succeed when the request is repeated (its kind's default if None).
    unknown_retryable: bool | None = None
    error_message: str = "{vendor} stopped the response: {raw}"
    unknown_message: str = "{vendor} sent an unknown stop reason: {raw!r}"

    def __post_init__(self) -> None:
        bad = {raw: mapped for raw, mapped in self.stops.items() if mapped not in _NORMAL_STOPS}
        if bad:
            raise ValueError(f"{self.vendor} stop reasons must map to stop, length or toolUse, got {bad!r}")
        kinds = {*self.errors.values(), *self.error_prefixes.values(), self.unknown}
        unknown_kinds = sorted(kind for kind in kinds if kind not in _ERROR_KINDS)
        if unknown_kinds:
            raise ValueError(f"{self.vendor} stop table names error kinds that do not exist: {unknown_kinds}")

    def with_stops(self, extra: Mapping[str, StopReason]) -> StopTable:
        """This table with ``extra`` reasons added to (or replacing) ``stops`` — a server's own words."""
        if not extra:
            return self
        return replace(self, stops={**self.stops, **extra})

    def map(self, raw: str, *, detail: str = "", message: str | None = None) -> StopMapping:
        """Map ``raw``; ``message`` (when given) replaces the table's text for an error."""
        mapped = self.stops.get(raw)
        if mapped is not None:
            return StopMapping(mapped, None, None)
        kind: ErrorKind | None = self.errors.get(raw)
        if kind is None:
            kind = next((named for prefix, named in self.error_prefixes.items() if raw.startswith(prefix)), None)
        if kind is None:
            info = ErrorInfo.of(self.unknown, code=raw)
            if self.unknown_retryable is not None:
                info.retryable = self.unknown_retryable
            template = self.messages.get(raw) or self.unknown_message
        else:
            info = ErrorInfo.of(kind, code=raw)
            template = self.messages.get(raw) or self.messages.get(kind) or self.error_message
        if message is None:
            message = template.format(vendor=self.vendor, raw=raw)
        detail = detail.strip()
        return StopMapping("error", info, f"{message}: {detail}" if detail else message)

    def stop(self, builder: MessageBuilder, raw: str, *, detail: str = "", message: str | None = None) -> StopMapping:
        """Map ``raw`` and record it on ``builder`` (``builder.stop``); returns the mapping."""
        mapping = self.map(raw, detail=detail, message=message)
        builder.stop(raw, mapping.reason, error=mapping.error, error_message=mapping.message)
        return mapping
