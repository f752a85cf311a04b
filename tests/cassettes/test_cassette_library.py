"""The bundled library: every cassette loads, keeps its source bytes, is attributed and clean."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

import cassettes
from cassettes import CassetteError, dumps, library
from cassettes.secret_scan import scan_path
from normalize.wire import AWS_EVENTSTREAM, NDJSON, profile_for
from tests.sse_events import split_events
from tools import build_cassette_library as _build

pytestmark = pytest.mark.parallel

SOURCE = _build.DEFAULT_SOURCE.resolve()
# The builder's list, and what the eight library folders must be.
APIS = list(_build.APIS)


def test_the_library_has_the_eight_apis_the_builder_builds() -> None:
    assert APIS == [
        "anthropic-bedrock",
        "anthropic-messages",
        "anthropic-vertex",
        "bedrock-converse-stream",
        "cohere-chat",
        "google-generative-ai",
        "mistral-conversations",
        "ollama-chat",
        "openai-completions",
        "openai-responses",
    ]


def test_every_library_cassette_loads_and_counts_are_printed() -> None:
    counts = library.counts()
    print("library cassettes per api:", counts, "total", sum(counts.values()))
    assert sorted(counts) == APIS
    assert sum(counts.values()) == len(library.names())
    for name in library.names():
        cassette = library.load(name)
        assert cassette.name == name
        assert cassette.api in APIS
        assert cassette.extra["timing"] == "synthetic"
        assert cassette.source is not None
        assert len(cassette.interactions) == 1
        assert cassette.interactions[0].response.end.kind == "eof"
        assert library.path(name).read_text(encoding="utf-8") == dumps(cassette), "files round-trip exactly"


def _repository_cassettes() -> list[Path]:
    """Every cassette file of the checkout outside the library: examples, test recordings, adapters'."""
    root = Path(__file__).resolve().parents[2]
    found: list[Path] = []
    for top in ("examples", "tests", "streamfns", "conformance", "normalize"):
        for path in sorted((root / top).rglob("*.jsonl")):
            with path.open("rb") as file:
                if file.readline().startswith(b'{"type":"cassette"'):
                    found.append(path)
    return found


def test_every_bundled_cassette_says_which_of_its_parts_are_synthetic() -> None:
    for name in library.names():
        marks = library.synthetic(name)
        assert marks == {"timing": "synthetic", "request": "synthetic"}, name
        assert library.load(name).synthetic == marks, "the header line and the loaded cassette agree"
    others = _repository_cassettes()
    assert len(others) >= 15  # the agent-loop, NDJSON-example, adapter and harness recordings
    for path in others:
        cassette = cassettes.load(path)
        # None was written by the recorder (which stamps recorded_at): each was assembled from
        # collected or scripted bodies, so its chunk times at least are made up, and it says so.
        assert cassette.recorded_at is None, path
        assert cassette.synthetic.get("timing") == "synthetic", path


def test_one_chunk_per_frame_of_the_apis_framing_with_increasing_synthetic_times() -> None:
    """One chunk per server-sent event, JSON line or AWS event-stream message, as the adapter declares the
    api's framing (an error body of a non-SSE api is one chunk)."""
    for name in library.names():
        response = library.load(name).interactions[0].response
        cassette_api = library.load(name).api or ""
        profile = profile_for(cassette_api)
        assert profile is not None, cassette_api
        if profile.framing is NDJSON:  # JSON lines: one chunk per line (an error body: one chunk)
            expected = [s.raw for s in NDJSON.spans(response.body)] if response.status == 200 else [response.body]
        elif profile.framing is AWS_EVENTSTREAM:  # one chunk per message (an error body: one chunk)
            expected = (
                [s.raw for s in AWS_EVENTSTREAM.spans(response.body)] if response.status == 200 else [response.body]
            )
            if response.status == 200:
                messages = AWS_EVENTSTREAM.framer().feed(response.body)
                assert len(messages) == len(expected), name  # every byte is in a whole, CRC-checked message
        else:
            expected = [e.raw for e in split_events(response.body)]
        assert [c.data for c in response.chunks] == expected
        assert [c.t_ms for c in response.chunks] == [5 * n for n in range(len(response.chunks))]


@pytest.mark.skipif(not SOURCE.is_dir(), reason="the realstreams collection is not next to this checkout")
def test_every_source_file_is_bundled_byte_for_byte() -> None:
    rows, _ = _build.read_index(SOURCE)
    expected: dict[str, int] = {}
    for item in _build.sources(SOURCE, rows):
        expected[item.api] = expected.get(item.api, 0) + 1
        cassette = library.load(item.file.stem)
        assert cassette.api == item.api, item.file.name
        body = cassette.interactions[0].response.body
        if item.file.suffix == ".jsonl" and item.folder == "cohere":  # Cohere's JSON lines, re-framed as its SSE
            lines = [ln for ln in item.file.read_text("utf-8").splitlines() if ln.strip()]
            events = split_events(body)
            assert [(e.event, e.raw.partition(b"data: ")[2].rstrip(b"\n")) for e in events] == [
                *((json.loads(ln)["type"], ln.encode()) for ln in lines),
                (None, b"[DONE]"),
            ]
        elif item.file.suffix == ".jsonl":  # a decoded Bedrock fixture: its lines, re-encoded message by message
            assert item.folder == "bedrock", item.file.name
            lines = [ln for ln in item.file.read_text("utf-8").splitlines() if ln.strip()]
            messages = AWS_EVENTSTREAM.framer().feed(body)
            assert [{m.event_type: json.loads(m.payload)} for m in messages] == [json.loads(ln) for ln in lines]
        else:
            assert body == item.file.read_bytes(), item.file.name
    for api, name in _build.REFRAMED:  # the one converted cassette, made from a bundled one
        expected["anthropic-bedrock"] += 1
        assert library.load(f"{name}_REFRAMED").source != library.load(name).source  # it says it was converted
        assert library.load(name).api == api
    assert library.counts() == expected


@pytest.mark.slow  # 307 files written, scanned and read back: a few seconds
@pytest.mark.skipif(not SOURCE.is_dir(), reason="the realstreams collection is not next to this checkout")
def test_the_builder_rebuilds_the_library_byte_for_byte(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _build.main(["--source", str(SOURCE), "--output", str(tmp_path)]) == 0
    assert f"total: {len(library.names())}" in capsys.readouterr().out
    shipped = Path(library.__file__).parent
    built = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert built == sorted(str(p.relative_to(shipped)) for p in [*shipped.glob("*/*.jsonl"), shipped / "NOTICE"])
    for name in built:
        assert (tmp_path / name).read_bytes() == (shipped / name).read_bytes(), name


def test_the_builder_keeps_a_cassette_it_has_no_source_for(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source, output = tmp_path / "realstreams", tmp_path / "library"
    source.mkdir()
    (source / "INDEX.md").write_text("# nothing collected\n", encoding="utf-8")
    name = "llma__text_haiku45"
    kept = output / "anthropic-messages" / f"{name}.jsonl"
    kept.parent.mkdir(parents=True)
    kept.write_bytes(library.path(name).read_bytes())
    assert _build.main(["--source", str(source), "--output", str(output)]) == 0
    assert "kept (no source for it): anthropic-messages/llma__text_haiku45.jsonl" in capsys.readouterr().out
    assert kept.read_bytes() == library.path(name).read_bytes()
    notice = (output / "NOTICE").read_text(encoding="utf-8")
    assert f"anthropic-messages/{name}.jsonl\n  repository: https://github.com/simonw/llm-anthropic\n" in notice


def test_the_builder_is_not_part_of_the_installed_package() -> None:
    assert importlib.util.find_spec("cassettes.library._build") is None
    assert Path(_build.__file__).resolve().parent.name == "tools"


def test_error_files_become_error_responses() -> None:
    overloaded = library.load("anthropic_529_overloaded_error_2024").interactions[0].response
    assert overloaded.status == 529
    assert cassettes.header_value(overloaded.headers, "content-type") == "application/json"
    midstream = library.load("anthropic_sse_midstream_error_event_overloaded").interactions[0].response
    assert midstream.status == 200
    assert cassettes.header_value(midstream.headers, "content-type") == "text/event-stream"
    gemini_sse = library.load("gemini_404_on_alt_sse_request_content_type_event_stream").interactions[0].response
    assert gemini_sse.status == 404
    assert cassettes.header_value(gemini_sse.headers, "content-type") == "text/event-stream"
    assert library.names("openai-responses").count("deepseek_responses_400") == 1


def test_requests_are_plausible_for_their_api() -> None:
    anthropic = library.load("llma__text_haiku45").interactions[0].request
    assert (anthropic.method, anthropic.url) == ("POST", "https://api.anthropic.com/v1/messages")
    assert b'"model":"claude-haiku-4-5-20251001"' in anthropic.body
    gemini = library.load("pai__text_gemini20flashexp").interactions[0].request
    assert gemini.url.endswith("/models/gemini-2.0-flash-exp:streamGenerateContent?alt=sse")
    groq = library.load("vercel__groq_tool_call_single_chunk").interactions[0].request
    assert groq.url.startswith("https://api.groq.com/")
    resumed = library.load("pai__background_resume_starting_after").interactions[0].request
    assert resumed.method == "GET"
    assert resumed.body == b""


def test_notice_attributes_every_cassette() -> None:
    notice = (Path(library.__file__).parent / "NOTICE").read_text(encoding="utf-8")
    for name in library.names():
        cassette = library.load(name)
        assert f"{cassette.api}/{name}.jsonl" in notice
    assert "quoted in GitHub issue https://github.com/anthropics/anthropic-sdk-typescript/issues/616" in notice
    assert "no repository license" in notice
    assert "commit: 4fda38988f2939fa6ea9cdefcf120693e10ef491" in notice


def test_library_files_contain_no_secrets() -> None:
    for name in library.names():
        assert scan_path(library.path(name), env={}) == [], name


def test_names_filter_by_api_and_unknown_names_fail_clearly() -> None:
    assert all(library.load(n).api == "google-generative-ai" for n in library.names("google-generative-ai"))
    assert library.apis() == APIS
    with pytest.raises(CassetteError, match="no bundled cassette named 'nope'"):
        library.load("nope")
