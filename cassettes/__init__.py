"""Byte-exact HTTP cassettes for streaming LLM APIs.

Record real provider HTTP streams at the httpx transport level, chunk by chunk with arrival
times, and replay them with the same chunk boundaries, timing and transport failures; derive
faults from good recordings (`cassettes.mutations`); never write a secret to disk.

Depends on httpx and the standard library only. Typical use::

    async with cassettes.use_cassette("tests/cassettes/hello.jsonl", mode="once") as http:
        ...  # pass `http` to the adapter as its http_client

See `format` for the file layout, `files` for reading and writing files, `replay`, `record` and
`session` for the transports, `scrub` and `secret_scan` for what may reach the disk, and `library`
for the bundled real recordings.
"""

from cassettes.canonical import canonical_json, drop_paths, json_diff
from cassettes.errors import (
    CassetteError,
    CassetteFormatError,
    CassetteIncomplete,
    CassetteLocked,
    CassetteMissing,
    RequestNotRecorded,
    SecretFinding,
    SecretFound,
    UnplayedInteractions,
)
from cassettes.files import load, save
from cassettes.format import dumps, loads
from cassettes.model import (
    Cassette,
    Chunk,
    End,
    EndKind,
    Headers,
    Interaction,
    JSONValue,
    RecordedRequest,
    RecordedResponse,
    header_value,
)
from cassettes.mutations import (
    corrupt_json,
    drop_terminal,
    empty_body,
    error_body,
    rechunk,
    stall,
    status_override,
    truncate,
)
from cassettes.record import CassetteWriter, RecordingTransport
from cassettes.replay import Match, ReplayTransport, Timing
from cassettes.scrub import (
    ScrubPolicy,
    capture_request,
    request_credentials,
    scrub_body,
    scrub_recorded,
    scrub_url,
    stored_credentials,
)
from cassettes.secret_scan import SecretSet, scan_bytes, scan_cassette, scan_file, scan_path, scan_text
from cassettes.session import MODES, CassetteSession, Mode, use_cassette
from cassettes.sse import SSEEvent, split_events

__all__ = [
    "MODES",
    "Cassette",
    "CassetteError",
    "CassetteFormatError",
    "CassetteIncomplete",
    "CassetteLocked",
    "CassetteMissing",
    "CassetteSession",
    "CassetteWriter",
    "Chunk",
    "End",
    "EndKind",
    "Headers",
    "Interaction",
    "JSONValue",
    "Match",
    "Mode",
    "RecordedRequest",
    "RecordedResponse",
    "RecordingTransport",
    "ReplayTransport",
    "RequestNotRecorded",
    "SSEEvent",
    "ScrubPolicy",
    "SecretFinding",
    "SecretFound",
    "SecretSet",
    "Timing",
    "UnplayedInteractions",
    "canonical_json",
    "capture_request",
    "corrupt_json",
    "drop_paths",
    "drop_terminal",
    "dumps",
    "empty_body",
    "error_body",
    "header_value",
    "json_diff",
    "load",
    "loads",
    "rechunk",
    "request_credentials",
    "save",
    "scan_bytes",
    "scan_cassette",
    "scan_file",
    "scan_path",
    "scan_text",
    "scrub_body",
    "scrub_recorded",
    "scrub_url",
    "split_events",
    "stall",
    "status_override",
    "stored_credentials",
    "truncate",
    "use_cassette",
]
