"""Build the bundled cassette library from the collected real streaming bodies.

Run ``python -m tools.build_cassette_library [--source DIR] [--output DIR]`` from the repository
(default source: ``../shared/realstreams`` next to the repository; default output: the package's
``cassettes/library``). It rewrites every ``<output>/<api>/*.jsonl`` and ``<output>/NOTICE``. This is
a maintainer's tool: it is not part of the installed package, which only ships its output.

For every body file it writes one cassette with one interaction:

* the body bytes are kept exactly, cut into one chunk per server-sent event (a chunk ends right
  after each blank-line separator), with synthetic times: the head at 0 ms, then 5 ms per event;
  the header says ``"timing": "synthetic"``;
* the request is synthetic but plausible (``"request": "synthetic"``): the URL recorded in the
  source's INDEX.md when there is one, else the vendor's endpoint (or the provider's host named
  in the file name), and a minimal body naming the model found in the stream;
* Ollama's native bodies (``ollama/``, api ``ollama-chat``) are JSON lines: one chunk per line, and
  only the ``/api/chat`` bodies and the error bodies are bundled (``/api/generate`` is another api);
  an ``__errorNNN_`` file is a non-200 JSON response;
* files under ``errors/`` become non-200 responses with the status from the file name and the
  content type recorded in INDEX.md (``application/json`` when none was recorded); the ``.sse``
  mid-stream error is a 200 ``text/event-stream`` response;
* the header's ``source`` carries the attribution from INDEX.md (repository, path, commit, license,
  provenance); ``NOTICE`` lists the same per file.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cassettes.canonical import NotJSON, canonical_json, parse_json
from cassettes.files import load, save
from cassettes.model import Cassette, Chunk, End, Interaction, JSONValue, RecordedRequest, RecordedResponse
from normalize.wire import NDJSON, SSE, Framing

REPOSITORY = Path(__file__).resolve().parents[1]
LIBRARY = REPOSITORY / "cassettes" / "library"
DEFAULT_SOURCE = REPOSITORY / ".." / "shared" / "realstreams"
STEP_MS = 5

FOLDERS = {
    "anthropic": "anthropic-messages",
    "openai_chat": "openai-completions",
    "openai_responses": "openai-responses",
    "gemini": "google-generative-ai",
    "ollama": "ollama-chat",
}
# Apis whose bodies are JSON lines, not server-sent events (the chunking follows the framing).
LINE_APIS = frozenset({"ollama-chat"})
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
            return found.group() if found else None
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
    return NDJSON if api in LINE_APIS else SSE  # pyright: ignore[reportReturnType] - frames are not read here


def bundled(folder: str, name: str, row: Row | None) -> bool:
    """Whether a source file becomes a library cassette: every file, except the Ollama bodies of
    ``/api/generate`` (another api than ``/api/chat``; its error bodies are the same and are kept)."""
    if folder != "ollama" or "__error" in name:
        return True
    return row is not None and "/api/chat" in row.request


def api_of(folder: str, name: str) -> str:
    """The wire API of a source file."""
    if folder != "errors":
        return FOLDERS[folder]
    for prefix, api in ERROR_PREFIXES:
        if name.startswith(prefix):
            return api
    raise SystemExit(f"no api known for errors/{name}; add its prefix to ERROR_PREFIXES")


def model_in_stream(body: bytes, framing: Framing[object] = SSE) -> str | None:  # pyright: ignore[reportArgumentType]
    """The model the stream itself names (first occurrence)."""
    for span in framing.spans(body):
        value = parse_json(span.payload) if span.payload is not None else None
        if isinstance(value, NotJSON) or not isinstance(value, dict):
            continue
        candidates: list[JSONValue] = [value.get("model"), value.get("modelVersion")]
        for nested in ("message", "response"):
            inner = value.get(nested)
            if isinstance(inner, dict):
                candidates.append(inner.get("model"))
        found = next((c for c in candidates if isinstance(c, str) and c), None)
        if found:
            return found
    return None


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


def build(folder: str, file: Path, row: Row | None, commits: dict[str, str]) -> Cassette:
    """The library cassette for one source file."""
    body = file.read_bytes()
    api = api_of(folder, file.name)
    framing = framing_of(api)
    error_file = folder == "errors" or "__error" in file.name
    stream_model = model_in_stream(body, framing) if not error_file else None
    model = stream_model or model_in_row(row)
    status, content_type = 200, "text/event-stream" if api not in LINE_APIS else "application/x-ndjson"
    if folder == "ollama" and error_file:
        found = re.search(r"__error(\d{3})_", file.name)
        if found is None:
            raise SystemExit(f"ollama/{file.name}: no status code in the file name")
        status, content_type = int(found.group(1)), "application/json; charset=utf-8"
    elif folder == "errors" and file.suffix != ".sse":
        found = re.search(r"_(\d{3})(?:_|$)", file.stem)
        if found is None:
            raise SystemExit(f"errors/{file.name}: no status code in the file name")
        status = int(found.group(1))
        content_type = (row.content_type if row else None) or "application/json"
    pieces = [span.raw for span in framing.spans(body)] if not error_file or api not in LINE_APIS else [body]
    chunks = tuple(Chunk(data, STEP_MS * n) for n, data in enumerate(pieces))
    response = RecordedResponse(
        status=status,
        headers=(("content-type", content_type),),
        t_ms=0,
        chunks=chunks,
        end=End("eof", STEP_MS * len(chunks)),
    )
    request = build_request(api, file.stem, model or FALLBACK_MODELS[api], row)
    return Cassette(
        interactions=(Interaction(request, response),),
        api=api,
        model=model,
        recorded_at=None,
        source=source_of(row, commits),
        extra={"name": file.stem, "timing": "synthetic", "request": "synthetic"},
    )


def notice(entries: Sequence[tuple[str, str, Row | None]], commits: dict[str, str]) -> str:
    """The NOTICE text: one attribution block per bundled cassette."""
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
    for api, name, row in entries:
        out.append(f"{api}/{name}.jsonl")
        if row is None:
            out.append("  source: unknown (no INDEX.md row)")
        elif row.issue_quoted:
            out.append(f"  quoted in GitHub issue {row.path}, no repository license")
        else:
            out.append(f"  repository: https://github.com/{row.repository}")
            out.append(f"  path: {row.path}")
            out.append(f"  commit: {commits.get(row.repository, row.commit)}")
            out.append(f"  license: {row.license}")
        if row is not None:
            out.append(f"  provenance: {row.provenance}")
        out.append("")
    return "\n".join(out)


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
    built: list[tuple[str, str, Row | None]] = []
    for old in output.glob("*/*.jsonl"):
        old.unlink()
    for folder in (*FOLDERS, "errors"):
        for file in sorted((source / folder).iterdir()):
            row = rows.get(file.name)
            if not bundled(folder, file.name, row):
                continue
            cassette = build(folder, file, row, commits)
            assert cassette.api is not None
            target = output / cassette.api / f"{file.stem}.jsonl"
            if target.exists():
                raise SystemExit(f"two source files map to {target.name}")
            save(cassette, target)
            # The promise of the library: the stored chunks are the source bytes exactly.
            if load(target).interactions[0].response.body != file.read_bytes():
                raise SystemExit(f"{file}: bytes changed on the way into {target}")
            built.append((cassette.api, file.stem, row))
    built.sort()
    (output / "NOTICE").write_text(notice(built, commits), encoding="utf-8")
    counts: dict[str, int] = {}
    for api, _, _ in built:
        counts[api] = counts.get(api, 0) + 1
    for api, count in sorted(counts.items()):
        sys.stdout.write(f"{api}: {count}\n")
    sys.stdout.write(f"total: {len(built)}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
