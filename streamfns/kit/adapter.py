"""``Adapter``: the one declaration an adapter package makes about itself.

A package that holds an adapter sets ``ADAPTER = Adapter(...)`` in its ``__init__``. Everything
that lists adapters derives from these declarations: the registry (``streamfns.stream`` dispatches
on ``model.api``), the model catalog (the package's ``models.json``), ``conformance.targets`` (the
package's ``conformance.py``) and ``make demo`` (its demo recordings). Built-in adapters are the
sub-packages of ``streamfns`` that declare one; an installed third-party package makes its adapter
known through the entry-point group :data:`ENTRY_POINT_GROUP`::

    [project.entry-points."streamfns.adapters"]
    my-api = "my_adapter:ADAPTER"
"""

from __future__ import annotations

from dataclasses import dataclass

from normalize.wire import ENTRY_POINT_GROUP, WireProfile
from streamfns._contract import StreamFn

__all__ = ["ENTRY_POINT_GROUP", "Adapter"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Adapter:
    """An adapter package's declaration.

    ``api`` is the wire api it serves and ``stream_fn`` its StreamFn; ``package`` is the package's
    ``__name__``, where ``catalog`` (a ``models.json`` file, or None) and ``target`` (``"module:attr"``
    relative to the package naming its conformance :class:`~conformance.Target`, or None) live.
    ``demo`` names bundled recordings ``make demo`` replays through the adapter (as
    ``(cassette name, what it shows, the prompt it answered)``). ``profile`` describes the api's bytes
    for the conformance harness and the cassette tools, which find it by api name through this
    declaration; when ``stream_fn`` is the ``stream`` of a ``WireApi`` of the same api, it is that
    declaration's profile.
    """

    api: str
    stream_fn: StreamFn
    package: str
    profile: WireProfile | None = None
    catalog: str | None = "models.json"
    target: str | None = "conformance:TARGET"
    demo: tuple[tuple[str, str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.profile is None:
            declared = getattr(getattr(self.stream_fn, "__self__", None), "profile", None)
            # The StreamFn is a WireApi's stream serving this api: its declaration says how the bytes look.
            if isinstance(declared, WireProfile) and declared.api == self.api:
                object.__setattr__(self, "profile", declared)
        if self.profile is not None and self.profile.api != self.api:
            raise ValueError(f"the {self.api} adapter declares the profile of api {self.profile.api!r}")
