"""Byte-exact HTTP cassettes for streaming LLM APIs.

Record real provider HTTP streams at the httpx transport level, chunk by chunk with arrival
times, and replay them with the same chunk boundaries, timing and transport failures; derive
faults from good recordings (`cassettes.mutations`); never write a secret to disk.

Depends on httpx, jiter and the standard library, and on :mod:`normalize.wire` — the framings and the
wire profiles adapters declare — to read bodies frame by frame without knowing any api by name.
Typical use::

    async with cassettes.use_cassette("tests/cassettes/hello.jsonl", mode="once") as http:
        ...  # pass `http` to the adapter as its http_client

See `format` for the file layout, `files` for reading and writing files, `replay`, `record` and
`session` for the transports, `scrub` and `secret_scan` for what may reach the disk, `importing` for
making a cassette from a body recorded by other means (`cassettes import`), and `library` for the
bundled real recordings.
"""

from cassettes.canonical import canonical_json, drop_paths, json_diff
from cassettes.errors import (
    CassetteError,
    CassetteFormatError,
    CassetteIncomplete,
    CassetteLocked,
    CassetteMissing,
    NotACassetteFile,
    RequestNotRecorded,
    SecretFinding,
    SecretFound,
    UnplayedInteractions,
    command_line_text,
)
from cassettes.files import load, save
from cassettes.format import dumps, loads
from cassettes.importing import BodyWarning, import_body, read_body
from cassettes.model import (
    SYNTHETIC_PARTS,
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
    injected_message,
    rechunk,
    resolve_profile,
    stall,
    status_override,
    stream_error,
    truncate,
)
from cassettes.recorder import CassetteWriter, RecordingTransport
from cassettes.redact import scrub_secrets
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
from cassettes.secret_scan import (
    SecretSet,
    UncheckedPayload,
    scan_bytes,
    scan_cassette,
    scan_file,
    scan_path,
    scan_text,
)
from cassettes.session import MODES, CassetteSession, Mode, use_cassette

__all__ = [
    "MODES",
    "SYNTHETIC_PARTS",
    "BodyWarning",
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
    "NotACassetteFile",
    "RecordedRequest",
    "RecordedResponse",
    "RecordingTransport",
    "ReplayTransport",
    "RequestNotRecorded",
    "ScrubPolicy",
    "SecretFinding",
    "SecretFound",
    "SecretSet",
    "Timing",
    "UncheckedPayload",
    "UnplayedInteractions",
    "canonical_json",
    "capture_request",
    "command_line_text",
    "corrupt_json",
    "drop_paths",
    "drop_terminal",
    "dumps",
    "empty_body",
    "error_body",
    "header_value",
    "import_body",
    "injected_message",
    "json_diff",
    "load",
    "loads",
    "read_body",
    "rechunk",
    "request_credentials",
    "resolve_profile",
    "save",
    "scan_bytes",
    "scan_cassette",
    "scan_file",
    "scan_path",
    "scan_text",
    "scrub_body",
    "scrub_recorded",
    "scrub_secrets",
    "scrub_url",
    "stall",
    "status_override",
    "stored_credentials",
    "stream_error",
    "truncate",
    "use_cassette",
]
