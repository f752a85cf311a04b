"""Build the bundled cassette library from the collected real streaming bodies.

Run ``python -m tools.build_cassette_library [--source DIR] [--output DIR]`` from the repository
(default source: ``../shared/realstreams`` next to the repository; default output: the package's
``cassettes/library``). It writes one ``<output>/<api>/<name>.jsonl`` per bundled source file and
``<output>/NOTICE``, for all eight apis (:data:`APIS`). A cassette already in the output that this run
did not write (its source is gone) is kept, never deleted, and reported; NOTICE still credits it, from
its own header. This is a maintainer's tool: it is not part of the installed package, which only ships
its output.

Every cassette is made by :func:`cassettes.importing.import_body` — the path ``cassettes import`` takes —
from the body, its status and content type, the model and the synthetic request this builder chooses
(:func:`one_interaction`); the builders below only choose those and, for the cloud folders, re-encode
what needs it. For every body file of the vendor folders it writes one cassette with one interaction:

* the body bytes are kept exactly, cut into one chunk per server-sent event (a chunk ends right
  after each blank-line separator), with synthetic times: the head at 0 ms, then 5 ms per event;
  the header says ``"timing": "synthetic"``;
* the request is synthetic but plausible (``"request": "synthetic"``): the URL recorded in the
  source's INDEX.md when there is one, else the vendor's endpoint (or the provider's host named
  in the file name), and a minimal body naming the model found in the stream;
* Ollama's native bodies (``ollama/``, api ``ollama-chat``) are JSON lines: one chunk per line, and
  only the ``/api/chat`` bodies and the error bodies are bundled (``/api/generate`` is another api);
  an ``__errorNNN_`` file is a non-200 JSON response;
* Mistral's native bodies (``mistral/``, api ``mistral-conversations``) are server-sent events like the
  chat-completions ones; there too an ``__errorNNN_`` file is a non-200 JSON response;
* files under ``errors/`` become non-200 responses with the status from the file name and the
  content type recorded in INDEX.md (``application/json`` when none was recorded); the ``.sse``
  mid-stream error is a 200 ``text/event-stream`` response;
* the header's ``source`` carries the attribution from INDEX.md (repository, path, commit, license,
  provenance); ``NOTICE`` lists the same per cassette (it is written from the headers).

The cloud folders have a builder each (:data:`CLOUD_BUILDERS`), same conventions otherwise:

* ``bedrock/`` (``bedrock-converse-stream``, :func:`build_converse`): ``.bin`` bodies byte for byte, one
  chunk per AWS event-stream message; ``.jsonl`` vercel/ai fixtures (decoded ``{"<event-type>": payload}``
  lines) re-encoded into event-stream messages (:func:`encode_fixture`, said in the provenance); ``.json``
  error bodies become non-200 responses with an ``x-amzn-ErrorType`` typed from the status when INDEX.md
  recorded none. ``invoke-with-response-stream`` bodies (``chunk`` messages) and errors of other calls are
  another api and are skipped (:func:`is_converse`);
* ``anthropic_bedrock/`` (``anthropic-bedrock``, :func:`build_claude_on_bedrock`): event-stream bodies
  byte for byte (``chunk`` messages carrying base64 Anthropic events), one chunk per message;
* ``anthropic_vertex/`` (``anthropic-vertex``, :func:`build_claude_on_vertex`): Anthropic SSE, one chunk
  per event;
* one converted cassette, labelled ``_REFRAMED`` (:data:`REFRAMED`, :func:`reframe_on_bedrock`): the
  Vertex thinking stream re-framed as Bedrock ``chunk`` messages (no Bedrock recording shows thinking);
* ``cohere/`` (``cohere-chat``, :func:`build_cohere`): Cohere v2 chat SSE, one chunk per event, the model
  from the file name's tail; only what INDEX.md records as a ``/v2/chat`` call is bundled
  (:func:`is_cohere_v2`: a ``/v1/chat`` error body is another api); ``.jsonl`` vercel/ai fixtures (the
  events' JSON, one per line, framing lost) re-framed as Cohere sends them (:func:`reframe_cohere`, said
  in the provenance); ``__errorNNN_`` ``.json`` files become non-200 JSON responses.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import string
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import streamfns
from cassettes.canonical import canonical_json, parse_json
from cassettes.files import load, save
from cassettes.importing import STEP_MS, import_body, model_in_body
from cassettes.model import Cassette, Chunk, End, JSONValue, RecordedRequest, RecordedResponse, header_value
from normalize.wire import AWS_EVENTSTREAM, NDJSON, SSE, Framing, WireProfile, encode_message
from streamfns.bedrock.errors import error_body as bedrock_error_body
from streamfns.kit.aws import bedrock_model_path

# A cassette header's attribution (None: no INDEX.md row).
Source = Mapping[str, JSONValue] | None

REPOSITORY = Path(__file__).resolve().parents[1]
LIBRARY = REPOSITORY / "cassettes" / "library"
DEFAULT_SOURCE = REPOSITORY / ".." / "shared" / "realstreams"

FOLDERS = {
    "anthropic": "anthropic-messages",
    "openai_chat": "openai-completions",
    "openai_responses": "openai-responses",
    "gemini": "google-generative-ai",
    "ollama": "ollama-chat",
    "mistral": "mistral-conversations",
}
# The cloud-hosted folders, and cohere/ (v2 chat, whose converted fixtures need re-framing): each has its
# own builder (CLOUD_BUILDERS, below the builders).
CLOUD_FOLDERS = {
    "bedrock": "bedrock-converse-stream",
    "anthropic_bedrock": "anthropic-bedrock",
    "anthropic_vertex": "anthropic-vertex",
    "cohere": "cohere-chat",
}
#: Every api of the library, one folder each.
APIS = tuple(sorted({*FOLDERS.values(), *CLOUD_FOLDERS.values()}))
# Apis whose bodies are JSON lines, not server-sent events (the chunking follows the framing).
LINE_APIS = frozenset({"ollama-chat"})
# Apis whose bodies are AWS event-stream messages (binary; one chunk per message).
EVENTSTREAM_APIS = frozenset({"bedrock-converse-stream", "anthropic-bedrock"})
EVENTSTREAM = "application/vnd.amazon.eventstream"
# The ConverseStream model when the request recorded none.
CONVERSE_FALLBACK_MODEL = "us.amazon.nova-micro-v1:0"
# errors/ file-name prefix -> api; first match wins, so longer prefixes come first.
ERROR_PREFIXES = (
    ("anthropic_", "anthropic-messages"),
    ("openai_chat_", "openai-completions"),
    ("openai_responses_", "openai-responses"),
    ("openai_500", "openai-completions"),
    ("deepseek_responses_", "openai-responses"),
    ("groq", "openai-completions"),
    ("openrouter", "openai-completions"),
    ("together", "openai-completions"),
    ("azure", "openai-completions"),
    ("gemini_", "google-generative-ai"),
    ("vertex_", "google-generative-ai"),
)
DEFAULT_URLS = {
    "anthropic-messages": "https://api.anthropic.com/v1/messages",
    "openai-completions": "https://api.openai.com/v1/chat/completions",
    "openai-responses": "https://api.openai.com/v1/responses",
    "google-generative-ai": (
        "https://generativelanguage.googleapis.com/v1beta/models/{model}:streamGenerateContent?alt=sse"
    ),
    "ollama-chat": "http://localhost:11434/api/chat",
    "mistral-conversations": "https://api.mistral.ai/v1/chat/completions",
}
# Provider hosts for files whose INDEX.md row records no URL, keyed by a word of the file name.
PROVIDER_URLS = {
    "openai-completions": (
        ("openrouter", "https://openrouter.ai/api/v1/chat/completions"),
        ("groq", "https://api.groq.com/openai/v1/chat/completions"),
        ("together", "https://api.together.xyz/v1/chat/completions"),
        ("mistral", "https://api.mistral.ai/v1/chat/completions"),
        ("deepseek", "https://api.deepseek.com/chat/completions"),
        ("perplexity", "https://api.perplexity.ai/chat/completions"),
        ("cerebras", "https://api.cerebras.ai/v1/chat/completions"),
        ("moonshot", "https://api.moonshot.ai/v1/chat/completions"),
        ("qwen", "https://dashscope-intl.aliyuncs.com/compatible-mode/v1/chat/completions"),
        ("azure", "https://example-resource.openai.azure.com/openai/v1/chat/completions"),
        ("claude_via_compat", "https://openai-compatible.example/v1/chat/completions"),
    ),
    "openai-responses": (
        ("xai", "https://api.x.ai/v1/responses"),
        ("lmstudio", "http://127.0.0.1:1234/v1/responses"),
        ("github_copilot", "https://api.githubcopilot.com/responses"),
    ),
}
# Used in the synthetic request when neither the stream nor INDEX.md names a model.
FALLBACK_MODELS = {
    "anthropic-messages": "claude-sonnet-4-0",
    "openai-completions": "gpt-4o",
    "openai-responses": "gpt-4o",
    "google-generative-ai": "gemini-2.5-flash",
    "ollama-chat": "llama3.2",
    "mistral-conversations": "mistral-small-latest",
}


@dataclass(frozen=True)
class Row:
    """One file's row of INDEX.md."""

    file: str
    repository: str
    path: str
    commit: str
    license: str
    provenance: str
    features: str
    #: The "Request" cell of the tables that have one (``POST http://…/api/chat → 200``).
    request: str = ""

    @property
    def url(self) -> str | None:
        if self.request:
            found = re.search(r"https?://\S+", self.request)
            return found.group().split("#")[0] if found else None
        match = re.search(r"https?://[^\s,)`]+", self.path)
        return match.group().split("#")[0] if match and "github.com" not in match.group() else None

    @property
    def content_type(self) -> str | None:
        match = re.search(r"content-type: ([^)]*)\)", self.path)
        return match.group(1).strip() or None if match else None

    @property
    def issue_quoted(self) -> bool:
        return self.commit == "-"


def read_index(source: Path) -> tuple[dict[str, Row], dict[str, str]]:
    """(rows by file name, full commit by repository) from INDEX.md."""
    rows: dict[str, Row] = {}
    commits: dict[str, str] = {}
    for line in (source / "INDEX.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if len(cells) == 7 and cells[0].startswith("`"):
            name, repository, path, commit, license_, provenance, features = cells
            rows[name.strip("`")] = Row(
                name.strip("`"), repository, path.strip("`"), commit, license_, provenance, features
            )
        elif len(cells) == 9 and cells[0].startswith("`"):
            # The tables of the JSON-lines and binary folders also give the request and the size.
            name, repository, path, commit, license_, provenance, request, features, _ = cells
            rows[name.strip("`")] = Row(
                name.strip("`"),
                repository,
                path.replace("`", ""),
                commit or "-",
                license_,
                provenance,
                features,
                request,
            )
        elif len(cells) == 4 and re.fullmatch(r"`[0-9a-f]{40}`", cells[1]):
            commits[cells[0]] = cells[1].strip("`")
    return rows, commits


def framing_of(api: str) -> Framing[object]:
    """How the bodies of ``api`` are cut into frames (and so into the library's chunks)."""
    if api in EVENTSTREAM_APIS:
        return AWS_EVENTSTREAM  # pyright: ignore[reportReturnType] - frames are not read here
    return NDJSON if api in LINE_APIS else SSE  # pyright: ignore[reportReturnType] - frames are not read here


def is_converse(file: Path, row: Row | None) -> bool:
    """Whether a ``bedrock/`` file is a ConverseStream body or error (not InvokeModel, not another call)."""
    if file.suffix == ".jsonl":
        return True
    if file.suffix == ".json":
        # An InvokeModel call, or another endpoint (count-tokens), is not this api.
        other = ("/invoke" in row.request) if row else True
        return not other and not any(word in file.stem for word in ("count_tokens", "_completion_"))
    messages = AWS_EVENTSTREAM.framer().feed(file.read_bytes())
    return not any(message.event_type == "chunk" for message in messages)


def bundled(folder: str, file: Path, row: Row | None) -> bool:
    """Whether a source file becomes a library cassette: every file, except the Ollama bodies of
    ``/api/generate`` (another api than ``/api/chat``; its error bodies are the same and are kept) and
    the ``bedrock/`` files that are not ConverseStream."""
    if folder == "bedrock":
        return is_converse(file, row)
    if folder == "cohere":
        return is_cohere_v2(row)
    if folder != "ollama" or "__error" in file.name:
        return True
    return row is not None and "/api/chat" in row.request


@dataclass(frozen=True)
class SourceFile:
    """One source file that becomes a library cassette."""

    folder: str
    file: Path
    row: Row | None
    api: str


def sources(source: Path, rows: dict[str, Row]) -> list[SourceFile]:
    """Every bundled file of the collection, folder by folder (a folder missing is skipped)."""
    found: list[SourceFile] = []
    for folder in (*FOLDERS, "errors", *CLOUD_FOLDERS):
        if not (source / folder).is_dir():
            continue
        for file in sorted((source / folder).iterdir()):
            row = rows.get(file.name)
            if bundled(folder, file, row):
                found.append(SourceFile(folder, file, row, api_of(folder, file.name)))
    return found


def body_of(item: SourceFile) -> bytes:
    """The response body the cassette of ``item`` holds: the file's bytes, except a ``bedrock/`` JSON-lines
    fixture, which is re-encoded into event-stream messages."""
    if item.folder == "bedrock" and item.file.suffix == ".jsonl":
        return encode_fixture(item.file.read_text("utf-8"))
    if item.folder == "cohere" and item.file.suffix == ".jsonl":
        return reframe_cohere(item.file.read_text("utf-8"))
    return item.file.read_bytes()


def api_of(folder: str, name: str) -> str:
    """The wire API of a source file."""
    if folder in CLOUD_FOLDERS:
        return CLOUD_FOLDERS[folder]
    if folder != "errors":
        return FOLDERS[folder]
    for prefix, api in ERROR_PREFIXES:
        if name.startswith(prefix):
            return api
    raise SystemExit(f"no api known for errors/{name}; add its prefix to ERROR_PREFIXES")


def model_in_stream(body: bytes, framing: Framing[object] = SSE) -> str | None:  # pyright: ignore[reportArgumentType]
    """The model the stream itself names (first occurrence), as ``cassettes import`` finds it."""
    return model_in_body(body, WireProfile(api="", framing=framing))


def model_in_row(row: Row | None) -> str | None:
    """The model named in INDEX.md's features (`model=...`) or in a Gemini URL."""
    if row is None:
        return None
    match = re.search(r"model=([^,\s]+)", row.features) or re.search(r"/models/([^/:]+):", row.path)
    return match.group(1) if match else None


def request_url(api: str, name: str, model: str, row: Row | None) -> str:
    """The recorded URL when INDEX.md has it, else the provider's or vendor's endpoint."""
    url = row.url if row else None
    if url is None:
        url = next((u for word, u in PROVIDER_URLS.get(api, ()) if word in name), DEFAULT_URLS[api])
    url = url.replace("{model}", model)
    if ":streamGenerateContent" in url and "alt=sse" not in url:
        url += "&alt=sse" if "?" in url else "?alt=sse"
    return url


def request_body(api: str, model: str) -> JSONValue:
    """A minimal streaming request body for `api`."""
    if api == "google-generative-ai":
        # Gemini names the model and the streaming in the URL, not in the body.
        return {"contents": [{"role": "user", "parts": [{"text": "Hello"}]}]}
    if api == "openai-responses":
        return {"model": model, "stream": True, "input": "Hello"}
    messages: list[JSONValue] = [{"role": "user", "content": "Hello"}]
    if api == "anthropic-messages":
        return {"model": model, "stream": True, "max_tokens": 1024, "messages": messages}
    return {"model": model, "stream": True, "messages": messages}


def build_request(api: str, name: str, model: str, row: Row | None) -> RecordedRequest:
    """The synthetic request of one library cassette."""
    url = request_url(api, name, model, row)
    headers: list[tuple[str, str]] = [("content-type", "application/json")]
    if api == "anthropic-messages":
        headers.append(("anthropic-version", "2023-06-01"))
    if row is not None and "GET /responses/" in row.features:
        # A resumed background response is fetched, not created.
        return RecordedRequest("GET", url + "?stream=true&starting_after=0")
    return RecordedRequest("POST", url, tuple(headers), canonical_json(request_body(api, model)))


def source_of(row: Row | None, commits: dict[str, str]) -> dict[str, JSONValue] | None:
    """The header's attribution for one file."""
    if row is None:
        return None
    if row.issue_quoted:
        return {
            "repository": row.repository,
            "issue": row.path,
            "license": "none (quoted in a GitHub issue, no repository license)",
            "provenance": row.provenance,
        }
    return {
        "repository": row.repository,
        "path": row.path,
        "commit": commits.get(row.repository, row.commit),
        "license": row.license,
        "provenance": row.provenance,
    }


def chunked(pieces: Sequence[bytes]) -> tuple[Chunk, ...]:
    """The pieces as chunks with synthetic times: ``STEP_MS`` apart from 0."""
    return tuple(Chunk(data, STEP_MS * n) for n, data in enumerate(pieces))


def eof_response(status: int, headers: tuple[tuple[str, str], ...], pieces: Sequence[bytes]) -> RecordedResponse:
    """A response of ``pieces`` (one chunk each) that ends at the end of the body, one step after the last."""
    chunks = chunked(pieces)
    return RecordedResponse(status, headers, 0, chunks, End("eof", STEP_MS * len(chunks)))


def _ignore(_note: str) -> None:
    """A library body that is a cut stream is bundled as one on purpose: nothing to warn about."""


def one_interaction(
    api: str, model: str | None, name: str, exchange: tuple[RecordedRequest, RecordedResponse], source: Source
) -> Cassette:
    """A library cassette: one interaction, synthetic timing and request, made by ``cassettes import``'s
    function from the response's body, status and headers and the synthetic request. The chunks it cuts
    (one per frame of the api's framing; one for an error body) must be the ones ``exchange`` holds."""
    streamfns.registered_apis()  # every built-in adapter's profile registered, installed or not
    request, response = exchange
    cassette = import_body(
        response.body,
        api=api,
        status=response.status,
        content_type=header_value(response.headers, "content-type"),
        headers=response.headers,
        chunking="event",
        model=model,
        request=request,
        name=name,
        source=source,
        on_warning=_ignore,
    )
    if cassette.interactions[0].response != response:
        raise SystemExit(f"{api}/{name}: the import cut or kept the response otherwise than this builder")
    return cassette


def build_vendor(folder: str, file: Path, row: Row | None, commits: dict[str, str]) -> Cassette:
    """The library cassette for one source file of a vendor folder (SSE or JSON lines) or ``errors/``."""
    body = file.read_bytes()
    api = api_of(folder, file.name)
    framing = framing_of(api)
    error_file = folder == "errors" or "__error" in file.name
    stream_model = model_in_stream(body, framing) if not error_file else None
    model = stream_model or model_in_row(row)
    status, content_type = 200, "text/event-stream" if api not in LINE_APIS else "application/x-ndjson"
    if folder in ("ollama", "mistral") and error_file:
        found = re.search(r"__error(\d{3})_", file.name)
        if found is None:
            raise SystemExit(f"{folder}/{file.name}: no status code in the file name")
        status = int(found.group(1))
        content_type = "application/json; charset=utf-8" if folder == "ollama" else "application/json"
    elif folder == "errors" and file.suffix != ".sse":
        found = re.search(r"_(\d{3})(?:_|$)", file.stem)
        if found is None:
            raise SystemExit(f"errors/{file.name}: no status code in the file name")
        status = int(found.group(1))
        content_type = (row.content_type if row else None) or "application/json"
    pieces = [span.raw for span in framing.spans(body)] if not error_file or api not in LINE_APIS else [body]
    response = eof_response(status, (("content-type", content_type),), pieces)
    request = build_request(api, file.stem, model or FALLBACK_MODELS[api], row)
    return one_interaction(api, model, file.stem, (request, response), source_of(row, commits))


# -- bedrock/: ConverseStream (bedrock-converse-stream) ---------------------------------------------------


def encode_fixture(text: str) -> bytes:
    """A vercel fixture (one ``{"<event-type>": payload}`` per line) as event-stream messages."""
    out = bytearray()
    for line in text.splitlines():
        if not line.strip():
            continue
        ((event, payload),) = json.loads(line).items()
        headers = {":event-type": event, ":content-type": "application/json", ":message-type": "event"}
        out += encode_message(headers, json.dumps(payload, separators=(",", ":")).encode())
    return bytes(out)


def converse_model(row: Row | None) -> str:
    """The model id of the recorded request's URL (``/model/{id}/``), else a fallback."""
    found = re.search(r"/model/([^/\s]+)/", row.request if row else "")
    if found:
        return found.group(1).replace("%3A", ":").replace("%3a", ":")
    return CONVERSE_FALLBACK_MODEL


def converse_error_type(row: Row | None, status: int) -> str:
    """The ``x-amzn-ErrorType`` INDEX.md recorded, else the one Bedrock gives ``status``."""
    found = re.search(r"x-amzn-ErrorType[:=]\s*`?([A-Za-z]+)", row.request + row.features if row else "")
    if found:
        return found.group(1)
    return bedrock_error_body(status, "").headers[0][1].partition(":")[0]


def with_provenance_note(source: Source, note: str) -> Source:
    """``source`` with ``note`` appended to its provenance (what this builder did to the body)."""
    if source is None:
        return None
    return {**source, "provenance": f"{source.get('provenance')}; {note}"}


def build_converse(file: Path, row: Row | None, commits: dict[str, str]) -> Cassette:
    """The library cassette for one ConverseStream file of ``bedrock/``: a ``.bin`` body, a re-encoded
    ``.jsonl`` fixture, or a ``.json`` error body."""
    api = CLOUD_FOLDERS["bedrock"]
    model = converse_model(row)
    url = f"https://bedrock-runtime.us-east-1.amazonaws.com/model/{bedrock_model_path(model)}/converse-stream"
    body = canonical_json({"messages": [{"role": "user", "content": [{"text": "Hello"}]}]})
    request = RecordedRequest("POST", url, (("content-type", "application/json"),), body)
    source = source_of(row, commits)
    if file.suffix == ".json":
        found = re.search(r"__error(\d{3})_", file.name)
        if found is None:
            raise SystemExit(f"bedrock/{file.name}: no status code in the file name")
        status = int(found.group(1))
        error_type = f"{converse_error_type(row, status)}:http://internal.amazon.com/coral/com.amazon.bedrock/"
        headers = (("content-type", "application/json"), ("x-amzn-errortype", error_type))
        response = eof_response(status, headers, [file.read_bytes()])
        source = with_provenance_note(source, "x-amzn-ErrorType typed from the status")
    else:
        stream = encode_fixture(file.read_text("utf-8")) if file.suffix == ".jsonl" else file.read_bytes()
        response = eof_response(200, (("content-type", EVENTSTREAM),), [s.raw for s in AWS_EVENTSTREAM.spans(stream)])
        if file.suffix == ".jsonl":
            source = with_provenance_note(source, "decoded lines re-encoded as event-stream messages")
    return one_interaction(api, model, file.stem, (request, response), source)


# -- anthropic_bedrock/ and anthropic_vertex/: Claude on the clouds -------------------------------------


def recorded_url(row: Row | None, file: Path) -> str:
    """The URL of the recorded request (INDEX.md's Request cell; the cloud folders all record one)."""
    found = re.search(r"https?://\S+", row.request) if row else None
    if found is None:
        raise SystemExit(f"{file.name}: INDEX.md records no request URL")
    return found.group()


def build_claude_on_bedrock(file: Path, row: Row | None, commits: dict[str, str]) -> Cassette:
    """The library cassette for one ``anthropic_bedrock/`` body: InvokeModelWithResponseStream, the model
    from the file name's tail (``…_claude-3-haiku-20240307-v1-0``), the host and inference-profile prefix
    from the recorded URL."""
    api = CLOUD_FOLDERS["anthropic_bedrock"]
    recorded = recorded_url(row, file)
    bare = re.sub(r"(-v\d+)-(\d+)$", r"\1:\2", file.stem.rsplit("_", 1)[-1])
    model = ("us.anthropic." if "/model/us.anthropic." in recorded else "anthropic.") + bare
    host = re.sub(r"^https?://([^/]+).*", r"\1", recorded).replace("<AWS_REGION>", "us-east-1")
    body: JSONValue = {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": "Hello"}],
    }
    request = RecordedRequest(
        "POST",
        f"https://{host}/model/{quote(model, safe='')}/invoke-with-response-stream",
        (("content-type", "application/json"), ("accept", EVENTSTREAM)),
        canonical_json(body),
    )
    pieces = [span.raw for span in AWS_EVENTSTREAM.spans(file.read_bytes())]
    response = eof_response(200, (("content-type", EVENTSTREAM),), pieces)
    return one_interaction(api, model, file.stem, (request, response), source_of(row, commits))


def vertex_model(body: bytes) -> str | None:
    """The Vertex model id of the model the stream's ``message_start`` names (``claude-x@YYYYMMDD``)."""
    for span in SSE.spans(body):
        value = parse_json(span.payload) if span.payload is not None else None
        message = value.get("message") if isinstance(value, dict) else None
        model = message.get("model") if isinstance(message, dict) else None
        if isinstance(model, str) and model:
            return re.sub(r"-(\d{8})$", r"@\1", model)
    return None


def build_claude_on_vertex(file: Path, row: Row | None, commits: dict[str, str]) -> Cassette:
    """The library cassette for one ``anthropic_vertex/`` body: streamRawPredict on the recorded project
    and host (the ``global`` location on the global host, else the host's region)."""
    api = CLOUD_FOLDERS["anthropic_vertex"]
    body = file.read_bytes()
    recorded = recorded_url(row, file)
    root = re.match(r"https?://[^/]+/v1/projects/[^/]+/locations", recorded)
    region = re.match(r"https://([a-z0-9-]+)-aiplatform\.", recorded)
    model = vertex_model(body)
    if root is None or model is None:
        raise SystemExit(f"anthropic_vertex/{file.name}: no Vertex project URL or no model in the stream")
    location = region.group(1) if region else "global"
    request_body: JSONValue = {
        "anthropic_version": "vertex-2023-10-16",
        "max_tokens": 1024,
        "stream": True,
        "messages": [{"role": "user", "content": "Hello"}],
    }
    request = RecordedRequest(
        "POST",
        f"{root.group()}/{location}/publishers/anthropic/models/{model}:streamRawPredict",
        (("content-type", "application/json"),),
        canonical_json(request_body),
    )
    response = eof_response(200, (("content-type", "text/event-stream"),), [s.raw for s in SSE.spans(body)])
    return one_interaction(api, model, file.stem, (request, response), source_of(row, commits))


# -- the one converted cassette: Vertex thinking re-framed as Bedrock chunk messages -----------------------

#: (api, name) of the cassette re-framed, and the Bedrock model id the re-framed one names.
REFRAMED = (("anthropic-vertex", "reqllm__reasoning_streaming_claude-haiku-4-5-20251001"),)
REFRAMED_MODEL = "global.anthropic.claude-haiku-4-5-20251001-v1:0"
REFRAMED_HOST = "https://bedrock-runtime.us-east-1.amazonaws.com"
_PADDING = string.ascii_letters + string.digits


def chunk_message(event: bytes, n: int) -> bytes:
    """Bedrock's ``chunk`` message for the ``n``-th Anthropic event: the compact JSON in base64 under
    ``bytes``, and a ``p`` padding of a deterministic length."""
    inner = json.dumps(json.loads(event), separators=(",", ":")).encode()
    pad = _PADDING[: 1 + (n * 7) % len(_PADDING)]
    payload = json.dumps({"bytes": base64.b64encode(inner).decode(), "p": pad}, separators=(",", ":")).encode()
    headers = {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"}
    return encode_message(headers, payload)


def reframe_on_bedrock(vertex: Cassette) -> Cassette:
    """A Vertex Claude cassette as Bedrock would stream it: each event compacted and re-framed as an
    InvokeModelWithResponseStream ``chunk`` message, pings dropped (Bedrock never pings)."""
    pieces: list[bytes] = []
    for span in SSE.spans(vertex.interactions[0].response.body):
        if span.payload is not None and span.name != "ping":
            pieces.append(chunk_message(span.payload, len(pieces)))
    body: JSONValue = {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 1024,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "messages": [{"role": "user", "content": "Hello"}],
    }
    request = RecordedRequest(
        "POST",
        f"{REFRAMED_HOST}/model/{quote(REFRAMED_MODEL, safe='')}/invoke-with-response-stream",
        (("content-type", "application/json"), ("accept", EVENTSTREAM)),
        canonical_json(body),
    )
    response = eof_response(200, (("content-type", EVENTSTREAM),), pieces)
    source: dict[str, JSONValue] = dict(vertex.source or {})
    source["provenance"] = (
        "recorded on Vertex AI (streamRawPredict), converted: each event compacted and re-framed as a Bedrock "
        'InvokeModelWithResponseStream chunk message (base64 in "bytes", "p" padding), pings dropped'
    )
    name = f"{vertex.name}_REFRAMED"
    return one_interaction(CLOUD_FOLDERS["anthropic_bedrock"], REFRAMED_MODEL, name, (request, response), source)


# -- cohere/: Cohere v2 chat (cohere-chat) ----------------------------------------------------------------

COHERE_URL = "https://api.cohere.com/v2/chat"
# The model of a synthetic request when the file name names none (the converted fixtures).
COHERE_FALLBACK_MODEL = "command-a-03-2025"


def is_cohere_v2(row: Row | None) -> bool:
    """Whether a ``cohere/`` file answered a ``/v2/chat`` call (INDEX.md's Request cell says which)."""
    return row is not None and "/v2/chat" in row.request


def reframe_cohere(text: str) -> bytes:
    """A vercel fixture (one Cohere v2 event's JSON per line, the SSE framing lost) as Cohere frames it:
    ``event: <type>`` and ``data: <the line as it is>`` per event, then the ``data: [DONE]`` Cohere sends
    after ``message-end`` (the fixtures do not store it)."""
    events = [f"event: {json.loads(line)['type']}\ndata: {line}\n\n" for line in text.splitlines() if line.strip()]
    return "".join([*events, "data: [DONE]\n\n"]).encode()


def cohere_model(file: Path) -> str | None:
    """The model a ``cohere/`` file names at its tail (``…_command-a-03-2025``); None for ``model-unstated``."""
    found = re.search(r"_(command(?:-[a-z0-9.]+)*)$", file.stem)
    return found.group(1) if found else None


def build_cohere(file: Path, row: Row | None, commits: dict[str, str]) -> Cassette:
    """The library cassette for one ``cohere/`` file: an SSE body (recorded, or a re-framed ``.jsonl``
    fixture) or an ``__errorNNN_`` JSON error body, on the recorded ``/v2/chat`` URL."""
    api = CLOUD_FOLDERS["cohere"]
    model = cohere_model(file)
    body: JSONValue = {
        "model": model or COHERE_FALLBACK_MODEL,
        "stream": True,
        "messages": [{"role": "user", "content": "Hello"}],
    }
    url = (row.url if row else None) or COHERE_URL
    request = RecordedRequest("POST", url, (("content-type", "application/json"),), canonical_json(body))
    source = source_of(row, commits)
    if file.suffix == ".json":
        found = re.search(r"__error(\d{3})_", file.name)
        if found is None:
            raise SystemExit(f"cohere/{file.name}: no status code in the file name")
        response = eof_response(int(found.group(1)), (("content-type", "application/json"),), [file.read_bytes()])
    else:
        stream = reframe_cohere(file.read_text("utf-8")) if file.suffix == ".jsonl" else file.read_bytes()
        response = eof_response(200, (("content-type", "text/event-stream"),), [s.raw for s in SSE.spans(stream)])
        if file.suffix == ".jsonl":
            source = with_provenance_note(
                source, "decoded JSON lines re-framed as Cohere's SSE (event: <type>, data: <line>), data: [DONE] added"
            )
    return one_interaction(api, model, file.stem, (request, response), source)


Builder = Callable[[Path, "Row | None", dict[str, str]], Cassette]
#: The builder of each cloud folder (the vendor folders and errors/ are built by build_vendor).
CLOUD_BUILDERS: dict[str, Builder] = {
    "bedrock": build_converse,
    "anthropic_bedrock": build_claude_on_bedrock,
    "anthropic_vertex": build_claude_on_vertex,
    "cohere": build_cohere,
}


def build(item: SourceFile, commits: dict[str, str]) -> Cassette:
    """The library cassette for one bundled source file."""
    builder = CLOUD_BUILDERS.get(item.folder)
    if builder is not None:
        return builder(item.file, item.row, commits)
    return build_vendor(item.folder, item.file, item.row, commits)


def notice(entries: Sequence[tuple[str, str, Source]]) -> str:
    """The NOTICE text: one attribution block per bundled cassette, from its header's ``source``."""
    out = [
        "Bundled cassettes: attribution",
        "==============================",
        "",
        "Each cassette under cassettes/library/ wraps one real streaming (or error) body collected",
        "from a public source. The response bytes are the source's; chunk times and the request line",
        "are synthetic. The license named below is the source repository's license and applies to",
        "that body. Bodies quoted in GitHub issues carry no repository license.",
        "",
    ]
    for api, name, source in entries:
        out.append(f"{api}/{name}.jsonl")
        if source is None:
            out.append("  source: unknown (no INDEX.md row)")
        elif "issue" in source:
            out.append(f"  quoted in GitHub issue {source['issue']}, no repository license")
        else:
            out.append(f"  repository: https://github.com/{source.get('repository')}")
            out.append(f"  path: {source.get('path')}")
            out.append(f"  commit: {source.get('commit')}")
            out.append(f"  license: {source.get('license')}")
        if source is not None:
            out.append(f"  provenance: {source.get('provenance')}")
        out.append("")
    return "\n".join(out)


def write(cassette: Cassette, output: Path, body: bytes, written: dict[Path, Cassette]) -> None:
    """Save ``cassette`` as ``<output>/<api>/<name>.jsonl``, check that it holds ``body`` exactly, and
    note it in ``written``."""
    if cassette.api is None or cassette.name is None:
        raise SystemExit("a library cassette names its api and its name")
    target = output / cassette.api / f"{cassette.name}.jsonl"
    if target in written:
        raise SystemExit(f"two source files map to {target.name}")
    target.parent.mkdir(parents=True, exist_ok=True)
    save(cassette, target)
    # The promise of the library: the stored chunks are the source bytes exactly.
    if load(target).interactions[0].response.body != body:
        raise SystemExit(f"{cassette.name}: bytes changed on the way into {target}")
    written[target] = cassette


def main(argv: Sequence[str] | None = None) -> int:
    """Rebuild the library; prints the count per api."""
    parser = argparse.ArgumentParser(
        prog="python -m tools.build_cassette_library", description="Build the bundled cassette library."
    )
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="the realstreams folder")
    parser.add_argument("--output", type=Path, default=LIBRARY, help="the library folder to (re)write")
    args = parser.parse_args(argv)
    source: Path = args.source.resolve()
    output: Path = args.output.resolve()
    rows, commits = read_index(source)
    built: dict[Path, Cassette] = {}
    for item in sources(source, rows):
        write(build(item, commits), output, body_of(item), built)
    for api, name in REFRAMED:
        original = built.get(output / api / f"{name}.jsonl")
        if original is not None:
            cassette = reframe_on_bedrock(original)
            write(cassette, output, cassette.interactions[0].response.body, built)
    # A cassette this run did not write (its source is gone) is left as it is, never deleted.
    for path in sorted(set(output.glob("*/*.jsonl")) - set(built)):
        built[path] = load(path)
        sys.stdout.write(f"kept (no source for it): {path.relative_to(output)}\n")
    entries = sorted((path.parent.name, path.stem, cassette.source) for path, cassette in built.items())
    (output / "NOTICE").write_text(notice(entries), encoding="utf-8")
    counts: dict[str, int] = {}
    for api, _, _ in entries:
        counts[api] = counts.get(api, 0) + 1
    for api, count in sorted(counts.items()):
        sys.stdout.write(f"{api}: {count}\n")
    sys.stdout.write(f"total: {len(entries)}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
