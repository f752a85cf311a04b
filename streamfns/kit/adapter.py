"""``Adapter``: the one declaration an adapter package makes about itself.

A package that holds an adapter sets ``ADAPTER = Adapter(...)`` in its ``__init__``. Everything
that lists adapters derives from these declarations: the registry (``streamfns.stream`` dispatches
on ``model.api``), the model catalog (the package's ``models.json``), the conformance harness (which
runs an adapter from its declaration alone: ``conformance run my_adapter:ADAPTER``) and ``make demo``
(its demo recordings). Built-in adapters are the
sub-packages of ``streamfns`` that declare one; an installed third-party package makes its adapter
known through the entry-point group :data:`ENTRY_POINT_GROUP`::

    [project.entry-points."streamfns.adapters"]
    my-api = "my_adapter:ADAPTER"
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, cast

from normalize.wire import ENTRY_POINT_GROUP, WireProfile
from streamfns._contract import StreamFn

__all__ = ["ENTRY_POINT_GROUP", "Adapter"]


class _WireDeclaration(Protocol):
    """What :meth:`Adapter.from_wire` reads of a :class:`~streamfns.kit.WireApi` (named structurally: the
    declaration module does not import the wire module)."""

    @property
    def api(self) -> str: ...

    @property
    def profile(self) -> WireProfile: ...

    @property
    def stream_fn(self) -> StreamFn: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Adapter:
    """An adapter package's declaration.

    ``api`` is the wire api it serves and ``stream_fn`` its StreamFn; ``package`` is the package's
    ``__name__``, where ``catalog`` (a ``models.json`` file, or None) lives. ``demo`` names bundled
    recordings ``make demo`` replays through the adapter (as ``(cassette name, what it shows, the
    prompt it answered)``). ``profile`` describes the api's bytes for the conformance harness and the
    cassette tools, which find it by api name through this declaration; when ``stream_fn`` is the
    ``stream_fn`` of a ``WireApi`` of the same api, it is that declaration's profile.

    ``cassettes`` are the recordings the conformance harness replays for this adapter, in order, in
    place of the bundled ones its profile names (``WireApi(recordings=...)`` picks one per feature;
    this is for an adapter whose paths those do not all reach). Each entry is a cassette file or a
    directory of them, relative to the package, or else the name of a bundled recording
    (``cassettes.library``); the harness resolves them (``conformance.Target.from_adapter``). Empty:
    the profile's picks.
    """

    api: str
    stream_fn: StreamFn
    package: str
    profile: WireProfile | None = None
    catalog: str | None = "models.json"
    demo: tuple[tuple[str, str, str], ...] = ()
    cassettes: tuple[str, ...] = ()

    @classmethod
    def from_wire(
        cls,
        wire: _WireDeclaration,
        *,
        package: str,
        catalog: str | None = "models.json",
        demo: tuple[tuple[str, str, str], ...] = (),
        cassettes: tuple[str, ...] = (),
    ) -> Adapter:
        """The declaration of a package whose StreamFn is ``wire.stream_fn``: its api and profile are the
        wire api's (``stream_mine = WIRE.stream_fn``; ``ADAPTER = Adapter.from_wire(WIRE, package=__name__)``)."""
        return cls(
            api=wire.api,
            stream_fn=wire.stream_fn,
            package=package,
            profile=wire.profile,
            catalog=catalog,
            demo=demo,
            cassettes=cassettes,
        )

    def __post_init__(self) -> None:
        cassettes = cast("object", self.cassettes)
        # A bare string would read as one recording per character: say so where it is declared.
        if not isinstance(cassettes, tuple) or not all(
            isinstance(entry, str) and entry for entry in cast("tuple[object, ...]", cassettes)
        ):
            raise TypeError(f"the {self.api} adapter's cassettes must be a tuple of names, not {cassettes!r}")
        if self.profile is None:
            declared = getattr(getattr(self.stream_fn, "__self__", None), "profile", None)
            # The StreamFn is a WireApi's stream serving this api: its declaration says how the bytes look.
            if isinstance(declared, WireProfile) and declared.api == self.api:
                object.__setattr__(self, "profile", declared)
        if self.profile is not None and self.profile.api != self.api:
            raise ValueError(f"the {self.api} adapter declares the profile of api {self.profile.api!r}")
