"""Build ``cassettes/library/bedrock-converse-stream/`` from the collected real Bedrock bodies.

Run ``python -m tests.bedrock.build_cassettes [--source DIR]`` from the repository (default source:
``../shared/realstreams``). A maintainer's script, like ``tools/build_cassette_library`` (whose
attribution and request conventions it reuses): for every ConverseStream body of ``bedrock/`` it writes
one cassette with one interaction, and prints the NOTICE entries to append.

* ``.bin`` bodies are kept byte for byte, one chunk per event-stream message (5 ms apart, synthetic);
* ``.jsonl`` bodies (vercel/ai fixtures: one decoded ``{"<event-type>": payload}`` per line) are
  re-encoded into event-stream messages by :func:`encode_fixture` (provenance says "converted");
* ``.json`` error bodies become non-200 responses with the status from the file name and the
  ``x-amzn-ErrorType`` header recorded in INDEX.md (typed from the status when it recorded none);
* ``invoke-with-response-stream`` bodies (``chunk`` messages) are another api and are skipped, as are
  error bodies whose request was not a Converse call.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from cassettes.canonical import canonical_json
from cassettes.files import load, save
from cassettes.model import Cassette, Chunk, End, Interaction, RecordedRequest, RecordedResponse
from normalize.wire import AWS_EVENTSTREAM, encode_message
from streamfns.bedrock.errors import error_body
from tools.build_cassette_library import Row, read_index, source_of

__all__ = ["API", "LIBRARY", "encode_fixture", "main"]

REPOSITORY = Path(__file__).resolve().parents[2]
API = "bedrock-converse-stream"
LIBRARY = REPOSITORY / "cassettes" / "library" / API
DEFAULT_SOURCE = REPOSITORY / ".." / "shared" / "realstreams"
STEP_MS = 5
EVENTSTREAM = "application/vnd.amazon.eventstream"
_FALLBACK_MODEL = "us.amazon.nova-micro-v1:0"


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


def _model(name: str, row: Row | None) -> str:
    found = re.search(r"/model/([^/\s]+)/", row.request if row else "")
    if found:
        return found.group(1).replace("%3A", ":").replace("%3a", ":")
    return _FALLBACK_MODEL


def _url(model: str) -> str:
    from streamfns.kit.aws import bedrock_model_path

    return f"https://bedrock-runtime.us-east-1.amazonaws.com/model/{bedrock_model_path(model)}/converse-stream"


def _error_type(row: Row | None, status: int) -> str:
    found = re.search(r"x-amzn-ErrorType[:=]\s*`?([A-Za-z]+)", row.request + row.features if row else "")
    if found:
        return found.group(1)
    # INDEX.md recorded none: the type Bedrock gives the status (the provenance says so).
    sample = error_body(status, "")
    return sample.headers[0][1].partition(":")[0]


def converse(file: Path, row: Row | None) -> bool:
    """Whether a source file belongs to this api (a ConverseStream body or error)."""
    if file.suffix == ".jsonl":
        return True
    if file.suffix == ".json":
        # An InvokeModel call, or another endpoint (count-tokens), is not this api.
        other = ("/invoke" in row.request) if row else True
        return not other and not any(word in file.stem for word in ("count_tokens", "_completion_"))
    messages = AWS_EVENTSTREAM.framer().feed(file.read_bytes())
    return not any(message.event_type == "chunk" for message in messages)


def build(file: Path, row: Row | None, commits: dict[str, str]) -> Cassette:
    """The library cassette for one source file."""
    model = _model(file.stem, row)
    request = RecordedRequest(
        "POST",
        _url(model),
        (("content-type", "application/json"),),
        canonical_json({"messages": [{"role": "user", "content": [{"text": "Hello"}]}]}),
    )
    if file.suffix == ".json":
        found = re.search(r"__error(\d{3})_", file.name)
        if found is None:
            raise SystemExit(f"{file.name}: no status code in the file name")
        status = int(found.group(1))
        headers = (
            ("content-type", "application/json"),
            ("x-amzn-errortype", f"{_error_type(row, status)}:http://internal.amazon.com/coral/com.amazon.bedrock/"),
        )
        pieces = [file.read_bytes()]
    else:
        status, headers = 200, (("content-type", EVENTSTREAM),)
        body = encode_fixture(file.read_text("utf-8")) if file.suffix == ".jsonl" else file.read_bytes()
        pieces = [span.raw for span in AWS_EVENTSTREAM.spans(body)]
    chunks = tuple(Chunk(data, STEP_MS * n) for n, data in enumerate(pieces))
    response = RecordedResponse(status, headers, 0, chunks, End("eof", STEP_MS * len(chunks)))
    source = source_of(row, commits)
    if source is not None and file.suffix == ".jsonl":
        source = {
            **source,
            "provenance": f"{source.get('provenance')}; decoded lines re-encoded as event-stream messages",
        }
    elif source is not None and file.suffix == ".json":
        source = {**source, "provenance": f"{source.get('provenance')}; x-amzn-ErrorType typed from the status"}
    return Cassette(
        interactions=(Interaction(request, response),),
        api=API,
        model=model,
        recorded_at=None,
        source=source,
        extra={"name": file.stem, "timing": "synthetic", "request": "synthetic"},
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Write the cassettes; print the NOTICE entries."""
    parser = argparse.ArgumentParser(prog="python -m tests.bedrock.build_cassettes")
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    source: Path = parser.parse_args(argv).source.resolve()
    rows, commits = read_index(source)
    LIBRARY.mkdir(parents=True, exist_ok=True)
    for old in LIBRARY.glob("*.jsonl"):
        old.unlink()
    notice: list[str] = []
    for file in sorted((source / "bedrock").iterdir()):
        row = rows.get(file.name)
        if not converse(file, row):
            continue
        cassette = build(file, row, commits)
        target = LIBRARY / f"{file.stem}.jsonl"
        save(cassette, target)
        if file.suffix == ".bin" and load(target).interactions[0].response.body != file.read_bytes():
            raise SystemExit(f"{file}: bytes changed on the way into {target}")
        notice.append(f"{API}/{file.stem}.jsonl")
        if row is None:
            notice.append("  source: unknown (no INDEX.md row)")
        else:
            notice += [
                f"  repository: https://github.com/{row.repository}",
                f"  path: {row.path}",
                f"  commit: {commits.get(row.repository, row.commit)}",
                f"  license: {row.license}",
                f"  provenance: {row.provenance}" + (", re-encoded" if file.suffix == ".jsonl" else ""),
            ]
        notice.append("")
    sys.stdout.write("\n".join(notice))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
