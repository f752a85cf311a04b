"""From recordings to loopback plans: replays, mutations of them, and generic faults.

Every fault the harness serves is a :class:`~conformance.loopback.Scripted` plan. Replays and their
mutations are named as :class:`cassettes.mutation_specs.Mutation` objects — the grammar ``cassettes mutate
--op`` accepts, so a report can print the command that reproduces a scenario's bytes — applied to
the recording and turned into plans by :func:`plan` (:func:`served`, :func:`replay` and
:func:`mutated` build the scenarios); generic faults (non-stream bodies, silence) are written here.
No function knows a vendor protocol: frames, terminal markers and error bodies come from the api's
:class:`~normalize.wire.WireProfile` (given, or declared for the api, or — for an api nobody
declares — a framing read from the recorded content type), so cut points fall on frame boundaries
whatever the framing.
"""

from __future__ import annotations

from typing import Any

from cassettes import Cassette, End, EndKind, RecordedResponse
from cassettes.mutation_specs import DropTerminal, Mutation, Truncate
from cassettes.mutations import drop_terminal, json_payload_frames, resolve_profile
from conformance.loopback import Scripted, ScriptedEnd
from conformance.observe import Scenario, Served
from conformance.recordings import Recording
from normalize.wire import FrameView, WireProfile

__all__ = [
    "Wire",
    "api_of",
    "drop_marker",
    "frame_ends",
    "frame_offsets",
    "has_marker",
    "json_event_indexes",
    "marker_offset",
    "mutated",
    "open_ended",
    "plan",
    "raw_plan",
    "replay",
    "served",
    "trailer_cut",
    "with_reset",
]

#: The api's profile, or its name (the profile declared for it), or None (the cassette's api).
Wire = WireProfile | str | None

_FRAMING = frozenset({"content-length", "transfer-encoding", "content-encoding", "connection"})
# A recorded ``reset`` is replayed as a hang-up (FIN without the end of the chunked body): the
# client gets every recorded byte, then a broken connection. A TCP RST right after the data could
# make the client's kernel drop bytes it had not read yet, so the replay would not be deterministic.
_ENDS: dict[str, ScriptedEnd] = {"eof": "eof", "reset": "hangup", "timeout": "stall", "client_closed": "eof"}
#: Pause before a real RST, so the bytes sent before it reach the client application first.
RESET_SETTLE_S = 0.05


def _response(cassette: Cassette) -> RecordedResponse:
    return cassette.interactions[0].response


def _profile(cassette: Cassette, wire: Wire) -> WireProfile:
    if isinstance(wire, WireProfile):
        return wire
    return resolve_profile(cassette, api=wire)


def plan(cassette: Cassette, wire: Wire = None) -> Scripted:
    """Serve the cassette's first response as recorded: status, headers, the exact chunks (a chunk's
    ``stall_s`` becomes a silence before it) and its end (``timeout`` becomes a stall, ``reset`` a
    hang-up — see :func:`with_reset` for a real TCP reset). A 200 recorded without a content type is
    sent as the framing's own."""
    response = _response(cassette)
    headers = [(name, value) for name, value in response.headers if name.lower() not in _FRAMING]
    if response.status == 200 and not any(name.lower() == "content-type" for name, _ in headers):
        headers.append(("content-type", _profile(cassette, wire).framing.media_types[0]))
    chunks = [(chunk.stall_s, chunk.data) for chunk in response.chunks]
    end: End = response.end
    if end.stall_s:
        chunks.append((end.stall_s, b""))
    return Scripted(status=response.status, headers=headers, chunks=chunks, end=_ENDS[end.kind])


def with_reset(scripted: Scripted) -> Scripted:
    """The same plan ending in a real TCP reset, sent :data:`RESET_SETTLE_S` after the last bytes."""
    chunks = [*scripted.chunks, (RESET_SETTLE_S, b"")] if scripted.chunks else []
    return Scripted(status=scripted.status, headers=scripted.headers, chunks=chunks, end="reset")


def raw_plan(status: int, content_type: str, body: bytes, *, end: ScriptedEnd = "eof") -> Scripted:
    """A plan with one body chunk (none when ``body`` is empty)."""
    return Scripted(
        status=status, headers=[("content-type", content_type)], chunks=[(0.0, body)] if body else [], end=end
    )


def frame_offsets(cassette: Cassette, wire: Wire = None) -> list[int]:
    """Byte offsets where the body's frames start (the first is 0)."""
    return [span.start for span, _ in _profile(cassette, wire).frames(_response(cassette).body)]


def frame_ends(cassette: Cassette, wire: Wire = None) -> list[int]:
    """Byte offsets where the body's frames end."""
    return [span.end for span, _ in _profile(cassette, wire).frames(_response(cassette).body)]


def json_event_indexes(cassette: Cassette, wire: Wire = None) -> list[int]:
    """Indexes (as counted by :func:`cassettes.mutations.corrupt_json`) of the frames whose payload is
    JSON and not one of the keep-alive frames the api declares (an adapter may skip those unread)."""
    profile = _profile(cassette, wire)
    frames = json_payload_frames(profile, _response(cassette).body)
    keepalive = profile.keepalive
    return [
        index
        for index, (span, payload) in enumerate(frames)
        if not (keepalive and FrameView(span.name, payload).is_named(keepalive))
    ]


def api_of(cassette: Cassette, wire: Wire) -> str | None:
    """The api a mutation spec must name for ``cassettes mutate`` to read the cassette as ``wire``
    does: None when it is the cassette's own."""
    api = wire.api if isinstance(wire, WireProfile) else wire
    return None if not api or api == cassette.api else api


def drop_marker(cassette: Cassette, wire: Wire) -> DropTerminal:
    """The op that drops the api's terminal marker (naming the api only when it is not the cassette's)."""
    if isinstance(wire, WireProfile):
        return DropTerminal(api_of(cassette, wire), profile=wire)
    return DropTerminal(api_of(cassette, wire))


def _strips(profile: WireProfile) -> bool:
    return profile.ending is not None and profile.ending.strip is not None


def has_marker(cassette: Cassette, wire: Wire = None) -> bool:
    """True when the api's profile can take a terminal marker out of the recording (it says how, and
    the recording has one: an author's recording may end otherwise, as a vendor error)."""
    profile = _profile(cassette, wire)
    return _strips(profile) and bool(profile.terminal_edits(_response(cassette).body))


def _payload_offsets(cassette: Cassette, profile: WireProfile) -> list[int]:
    """Where the frames that carry a payload start (a stray blank line or comment is no frame of the
    stream's)."""
    return [span.start for span, payload in profile.frames(_response(cassette).body) if payload is not None]


def open_ended(cassette: Cassette, wire: Wire, *, end: EndKind = "eof") -> Mutation:
    """The recording without its end: the api's terminal marker dropped when its profile says how (and
    the recording has one), otherwise every frame but the last one with a payload kept (a cut on a frame
    boundary, after as much output as the recording holds); then the body ends with ``end``."""
    profile = _profile(cassette, wire)
    if has_marker(cassette, profile):
        drop = drop_marker(cassette, profile)
        body_len = len(_response(drop(cassette)).body)
        return Mutation.of(drop, Truncate(bytes=body_len, end=end))
    offsets = _payload_offsets(cassette, profile)
    keep = offsets[-1] if len(offsets) > 1 else len(_response(cassette).body) // 2
    return Mutation.of(Truncate(bytes=keep, end=end))


_RESET_ENDING = "the harness then ends the connection with a TCP reset"


def served(recording: Recording, mutation: Mutation | None = None, *, reset: bool = False, wire: Wire = None) -> Served:
    """What the server plays for ``recording`` with ``mutation`` applied (None: as recorded); with
    ``reset``, the connection ends in a real TCP reset after the bytes (:func:`with_reset`)."""
    cassette = mutation(recording.cassette) if mutation is not None else recording.cassette
    scripted = plan(cassette, wire)
    scripted = with_reset(scripted) if reset else scripted
    return Served(
        scripted,
        recording=recording.name,
        mutation=mutation.spec if mutation is not None else None,
        ending=_RESET_ENDING if reset else None,
    )


def replay(recording: Recording, *, wire: Wire = None, **fields: Any) -> Scenario:
    """The unmutated replay of ``recording``, keyed by its name."""
    return Scenario(key=recording.name, recording=recording.name, served=(served(recording, wire=wire),), **fields)


def mutated(
    recording: Recording, mutation: Mutation, *, reset: bool = False, wire: Wire = None, **fields: Any
) -> Scenario:
    """A scenario serving ``mutation`` of ``recording``, keyed ``<recording>|<spec>``."""
    return Scenario(
        key=f"{recording.name}|{mutation.spec}",
        recording=recording.name,
        served=(served(recording, mutation, reset=reset, wire=wire),),
        **fields,
    )


def marker_offset(cassette: Cassette, wire: Wire = None) -> int:
    """Where the api's terminal marker begins in the body (the first byte ``drop_terminal`` changes);
    when the profile cannot take the marker out (or the recording has none), where the last frame with
    a payload begins. Cuts before it are always premature."""
    profile = _profile(cassette, wire)
    body = _response(cassette).body
    if has_marker(cassette, profile):
        dropped = _response(drop_terminal(cassette, profile=profile)).body
        for index, (a, b) in enumerate(zip(body, dropped, strict=False)):
            if a != b:
                return index
        return min(len(body), len(dropped))
    offsets = _payload_offsets(cassette, profile)
    return offsets[-1] if len(offsets) > 1 else len(body)


def trailer_cut(cassette: Cassette, wire: Wire = None) -> int | None:
    """Where the frames carrying the terminal marker end, when the api declares a trailer after it and
    the recording has one (a body cut there lacks the trailer: it is still incomplete); else None."""
    profile = _profile(cassette, wire)
    if profile.ending is None or profile.ending.after != "trailer" or not has_marker(cassette, profile):
        return None
    body = _response(cassette).body
    edits = profile.terminal_edits(body)
    end = max((stop for _, stop, _ in edits), default=None)
    return end if end is not None and end < len(body) else None
