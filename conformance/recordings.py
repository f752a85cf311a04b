"""Recordings: the successful responses the harness replays and mutates.

A :class:`Recording` is one HTTP 200 interaction, kept as a one-interaction
:class:`cassettes.Cassette` so every mutation of :mod:`cassettes.mutations` applies to it. They come
from the adapter author's own cassette files, or — when none are given — from the bundled library,
as the api's wire profile names them: a text one, a tool-call one, a parallel tool-call one and a
thinking one (each only when the capabilities declare the feature). The profile's names also say
which of the author's own cassettes shows what (by name, never by sort order).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from cassettes import Cassette, CassetteError, library
from cassettes import load as load_cassette
from conformance.target import Capabilities, CassetteSource
from normalize.wire import FEATURES, Feature, WireProfile, profile_for

__all__ = [
    "CassetteSource",
    "Feature",
    "NoRecordings",
    "Recording",
    "RecordingsError",
    "label_features",
    "library_recordings",
    "load_recordings",
]


class RecordingsError(ValueError):
    """The cassettes given cannot be replayed: missing, unreadable, or without a successful response."""


class NoRecordings(RecordingsError):
    """An HTTP adapter was given no cassettes, and its api has no bundled recordings."""


@dataclass(frozen=True, slots=True)
class Recording:
    """One successful response to replay: ``name`` (unique in a run: the cassette's name or file
    stem, ``#i`` for the i-th of several; see :func:`load_recordings`), ``cassette`` (exactly one
    interaction) and the ``feature`` it was picked for, if any.

    ``source`` is where it came from — a cassette file's path or a bundled library name; None for a
    cassette passed in memory — and ``interaction`` its index in that source when the source holds
    several interactions (so ``cassettes mutate`` can pick it out again).
    """

    name: str
    cassette: Cassette
    feature: Feature | None = None
    source: str | None = None
    interaction: int | None = None

    @property
    def model_id(self) -> str:
        """The model the recording was made with (``conformance-model`` when unknown)."""
        return self.cassette.model or "conformance-model"

    def reproduce(self, spec: str | None, out: str, *, adapter: str | None = None) -> str:
        """The ``cassettes mutate`` command that writes this recording with mutation ``spec`` (None: as
        recorded) to ``out``; ``adapter`` describes the ``--adapter`` option it needs, if any."""
        ops = [f"interaction:{self.interaction}"] if self.interaction is not None else []
        if spec:
            ops.append(spec)
        where = shlex.quote(self.source) if self.source is not None else None
        if not ops:
            return (
                f"the recording as recorded: {where}" if where else f"the in-memory cassette {self.name!r} as recorded"
            )
        command = f"cassettes mutate {where or 'FILE'} --op '{'+'.join(ops)}' -o {shlex.quote(out)}"
        if adapter is not None:
            command += f" ({adapter})"
        if where is None:
            return f"{command} (FILE: the in-memory cassette {self.name!r}, written with cassettes.save)"
        return command


def _wanted(capabilities: Capabilities) -> list[Feature]:
    features: list[Feature] = ["text"]
    if capabilities.tool_calls:
        features.append("tool")
    if capabilities.parallel_tool_calls:
        features.append("parallel")
    if capabilities.thinking:
        features.append("thinking")
    return features


def library_recordings(capabilities: Capabilities, profile: WireProfile | None = None) -> list[Recording]:
    """The bundled recordings the api's wire profile names for the declared features (``profile``,
    else the one declared for ``capabilities.api``; empty without one); names missing from the
    installed library are skipped."""
    profile = profile if profile is not None else profile_for(capabilities.api)
    picks: Mapping[Feature, str] = profile.recordings if profile is not None else {}
    available = set(library.names()) if picks else set[str]()
    found: list[Recording] = []
    for feature in _wanted(capabilities):
        name = picks.get(feature)
        if name is not None and name in available:
            found.extend(replace(r, feature=feature) for r in _split(name, library.load(name), name)[:1])
    return found


def _stem(name: str) -> str:
    """A recording's name without its path, its ``#i`` (one interaction of several) and ``~n`` suffixes."""
    return name.rpartition("/")[2].partition("#")[0].partition("~")[0]


def label_features(recordings: list[Recording], profile: WireProfile | None) -> list[Recording]:
    """``recordings`` with the feature each shows: the one the profile names it for, else — for a
    feature the profile names no recording of here — the feature's own name as the cassette's
    (``text.jsonl``, ``tool``, ``parallel``, ``thinking``); the first match per feature."""
    declared: Mapping[Feature, str] = profile.recordings if profile is not None else {}
    labelled = list(recordings)
    for feature in FEATURES:
        for wanted in dict.fromkeys(name for name in (declared.get(feature), feature) if name):
            found = next(
                (index for index, item in enumerate(labelled) if item.feature is None and _stem(item.name) == wanted),
                None,
            )
            if found is not None:
                labelled[found] = replace(labelled[found], feature=feature)
                break
    return labelled


def _split(name: str, cassette: Cassette, source: str | None) -> list[Recording]:
    good = [
        (index, item)
        for index, item in enumerate(cassette.interactions)
        if item.response.status == 200 and item.response.body
    ]
    several = len(cassette.interactions) > 1

    def one(label: str, index: int) -> Recording:
        single = replace(cassette, interactions=(cassette.interactions[index],))
        return Recording(label, single, source=source, interaction=index if several else None)

    if len(good) == 1:
        return [one(name, good[0][0])]
    return [one(f"{name}#{number}", index) for number, (index, _) in enumerate(good)]


def _files(source: str | os.PathLike[str]) -> list[Path]:
    path = Path(source)
    if path.is_dir():
        files = sorted(path.rglob("*.jsonl"))
        if not files:
            raise RecordingsError(f"no *.jsonl cassette files under {path}")
        return files
    if not path.exists():
        raise RecordingsError(f"cassette {path} does not exist")
    return [path]


def _load(file: Path) -> Cassette:
    try:
        return load_cassette(file)
    except (CassetteError, OSError, ValueError, RecursionError) as exc:
        raise RecordingsError(f"cannot load the cassette {file}: {exc}") from None


def _relative(file: Path, root: Path) -> str:
    """``file`` without its suffix, relative to the directory it was found under (as given otherwise)."""
    if file != root and file.is_relative_to(root):
        return file.relative_to(root).with_suffix("").as_posix()
    return file.with_suffix("").as_posix()


def _unique(groups: list[tuple[str, str, list[Recording]]]) -> list[Recording]:
    """The recordings, renamed where names clash: scenarios, reports and reproduction commands find
    a recording by its name, so two of the same name would replay one and point at the wrong file.

    ``groups`` holds each cassette's (name, path-based name, recordings). A cassette whose name is
    not unique is named by its path instead (relative to the directory given); what still clashes
    (one file given twice, two in-memory cassettes of one name) gets ``~2``, ``~3`` … in order.
    """
    count: dict[str, int] = {}
    for name, _, recordings in groups:
        if recordings:  # a cassette with nothing to replay takes no name
            count[name] = count.get(name, 0) + 1
    found: list[Recording] = []
    taken: set[str] = set()
    for name, by_path, recordings in groups:
        base = by_path if count.get(name, 0) > 1 else name
        for recording in recordings:
            label = base + recording.name[len(name) :]  # keeps the "#i" of one interaction among several
            unique, number = label, 1
            while unique in taken:
                number += 1
                unique = f"{label}~{number}"
            taken.add(unique)
            found.append(replace(recording, name=unique))
    return found


def load_recordings(source: CassetteSource, profile: WireProfile | None = None) -> list[Recording]:
    """Every successful (HTTP 200, non-empty body) interaction of the given cassettes, in order, each
    with a unique name (see :func:`_unique`) and the feature ``profile`` names it for, if any.

    Raises :class:`RecordingsError` (a ``ValueError``) when a path does not exist, a file is not a
    readable cassette, or nothing successful was recorded.
    """
    items: list[str | os.PathLike[str] | Cassette] = (
        [source] if isinstance(source, str | os.PathLike) else list(source)  # pyright: ignore[reportUnknownArgumentType]
    )
    groups: list[tuple[str, str, list[Recording]]] = []
    for item in items:
        if isinstance(item, Cassette):
            name = item.name or f"cassette{len(groups)}"
            groups.append((name, name, _split(name, item, None)))
            continue
        root = Path(item)
        for file in _files(item):
            cassette = _load(file)
            name = cassette.name or file.stem
            groups.append((name, _relative(file, root), _split(name, cassette, str(file))))
    found = _unique(groups)
    if not found:
        raise RecordingsError("the cassettes hold no successful (HTTP 200) response to replay")
    return label_features(found, profile)
