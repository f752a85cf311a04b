"""From recordings to loopback plans: replays, mutations of them, and generic faults.

Every fault the harness serves is a :class:`~conformance.loopback.Scripted` plan. Replays and their
mutations are named as :class:`cassettes.ops.Mutation` objects — the grammar ``cassettes mutate
--op`` accepts, so a report can print the command that reproduces a scenario's bytes — applied to
the recording and turned into plans by :func:`plan` (:func:`served`, :func:`replay` and
:func:`mutated` build the scenarios); generic faults (non-stream bodies, silence) are written here.
No function needs to know a vendor protocol beyond what :mod:`cassettes.mutations` knows for a
known api.
"""

from __future__ import annotations

import json
from typing import Any

from cassettes import Cassette, End, EndKind, RecordedResponse
from cassettes.mutations import drop_terminal, error_body
from cassettes.ops import DropTerminal, Mutation, Truncate
from cassettes.sse import split_events
from conformance.loopback import Scripted, ScriptedEnd
from conformance.observe import Scenario, Served
from conformance.recordings import Recording

__all__ = [
    "body_message",
    "drop_marker",
    "event_offsets",
    "json_event_indexes",
    "marker_offset",
    "mutated",
    "open_ended",
    "plan",
    "raw_plan",
    "replay",
    "served",
    "with_reset",
]

_FRAMING = frozenset({"content-length", "transfer-encoding", "content-encoding", "connection"})
# A recorded ``reset`` is replayed as a hang-up (FIN without the end of the chunked body): the
# client gets every recorded byte, then a broken connection. A TCP RST right after the data could
# make the client's kernel drop bytes it had not read yet, so the replay would not be deterministic.
_ENDS: dict[str, ScriptedEnd] = {"eof": "eof", "reset": "hangup", "timeout": "stall", "client_closed": "eof"}
#: Pause before a real RST, so the bytes sent before it reach the client application first.
RESET_SETTLE_S = 0.05


def _response(cassette: Cassette) -> RecordedResponse:
    return cassette.interactions[0].response


def plan(cassette: Cassette) -> Scripted:
    """Serve the cassette's first response as recorded: status, headers, the exact chunks (a chunk's
    ``stall_s`` becomes a silence before it) and its end (``timeout`` becomes a stall, ``reset`` a
    hang-up — see :func:`with_reset` for a real TCP reset)."""
    response = _response(cassette)
    headers = [(name, value) for name, value in response.headers if name.lower() not in _FRAMING]
    if response.status == 200 and not any(name.lower() == "content-type" for name, _ in headers):
        headers.append(("content-type", "text/event-stream"))
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


def event_offsets(cassette: Cassette) -> list[int]:
    """Byte offsets where the body's server-sent events start (the first is 0)."""
    return [event.start for event in split_events(_response(cassette).body)]


def json_event_indexes(cassette: Cassette) -> list[int]:
    """Indexes (as counted by :func:`cassettes.mutations.corrupt_json`) of the JSON data events that
    are not keep-alive pings."""
    indexes: list[int] = []
    position = 0
    for event in split_events(_response(cassette).body):
        value = event.json()
        if not isinstance(value, dict | list):
            continue
        is_ping = event.event == "ping" or (isinstance(value, dict) and value.get("type") == "ping")
        if not is_ping:
            indexes.append(position)
        position += 1
    return indexes


def drop_marker(cassette: Cassette, api: str | None) -> DropTerminal:
    """The op that drops ``api``'s terminal marker (naming the api only when it is not the cassette's)."""
    return DropTerminal(None if api is None or api == cassette.api else api)


def open_ended(cassette: Cassette, api: str | None, *, end: EndKind = "eof") -> Mutation:
    """The recording without its end: the api's terminal marker dropped when the api is known,
    otherwise only the first half of its events kept; then the body ends with ``end``."""
    if api is not None:
        drop = drop_marker(cassette, api)
        body_len = len(_response(drop(cassette)).body)
        return Mutation.of(drop, Truncate(bytes=body_len, end=end))
    offsets = event_offsets(cassette)
    keep = offsets[len(offsets) // 2] if len(offsets) > 1 else len(_response(cassette).body) // 2
    return Mutation.of(Truncate(bytes=keep, end=end))


_RESET_ENDING = "the harness then ends the connection with a TCP reset"


def served(recording: Recording, mutation: Mutation | None = None, *, reset: bool = False) -> Served:
    """What the server plays for ``recording`` with ``mutation`` applied (None: as recorded); with
    ``reset``, the connection ends in a real TCP reset after the bytes (:func:`with_reset`)."""
    cassette = mutation(recording.cassette) if mutation is not None else recording.cassette
    scripted = with_reset(plan(cassette)) if reset else plan(cassette)
    return Served(
        scripted,
        recording=recording.name,
        mutation=mutation.spec if mutation is not None else None,
        ending=_RESET_ENDING if reset else None,
    )


def replay(recording: Recording, **fields: Any) -> Scenario:
    """The unmutated replay of ``recording``, keyed by its name."""
    return Scenario(key=recording.name, recording=recording.name, served=(served(recording),), **fields)


def mutated(recording: Recording, mutation: Mutation, *, reset: bool = False, **fields: Any) -> Scenario:
    """A scenario serving ``mutation`` of ``recording``, keyed ``<recording>|<spec>``."""
    return Scenario(
        key=f"{recording.name}|{mutation.spec}",
        recording=recording.name,
        served=(served(recording, mutation, reset=reset),),
        **fields,
    )


def _find_message(value: Any) -> str | None:
    if isinstance(value, dict):
        for key, item in value.items():  # pyright: ignore[reportUnknownVariableType]
            if key == "message" and isinstance(item, str) and item:
                return item
            found = _find_message(item)
            if found is not None:
                return found
    if isinstance(value, list):
        for item in value:  # pyright: ignore[reportUnknownVariableType]
            found = _find_message(item)
            if found is not None:
                return found
    return None


def body_message(api: str | None, status: int) -> str | None:
    """The human message inside the injected error body for ``status`` (None for non-JSON bodies)."""
    body, content_type = error_body(api, status)
    if "json" not in content_type:
        return None
    try:
        return _find_message(json.loads(body))
    except ValueError:
        return None


def marker_offset(cassette: Cassette, api: str | None) -> int:
    """Where the api's terminal marker begins in the body (the first byte ``drop_terminal`` changes);
    for an unknown api, where the last event begins. Cuts before it are always premature."""
    body = _response(cassette).body
    if api is not None:
        dropped = _response(drop_terminal(cassette, api=api)).body
        for index, (a, b) in enumerate(zip(body, dropped, strict=False)):
            if a != b:
                return index
        return min(len(body), len(dropped))
    offsets = event_offsets(cassette)
    return offsets[-1] if len(offsets) > 1 else len(body)
