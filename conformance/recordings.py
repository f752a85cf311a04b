"""Recordings: the successful responses the harness replays and mutates.

A :class:`Recording` is one HTTP 200 interaction, kept as a one-interaction
:class:`cassettes.Cassette` so every mutation of :mod:`cassettes.mutations` applies to it. They come
from the adapter author's own cassette files, or — when none are given — from the bundled library,
as the api's wire profile names them: a text one, a tool-call one, a parallel tool-call one and a
thinking one (each only when the capabilities declare the feature). The profile's names also say
which of the author's own cassettes shows what (by name, never by sort order): a cassette matches a
name by its header ``name``, else by its file name, and the report says which (a header name that
differs from the file's is no surprise then).

One recording may serve several features when its names say so (the profile's map names one
cassette for ``tool`` and ``parallel``): it is replayed once and judged by each feature's check.
Which recording serves each declared feature — or why none does — is a :class:`FeatureSource`
(:func:`feature_sources`), in the report and its JSON. A feature no recording serves is never
judged on some other replay: its check (P2 ``tool``, P3 ``parallel``, P4 ``thinking``) is
``unsupported``, with the reason, and the verdict says the adapter has limitations. In particular a
parallel-calls recording does not serve ``tool`` unless it is named for it too: P3 already judges
it, and P2 is about a reply with one call, which an adapter may stream differently.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path, PurePath
from typing import Any, Literal

from cassettes import Cassette, CassetteError, library
from cassettes import load as load_cassette
from conformance.target import Capabilities, CassetteSource
from normalize.wire import FEATURES, Feature, WireProfile, profile_for

__all__ = [
    "CassetteSource",
    "Feature",
    "FeatureSource",
    "MatchedBy",
    "NoRecordings",
    "Pick",
    "Recording",
    "RecordingsError",
    "feature_sources",
    "label_features",
    "library_recordings",
    "load_recordings",
    "unserved",
]


class RecordingsError(ValueError):
    """The cassettes given cannot be replayed: missing, unreadable, or without a successful response."""


class NoRecordings(RecordingsError):
    """An HTTP adapter was given no cassettes, and its api has no bundled recordings."""


#: How a recording was picked for a feature, as a token (the report's JSON ``matchedBy``): ``name``
#: (the cassette's header name, or the name an in-memory cassette was given), ``file`` (its file
#: name), ``library`` (the bundled recording the wire profile names) or ``first`` (``text`` only: no
#: recording is named for it, and the first one serves).
MatchedBy = Literal["name", "file", "library", "first"]


@dataclass(frozen=True, slots=True)
class Pick:
    """A recording picked for ``feature``: ``by`` which of its names (:data:`MatchedBy`) and ``how``,
    in words (``its file name tool.jsonl (its header names it 'x')``)."""

    feature: Feature
    by: MatchedBy
    how: str


@dataclass(frozen=True, slots=True)
class Recording:
    """One successful response to replay: ``name`` (unique in a run: the cassette's name or file
    stem, ``#i`` for the i-th of several; see :func:`load_recordings`), ``cassette`` (exactly one
    interaction) and the features it was picked for (``picks``: none, one, or several when its names
    say so).

    ``source`` is where it came from — a cassette file's path as given or a bundled library name;
    None for a cassette passed in memory — and ``interaction`` its index in that source when the
    source holds several interactions (so ``cassettes mutate`` can pick it out again). ``location``
    is ``source`` as a report shows it, the same on every machine: the file's path relative to the
    cassette directory given (its file name when the file itself was given), the bundled name.
    """

    name: str
    cassette: Cassette
    picks: tuple[Pick, ...] = ()
    source: str | None = None
    interaction: int | None = None
    location: str | None = None

    @property
    def features(self) -> tuple[Feature, ...]:
        """The features it was picked for, in :data:`~normalize.wire.FEATURES` order of picking."""
        return tuple(pick.feature for pick in self.picks)

    def pick(self, feature: Feature) -> Pick | None:
        """How it was picked for ``feature``; None when it was not."""
        return next((pick for pick in self.picks if pick.feature == feature), None)

    def picked(self, pick: Pick) -> Recording:
        """This recording, picked for one more feature."""
        return replace(self, picks=(*self.picks, pick))

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


#: How :func:`library_recordings` says it picked a recording.
_BUNDLED = "the bundled recording the wire profile names"


def library_recordings(capabilities: Capabilities, profile: WireProfile | None = None) -> list[Recording]:
    """The bundled recordings the api's wire profile names for the declared features (``profile``,
    else the one declared for ``capabilities.api``; empty without one), each once: a recording the
    profile names for several features serves them all. A name missing from the installed library
    is skipped (:func:`feature_sources` then says so)."""
    profile = profile if profile is not None else profile_for(capabilities.api)
    picks: Mapping[Feature, str] = profile.recordings if profile is not None else {}
    available = set(library.names()) if picks else set[str]()
    found: dict[str, Recording] = {}
    for feature in _wanted(capabilities):
        name = picks.get(feature)
        if name is None or name not in available:
            continue
        if name not in found:
            first = _split(name, library.load(name), name)[:1]
            if not first:
                continue
            found[name] = first[0]
        found[name] = found[name].picked(Pick(feature, "library", _BUNDLED))
    return list(found.values())


def _wanted_names(feature: Feature, profile: WireProfile | None) -> tuple[str, ...]:
    """The names a recording of ``feature`` is looked for under: the profile's, then the feature's own."""
    declared = profile.recordings.get(feature) if profile is not None else None
    return tuple(dict.fromkeys(name for name in (declared, feature) if name))


def _matches(item: Recording, wanted: str, feature: Feature) -> Pick | None:
    """How ``item`` is named ``wanted`` — by its cassette's header name, else by its file name (an
    in-memory cassette without a header name: by the name it was given) — or None."""
    header = item.cassette.name
    if header is not None and header == wanted:
        return Pick(feature, "name", "its header name")
    if item.source is not None and item.source.endswith(".jsonl"):
        file = PurePath(item.source)
        if file.stem == wanted:
            differs = f" (its header names it {header!r})" if header else ""
            return Pick(feature, "file", f"its file name {file.name}{differs}")
    elif item.source is None and header is None and item.name.partition("#")[0].partition("~")[0] == wanted:
        return Pick(feature, "name", f"its name {wanted!r}")
    return None


def label_features(recordings: list[Recording], profile: WireProfile | None) -> list[Recording]:
    """``recordings`` with the features each shows: for each feature, the recording named as the
    profile names it, else — for a feature the profile names no recording of here — named after the
    feature (``text.jsonl``, ``tool``, ``parallel``, ``thinking``); the first match per feature. A
    cassette is matched by its header ``name`` first, then by its file name (every recording by
    header name before any by file name); :attr:`Recording.picks` says which. One recording serves
    every feature its names match (a map that names the same cassette for ``tool`` and
    ``parallel``)."""
    labelled = list(recordings)
    for feature in FEATURES:
        for wanted in _wanted_names(feature, profile):
            found = next(
                (
                    (index, pick)
                    for by in ("name", "file")
                    for index, item in enumerate(labelled)
                    for pick in [_matches(item, wanted, feature)]
                    if pick is not None and pick.by == by
                ),
                None,
            )
            if found is not None:
                index, pick = found
                labelled[index] = labelled[index].picked(pick)
                break
    return labelled


@dataclass(frozen=True, slots=True)
class FeatureSource:
    """Which recording serves a declared ``feature``'s checks, and how it was picked — or why none does.

    ``recording`` is its name in the run (None: no recording serves the feature); ``source`` where it
    came from as the report shows it (:attr:`Recording.location`: a path relative to the cassette
    directory given, a file name, a bundled name; None in memory or unserved); ``matched_by`` how it
    was picked, as a token (:data:`MatchedBy`; None when unserved) and ``via`` the same in words (its
    header name, its file name, the profile's bundled pick; for ``text`` without a match, the first
    recording); ``also`` the other declared features the same recording serves; ``wanted`` the names
    it was looked for under; ``problem`` what is missing when none serves it (the report quotes it).
    """

    feature: Feature
    recording: str | None
    source: str | None = None
    via: str = ""
    wanted: tuple[str, ...] = ()
    problem: str = ""
    matched_by: MatchedBy | None = None
    also: tuple[Feature, ...] = ()

    def __str__(self) -> str:
        if self.recording is None:
            return f"{self.feature}: no recording — {self.problem}"
        shared = f" (it serves {' and '.join(self.also)} too)" if self.also else ""
        return f"{self.feature}: {self.recording}, by {self.via}{shared}"

    def to_json(self) -> dict[str, Any]:
        """The source as a JSON object (the fields are documented in docs/conformance.md, "The JSON
        report"): ``matchedBy`` is the token, ``detail`` the words; ``problem`` is empty when served."""
        return {
            "feature": self.feature,
            "recording": self.recording,
            "source": self.source,
            "matchedBy": self.matched_by,
            "detail": self.via,
            "also": list(self.also),
            "wanted": list(self.wanted),
            "problem": self.problem,
        }


def _quoted(names: tuple[str, ...]) -> str:
    return " or ".join(repr(name) for name in names)


def feature_sources(
    recordings: list[Recording], capabilities: Capabilities, profile: WireProfile | None
) -> tuple[FeatureSource, ...]:
    """For each feature the capabilities declare (text always; tool, parallel, thinking as declared),
    the recording that serves it (as labelled by :func:`label_features` or :func:`library_recordings`)
    or why none does: the name the api's recordings map (``WireApi(recordings=...)``) gives it, or the
    feature's own, matches no recording given (none bundled, none among the cassettes). Text falls
    back to the first recording (every check that needs one replay takes it); no other feature does —
    a parallel-calls recording serves ``tool`` only when it is named for it too.
    Empty for an adapter without HTTP (it replays nothing)."""
    if not capabilities.http:
        return ()
    wanted_features = _wanted(capabilities)
    # The library's recordings are each picked for a feature; none of the author's is picked that way.
    bundled = any(pick.by == "library" for item in recordings for pick in item.picks)
    declared: Mapping[Feature, str] = profile.recordings if profile is not None else {}
    found: list[FeatureSource] = []
    for feature in wanted_features:
        served = next(((item, pick) for item in recordings for pick in item.picks if pick.feature == feature), None)
        if served is not None:
            item, pick = served
            also: tuple[Feature, ...] = tuple(f for f in item.features if f != feature and f in wanted_features)
            wanted = _wanted_names(feature, profile)
            found.append(FeatureSource(feature, item.name, item.location, pick.how, wanted, "", pick.by, also))
            continue
        name = declared.get(feature)
        if bundled or not recordings:
            wanted = (name,) if name else ()
            problem = (
                f"the api's wire profile names {name!r} for it, which the installed library does not hold"
                if name
                else "the api's wire profile names no bundled recording of it"
            )
        else:
            wanted = _wanted_names(feature, profile)
            mapped = f"the api's recordings map names {name!r} for it; " if name else ""
            problem = f"{mapped}no cassette given is named {_quoted(wanted)} (by its header name or its file name)"
            parallel = next((item for item in recordings if "parallel" in item.features), None)
            if feature == "tool" and parallel is not None:
                problem += (
                    f"; the parallel-calls recording {parallel.name!r} serves tool only when named for it too "
                    "(WireApi(recordings={'tool': ...}))"
                )
        if feature == "text" and recordings:
            first = recordings[0]
            via = f"being the first recording ({problem})"
            found.append(FeatureSource(feature, first.name, first.location, via, wanted, "", "first"))
            continue
        found.append(FeatureSource(feature, None, None, "", wanted, problem))
    return tuple(found)


def unserved(
    recordings: list[Recording], capabilities: Capabilities, profile: WireProfile | None, feature: Feature
) -> str | None:
    """Why a check of ``feature`` cannot be examined — no recording serves it (:func:`feature_sources`;
    P2 ``tool``, P3 ``parallel``, P4 ``thinking``) — else None (one does, or it is not declared)."""
    source = next(
        (item for item in feature_sources(recordings, capabilities, profile) if item.feature == feature), None
    )
    if source is None or source.recording is not None:
        return None
    return (
        f"not examined: no recording shows {feature} ({source.problem}); give the adapter a cassette of it, "
        "named after the feature or as WireApi(recordings=...) names it"
    )


def _split(name: str, cassette: Cassette, source: str | None, location: str | None = None) -> list[Recording]:
    good = [
        (index, item)
        for index, item in enumerate(cassette.interactions)
        if item.response.status == 200 and item.response.body
    ]
    several = len(cassette.interactions) > 1

    def one(label: str, index: int) -> Recording:
        single = replace(cassette, interactions=(cassette.interactions[index],))
        return Recording(
            label, single, source=source, interaction=index if several else None, location=location or source
        )

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


def _location(file: Path, root: Path) -> str:
    """``file`` as a report shows it, the same wherever the folder is: its path relative to the
    directory given, or its file name when the file itself was given."""
    if file != root and file.is_relative_to(root):
        return file.relative_to(root).as_posix()
    return file.name


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
            groups.append((name, _relative(file, root), _split(name, cassette, str(file), _location(file, root))))
    found = _unique(groups)
    if not found:
        raise RecordingsError("the cassettes hold no successful (HTTP 200) response to replay")
    return label_features(found, profile)
