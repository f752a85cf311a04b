"""The in-memory cassette: immutable dataclasses mirroring the JSONL records one to one.

A `Cassette` holds a header (api, model, provenance) and a tuple of `Interaction`s. Each
interaction is one HTTP exchange: the (scrubbed) request, the response head, the body as the
exact byte chunks that arrived with their arrival times, and how the body ended. A cassette that
was not made by the recorder says which parts are not real (`Cassette.synthetic`).

Everything is frozen; the mutation functions build new objects with `dataclasses.replace`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

__all__ = [
    "END_KINDS",
    "SYNTHETIC_PARTS",
    "Cassette",
    "Chunk",
    "End",
    "EndKind",
    "Headers",
    "Interaction",
    "JSONValue",
    "RecordedRequest",
    "RecordedResponse",
    "header_value",
    "synthetic_parts",
]

JSONValue: TypeAlias = "bool | int | float | str | list[JSONValue] | dict[str, JSONValue] | None"

EndKind = Literal["eof", "reset", "timeout", "client_closed"]
END_KINDS: tuple[EndKind, ...] = ("eof", "reset", "timeout", "client_closed")

#: Header keys that say a part of a cassette is not what a server sent, each valued with how it was
#: made (`"synthetic"`, `"scripted"`): `timing` — the chunk boundaries and times; `request` — the
#: request (replay it with `match="any"`); `body` — the response bytes. The recorder writes none of
#: them: a cassette it made keeps what happened on the wire. See `Cassette.synthetic`.
SYNTHETIC_PARTS = ("timing", "request", "body")


def synthetic_parts(header: Mapping[str, JSONValue]) -> dict[str, str]:
    """The `SYNTHETIC_PARTS` a cassette header (its keys, as in the file) marks as not real, with
    how each was made (see `Cassette.synthetic`)."""
    found: dict[str, str] = {}
    for part in SYNTHETIC_PARTS:
        value = header.get(part)
        if value is not None and value != "recorded":
            found[part] = value if isinstance(value, str) else json.dumps(value)
    return found


# Ordered (name, value) pairs with lower-case names; repeated names keep every value.
Headers: TypeAlias = tuple[tuple[str, str], ...]


def header_value(headers: Headers, name: str) -> str | None:
    """The first value of header `name` (case-insensitive), or None."""
    wanted = name.lower()
    for key, value in headers:
        if key == wanted:
            return value
    return None


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """A request as stored: method, scrubbed URL, allow-listed headers and the body bytes.

    `body` is stored as `body_json` exactly when it is the canonical JSON serialization of a
    value (the recorder canonicalizes JSON bodies), so writing and reading give back these bytes.
    """

    method: str
    url: str
    headers: Headers = ()
    body: bytes = b""


@dataclass(frozen=True, slots=True)
class Chunk:
    """One piece of response body exactly as it arrived.

    `t_ms` is the arrival time in milliseconds since the request was sent. `stall_s` is an
    extra silence before this chunk that replay honours in every timing mode (it models a
    stalled server; recordings never set it, the `stall` mutation does).
    """

    data: bytes
    t_ms: float
    stall_s: float = 0.0


@dataclass(frozen=True, slots=True)
class End:
    """How the body ended.

    * `eof`: the server finished the body;
    * `reset`: the connection was lost (replay raises `httpx.ReadError`);
    * `timeout`: a read timed out (replay raises `httpx.ReadTimeout`);
    * `client_closed`: the client stopped reading and the server had not finished within the
      recorder's drain bound, so what followed was never seen; replay ends the body cleanly there,
      because the client that was recorded did not need more.

    `stall_s` is a silence after the last chunk, before the end takes effect.
    """

    kind: EndKind
    t_ms: float
    stall_s: float = 0.0


@dataclass(frozen=True, slots=True)
class RecordedResponse:
    """Status, allow-listed headers, the body chunks and the end of one response.

    `t_ms` is when the response head arrived, in milliseconds since the request was sent.
    """

    status: int
    headers: Headers = ()
    t_ms: float = 0
    chunks: tuple[Chunk, ...] = ()
    end: End = End("eof", 0)

    @property
    def body(self) -> bytes:
        """All chunk bytes joined."""
        return b"".join(c.data for c in self.chunks)


@dataclass(frozen=True, slots=True)
class Interaction:
    """One HTTP exchange."""

    request: RecordedRequest
    response: RecordedResponse


@dataclass(frozen=True, slots=True)
class Cassette:
    """A set of recorded interactions plus the header that describes them.

    `api` names the wire API (the `model.api` of the adapter that made it), `model` the model,
    `recorded_at` an ISO-8601 timestamp, `source` optional attribution (repository, path, commit, license).
    `extra` keeps any other header keys, in file order, so they survive a round trip.

    `incomplete` is None for a whole recording; otherwise it says why the file is known to be cut
    off (only `load(..., allow_incomplete=True)` returns such a cassette; its unfinished
    interactions end in `reset`). Writing an incomplete cassette keeps it incomplete: no footer.
    """

    interactions: tuple[Interaction, ...] = ()
    api: str | None = None
    model: str | None = None
    recorded_at: str | None = None
    source: Mapping[str, JSONValue] | None = None
    extra: Mapping[str, JSONValue] = field(default_factory=dict[str, JSONValue])
    incomplete: str | None = None

    @property
    def name(self) -> str | None:
        """The `name` header key when present (library cassettes have one)."""
        value = self.extra.get("name")
        return value if isinstance(value, str) else None

    @property
    def synthetic(self) -> dict[str, str]:
        """The parts of this cassette that are not as a server sent them (`SYNTHETIC_PARTS`, in that
        order) and how each was made: `{"timing": "synthetic", "request": "synthetic"}` for a bundled
        library cassette, `{}` for one the recorder made. A header value of `"recorded"` (or none)
        means the part is real."""
        return synthetic_parts(self.extra)
