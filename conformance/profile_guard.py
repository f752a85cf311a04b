"""The adapter's wire profile, checked and guarded: it is the adapter's code, so the harness treats it so.

A :class:`~normalize.wire.WireProfile` carries functions of the adapter's (how to take the terminal
marker out, how a payload nests, what an error looks like) and possibly a framing of its own. The
harness runs them while it plans the scenarios — in the watched worker, so a profile that hangs is
bounded like any adapter code. :func:`check_profile` refuses a declaration of the wrong shape before
the run (a usage error); :func:`guarded` wraps every function so that whatever one raises (an exit or
an interrupt included) or returns of the wrong type becomes a :class:`ProfileFailure`, which the
checks that needed it report as the adapter's failure, naming the function.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from conformance.text import class_name, describe_exception, kind_of
from normalize.wire import (
    BUILTIN_FRAMINGS,
    DEFAULT_MAX_FRAME_BYTES,
    DROP,
    FEATURES,
    Drop,
    Ending,
    ErrorSample,
    Framer,
    FrameSpan,
    FrameView,
    Framing,
    WireProfile,
)

__all__ = ["ProfileFailure", "check_profile", "guarded"]

_T = TypeVar("_T")
_AFTER = ("nothing", "trailer", "eof")


class ProfileFailure(ValueError):
    """A function of the adapter's wire profile raised, or returned something of the wrong type."""


def check_profile(profile: object) -> WireProfile:
    """``profile`` when it is a WireProfile of the right shape; ``TypeError`` naming what is wrong."""
    if not isinstance(profile, WireProfile):
        raise TypeError(f"the wire profile must be a normalize.wire.WireProfile, not a {class_name(kind_of(profile))}")
    problems: list[str] = []
    if not isinstance(profile.api, str) or not profile.api.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
        problems.append("api is not a non-empty string")
    framing = cast("object", profile.framing)
    if not isinstance(framing, Framing):
        problems.append(f"framing is a {class_name(kind_of(framing))}, not a normalize.wire.Framing")
    else:
        declared = cast("object", framing)
        media = cast("object", getattr(declared, "media_types", None))
        items = cast("tuple[object, ...]", media) if isinstance(media, tuple) else ()
        if not items or not all(isinstance(item, str) for item in items):
            problems.append("framing.media_types is not a non-empty tuple of strings")
        problems.extend(
            f"framing.{field} is not a string"
            for field in ("name", "unit")
            if not isinstance(getattr(declared, field, None), str)
        )
    ending = cast("object", profile.ending)
    if ending is not None:
        if not isinstance(ending, Ending):
            problems.append(f"ending is a {class_name(kind_of(ending))}, not a normalize.wire.Ending")
        elif not isinstance(ending.marker, str) or not (ending.strip is None or callable(ending.strip)):  # pyright: ignore[reportUnnecessaryIsInstance]
            problems.append("ending needs a marker name and a strip function (or None)")
        elif ending.after not in _AFTER:
            problems.append(f"ending.after is {ending.after!r}, not one of {', '.join(_AFTER)}")
    envelope = cast("object", profile.envelope)
    if envelope is not None and not (
        callable(getattr(envelope, "open", None)) and callable(getattr(envelope, "seal", None))
    ):
        problems.append("envelope has no open() and seal()")
    for field in ("error_body", "stream_error"):
        value = cast("object", getattr(profile, field))
        if value is not None and not callable(value):
            problems.append(f"{field} is not callable")
    recordings = cast("object", profile.recordings)
    try:
        pairs = list(recordings.items()) if isinstance(recordings, Mapping) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType, reportUnknownVariableType]
    except Exception as exc:  # a mapping of the adapter's whose items() fails
        pairs = None
        problems.append(f"recordings could not be read: {describe_exception(exc)}")
    keepalive = cast("object", profile.keepalive)
    if not isinstance(keepalive, frozenset | set | tuple) or not all(
        isinstance(name, str) for name in cast("frozenset[object]", keepalive)
    ):
        problems.append("keepalive is not a set of frame names")
    if pairs is None:
        if not problems or not problems[-1].startswith("recordings"):
            problems.append("recordings is not a mapping of a feature to a recording name")
    elif not all(feature in FEATURES and isinstance(name, str) for feature, name in pairs):  # pyright: ignore[reportUnknownVariableType]
        problems.append(f"recordings must map features ({', '.join(FEATURES)}) to recording names")
    if problems:
        raise TypeError(
            f"the wire profile of api {getattr(profile, 'api', '?')!r} is not usable: {'; '.join(problems)}"
        )
    return profile


def _run(api: str, what: str, call: Callable[[], _T], accept: Callable[[object], bool], wanted: str) -> _T:
    try:
        result = call()
    except BaseException as exc:  # the adapter's code: an exit or an interrupt is its failure too
        raise ProfileFailure(f"the wire profile of api {api!r}: {what} raised {describe_exception(exc)}") from None
    if not accept(result):
        got = class_name(kind_of(result))
        raise ProfileFailure(f"the wire profile of api {api!r}: {what} returned a {got}, not {wanted}")
    return result


def _bytes(value: object) -> bool:
    return isinstance(value, bytes)


def _sample(value: object) -> bool:
    if not isinstance(value, ErrorSample):
        return False
    body, content_type, headers = cast("tuple[object, object, object]", (value.body, value.content_type, value.headers))
    if not isinstance(body, bytes) or not isinstance(content_type, str) or not isinstance(headers, tuple):
        return False
    pairs = cast("tuple[object, ...]", headers)
    return all(
        isinstance(pair, tuple)
        and len(cast("tuple[object, ...]", pair)) == 2
        and all(isinstance(part, str) for part in cast("tuple[object, ...]", pair))
        for pair in pairs
    )


class _Envelope:
    def __init__(self, api: str, inner: Any) -> None:
        self._api, self._inner = api, inner

    def open(self, payload: bytes, /) -> bytes | None:
        return _run(
            self._api,
            "envelope.open",
            lambda: self._inner.open(payload),
            lambda value: value is None or _bytes(value),
            "bytes or None",
        )

    def seal(self, inner: bytes, payload: bytes, /) -> bytes:
        return _run(self._api, "envelope.seal", lambda: self._inner.seal(inner, payload), _bytes, "bytes")


class _Framing(Framing[Any]):
    """A third party's framing: its splitter and rewriter guarded (the harness never frames a stream)."""

    def __init__(self, api: str, inner: Framing[Any]) -> None:
        self._api, self._inner = api, inner
        self.name, self.unit, self.media_types = inner.name, inner.unit, inner.media_types

    def framer(self, *, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> Framer[Any]:
        return self._inner.framer(max_frame_bytes=max_frame_bytes)

    def spans(self, body: bytes) -> list[FrameSpan]:
        def whole(value: object) -> bool:
            return isinstance(value, list) and all(isinstance(span, FrameSpan) for span in value)  # pyright: ignore[reportUnknownVariableType]

        return _run(self._api, "framing.spans", lambda: self._inner.spans(body), whole, "a list of FrameSpan")

    def rewrite(self, span: FrameSpan, payload: bytes) -> bytes:
        return _run(self._api, "framing.rewrite", lambda: self._inner.rewrite(span, payload), _bytes, "bytes")

    def accepts(self, content_type: str) -> bool:
        return _run(
            self._api,
            "framing.accepts",
            lambda: self._inner.accepts(content_type),
            lambda value: isinstance(value, bool),
            "a bool",
        )


def guarded(profile: WireProfile) -> WireProfile:
    """``profile`` with every function of the adapter's wrapped (see the module docstring)."""
    api = profile.api
    ending = profile.ending
    if ending is not None and ending.strip is not None:
        strip = ending.strip

        def guarded_strip(frame: FrameView) -> Drop | bytes | None:
            return _run(
                api,
                "ending.strip",
                lambda: strip(frame),
                lambda value: value is None or value is DROP or _bytes(value),
                "None, DROP or bytes",
            )

        ending = Ending(ending.marker, guarded_strip, ending.after)
    error_body = profile.error_body
    stream_error = profile.stream_error
    return WireProfile(
        api=api,
        framing=profile.framing if profile.framing in BUILTIN_FRAMINGS else _Framing(api, profile.framing),
        ending=ending,
        envelope=_Envelope(api, profile.envelope) if profile.envelope is not None else None,
        error_body=(
            (
                lambda status, message: _run(
                    api, "error_body", lambda: error_body(status, message), _sample, "an ErrorSample"
                )
            )
            if error_body is not None
            else None
        ),
        stream_error=(
            (lambda message: _run(api, "stream_error", lambda: stream_error(message), _bytes, "bytes"))
            if stream_error is not None
            else None
        ),
        recordings=dict(profile.recordings),
        keepalive=frozenset(profile.keepalive),
    )
