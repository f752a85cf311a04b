"""Finding the :class:`~normalize.wire.WireProfile` of an api by name.

Profiles come from two places, without this module importing any adapter by name:

* :func:`register_profile` — the adapter registry registers the profile of every adapter it loads, and
  the conformance harness the profile of the target it runs;
* the ``streamfns.adapters`` entry-point group, where every installed adapter (the built-in ones
  included) declares its ``Adapter``; its ``profile`` attribute is read. This is how the ``cassettes``
  command finds an api's terminal marker and framing with nothing imported beforehand.

A broken entry point is skipped and reported by :func:`profile_problems`, never raised.
"""

from __future__ import annotations

import functools
import threading
import types
from typing import Final

from normalize.wire.profile import WireProfile

__all__ = ["ENTRY_POINT_GROUP", "known_profiles", "profile_for", "profile_problems", "register_profile"]

#: The entry-point group adapters declare themselves in (``Adapter`` objects, or modules holding one
#: as ``ADAPTER``).
ENTRY_POINT_GROUP: Final = "streamfns.adapters"

_registered: dict[str, WireProfile] = {}
_problems: list[str] = []
_lock = threading.Lock()
#: Held while the entry points load: two threads asking at once import the plugins once.
_loading_lock = threading.RLock()


def register_profile(profile: WireProfile) -> None:
    """Make ``profile`` the one found for its api (it replaces one registered before, and wins over an
    entry point's)."""
    if not isinstance(profile, WireProfile):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise TypeError(f"expected a WireProfile, got {type(profile).__name__}")
    with _lock:
        _registered[profile.api] = profile


def _declared_profile(value: object) -> WireProfile | None:
    if isinstance(value, types.ModuleType):
        value = getattr(value, "ADAPTER", None)
    profile = value if isinstance(value, WireProfile) else getattr(value, "profile", None)
    return profile if isinstance(profile, WireProfile) else None


_loading = threading.local()


def _discovered() -> dict[str, WireProfile]:
    # An entry point whose import asks for a profile must not recurse into the loading under way.
    if getattr(_loading, "active", False):
        return {}
    _loading.active = True
    try:
        with _loading_lock:
            return _load_entry_points()
    finally:
        _loading.active = False


def _problem(text: str) -> None:
    if text not in _problems:
        _problems.append(text)


@functools.cache
def _load_entry_points() -> dict[str, WireProfile]:
    import importlib.metadata  # noqa: PLC0415 - reading distribution metadata costs ~20 ms: only when asked

    found: dict[str, WireProfile] = {}
    try:
        entries = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    except Exception as exc:  # broken distribution metadata must not break a lookup
        _problem(f"cannot list the {ENTRY_POINT_GROUP} entry points: {exc}")
        return found
    for entry in entries:
        try:
            profile = _declared_profile(entry.load())
        except Exception as exc:  # a broken plugin is reported, never raised
            _problem(f"adapter entry point {entry.name!r} ({entry.value}) failed to load: {exc}")
            continue
        if profile is None:
            continue
        if profile.api in found and found[profile.api] is not profile:
            _problem(f"adapter entry point {entry.name!r} declares api {profile.api!r} a second time; skipped")
            continue
        found[profile.api] = profile
    return found


def known_profiles() -> dict[str, WireProfile]:
    """Every profile that can be found, by api (registered ones win over entry points)."""
    with _lock:
        registered = dict(_registered)
    return {**_discovered(), **registered}


def profile_for(api: str | None) -> WireProfile | None:
    """The profile declared for ``api``, or None (for None, or an api nobody declares)."""
    if not api:
        return None
    with _lock:
        found = _registered.get(api)
    return found if found is not None else _discovered().get(api)


def profile_problems() -> list[str]:
    """What went wrong reading the entry points (empty when nothing did)."""
    _discovered()
    return list(_problems)
