"""`cassettes import` and `cassettes.import_body`: a cassette from a body recorded by any other means.

The bodies come from the bundled library's own bytes (so every test runs without the realstreams
collection): each library cassette's response body, status and headers are what a user would have
saved from another tool.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import pytest

import cassettes
import streamfns
from cassettes import BodyWarning, Cassette, CassetteError, SecretFound, dumps, import_body, library, load, read_body
from cassettes import cli as cassettes_cli
from cassettes.cli import main
from cassettes.importing import MAX_BODY_BYTES, STEP_MS, parse_chunking
from cassettes.model import header_value
from normalize import Context, StreamOptions, UserMessage
from normalize.wire import AWS_EVENTSTREAM, NDJSON, SSE, profile_for
from streamfns.demo import model_for_cassette, replay_client

pytestmark = pytest.mark.parallel  # clock-blind: in-process transports, no sleep or timeout

TEXT = "llma__text_haiku45"  # anthropic-messages, 7 events, ends in message_stop
# An obviously fake key in a shape the scan knows (never a real one).
FAKE_KEY = "sk-ant-" + "FAKEFAKEFAKE" * 3


def _body(name: str) -> bytes:
    return library.load(name).interactions[0].response.body


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _one_error_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("cassettes: error: "), err
    assert "Traceback" not in err
    return lines[0]


async def _final(cassette: Cassette) -> dict[str, Any]:
    """The final message ``streamfns replay`` shows for ``cassette`` (its wall-clock stamp left out)."""
    async with replay_client(cassette) as client:
        options = StreamOptions(api_key="offline-replay", http_client=client, max_retries=0)
        stream = streamfns.stream(model_for_cassette(cassette), Context(messages=[UserMessage(content="Hi")]), options)
        message = (await stream.result()).to_json()
    message.pop("timestamp", None)
    return message


# -- the done-when of the issue --------------------------------------------------------------------------


@pytest.mark.slow  # every bundled body imported by the command and replayed twice: a few seconds
async def test_importing_each_bundled_body_replays_to_the_bundled_final_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`cassettes import` of each bundled body (its status, headers, model and URL given on the command
    line, as a user who saved them would) replays to the same final message as the bundled cassette; and
    with nothing but the api given, to the same content and stop reason."""
    names = library.names()
    assert len(names) >= 300
    for name in names:
        bundled = library.load(name)
        request, response = bundled.interactions[0].request, bundled.interactions[0].response
        body = tmp_path / "body"
        body.write_bytes(response.body)
        out = tmp_path / "imported.jsonl"
        argv = ["import", str(body), "--api", str(bundled.api), "--status", str(response.status), "--url", request.url]
        argv += [f"--header={key}: {value}" for key, value in response.headers]
        if bundled.model is not None:
            argv += ["--model", bundled.model]
        assert main([*argv, "-o", str(out)]) == 0, (name, capsys.readouterr().err)
        imported = load(out)
        assert imported.interactions[0].response == response, name  # same bytes, same chunks, same times
        expected = await _final(bundled)
        assert await _final(imported) == expected, name
        bare = import_body(
            response.body,
            api=str(bundled.api),
            status=response.status,
            content_type=header_value(response.headers, "content-type"),
            on_warning=lambda _: None,
        )
        error_info: dict[str, Any] = expected.get("errorInfo") or {}
        if error_info.get("kind") == "config":
            # The bundled URL's host picks a provider that needs settings (a Vertex project) before any
            # request: that replay never reaches the recording, so there is nothing to compare with.
            continue
        got = await _final(bare)
        assert (got["content"], got["stopReason"]) == (expected["content"], expected["stopReason"]), name
    capsys.readouterr()


@pytest.mark.slow  # every bundled cassette made again and compared: a second or two
def test_the_library_builder_makes_each_bundled_cassette_through_import_body() -> None:
    """One path: given what the builder chose for it (request, model, name, attribution), `import_body`
    writes each bundled cassette byte for byte."""
    for name in library.names():
        bundled = library.load(name)
        request, response = bundled.interactions[0].request, bundled.interactions[0].response
        made = import_body(
            response.body,
            api=str(bundled.api),
            status=response.status,
            content_type=header_value(response.headers, "content-type"),
            headers=response.headers,
            model=bundled.model,
            request=request,
            name=bundled.name,
            source=bundled.source,
            on_warning=lambda _: None,
        )
        assert dumps(made) == library.path(name).read_text(encoding="utf-8"), name


def test_read_body_reads_standard_input_and_files(tmp_path: Path) -> None:
    assert read_body("-", stdin=io.BytesIO(b"data: 1\n\n")) == b"data: 1\n\n"
    path = tmp_path / "b"
    path.write_bytes(b"x")
    assert read_body(path) == b"x"


# -- the header says what is synthetic ---------------------------------------------------------------------


def test_the_header_marks_timing_and_request_synthetic_and_show_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cassette = import_body(_body(TEXT), api="anthropic-messages")
    assert cassette.synthetic == {"timing": "synthetic", "request": "synthetic"}
    assert cassette.recorded_at is None
    assert [c.t_ms for c in cassette.interactions[0].response.chunks] == [STEP_MS * n for n in range(7)]
    assert cassette.interactions[0].response.end.t_ms == STEP_MS * 7
    cassettes.save(cassette, tmp_path / "c.jsonl")
    assert main(["show", str(tmp_path / "c.jsonl")]) == 0
    assert "SYNTHETIC, not as a server sent it: timing (chunk boundaries and times), request" in capsys.readouterr().out


# -- chunking ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "framing"),
    [
        (TEXT, SSE),
        ("langchaingo__TestClient_GenerateChatStream_gemma3-1b", NDJSON),
        ("fantasy__simple_streaming_claude-3-haiku-20240307-v1-0", AWS_EVENTSTREAM),
    ],
)
def test_event_chunking_cuts_one_chunk_per_frame_of_the_apis_framing(name: str, framing: Any) -> None:
    bundled = library.load(name)
    body = _body(name)
    profile = profile_for(bundled.api)
    assert profile is not None
    assert profile.framing is framing
    chunks = import_body(body, api=str(bundled.api), model="m").interactions[0].response.chunks
    assert [c.data for c in chunks] == [span.raw for span in framing.spans(body)]
    assert len(chunks) > 2


def test_line_and_size_chunking_keep_the_bytes_and_cut_where_asked() -> None:
    body = _body(TEXT)
    by_line = import_body(body, api="anthropic-messages", chunking="line").interactions[0].response
    assert by_line.body == body
    assert [c.data for c in by_line.chunks] == body.splitlines(keepends=True)
    by_size = import_body(body, api="anthropic-messages", chunking="size:100").interactions[0].response
    assert by_size.body == body
    assert [len(c.data) for c in by_size.chunks[:-1]] == [100] * (len(body) // 100)
    assert parse_chunking("size:3") == 3
    assert parse_chunking("event") == "event"


def test_an_error_status_is_one_chunk_with_a_json_content_type_and_the_headers_given() -> None:
    body = b'{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}'
    response = (
        import_body(body, api="anthropic-messages", status=429, headers=[("retry-after", "7")]).interactions[0].response
    )
    assert response.status == 429
    assert [c.data for c in response.chunks] == [body]
    assert response.headers == (("content-type", "application/json"), ("retry-after", "7"))


def test_a_2xx_document_is_one_chunk_with_a_warning_that_the_adapter_reads_it_as_an_error() -> None:
    body = b'{"error": {"message": "overloaded"}}\n\n{"trailing": true}'
    notes: list[str] = []
    response = (
        import_body(body, api="anthropic-messages", content_type="application/json", on_warning=notes.append)
        .interactions[0]
        .response
    )
    assert [c.data for c in response.chunks] == [body]
    assert notes == [
        "a 200 sent as 'application/json' is not a sse stream: the adapter reads the body as an error document"
    ]


def test_a_header_the_recorder_would_not_keep_is_left_out_with_a_warning() -> None:
    notes: list[str] = []
    response = (
        import_body(
            _body(TEXT),
            api="anthropic-messages",
            headers=[("set-cookie", "a=b"), ("x-private", "v")],
            on_warning=notes.append,
        )
        .interactions[0]
        .response
    )
    assert response.headers == (("content-type", "text/event-stream"),)
    assert notes == ["response headers the recorder does not keep were left out: set-cookie, x-private"]


# -- the synthetic request ---------------------------------------------------------------------------------


def test_the_synthetic_request_is_the_adapters_own_naming_the_model_given_or_found_or_unknown() -> None:
    found = import_body(_body(TEXT), api="anthropic-messages")
    assert found.model == "claude-haiku-4-5-20251001"
    request = found.interactions[0].request
    assert (request.method, request.url) == ("POST", "https://api.anthropic.com/v1/messages")
    assert b'"model":"claude-haiku-4-5-20251001"' in request.body
    assert header_value(request.headers, "anthropic-version") == "2023-06-01"
    given = import_body(_body(TEXT), api="anthropic-messages", model="claude-sonnet-4-5")
    assert given.model == "claude-sonnet-4-5"
    assert b'"model":"claude-sonnet-4-5"' in given.interactions[0].request.body
    # No model in the stream (an error event only), none given: the request says so, the header has none.
    unnamed = import_body(b'event: error\ndata: {"type":"error"}\n\n', api="anthropic-messages", on_warning=print)
    assert unnamed.model is None
    assert b'"model":"unknown"' in unnamed.interactions[0].request.body


def test_a_url_given_is_used_with_its_credentials_scrubbed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    body = _body("langchaingo__TestClient_GenerateChatStream_gemma3-1b")
    default = import_body(body, api="ollama-chat").interactions[0].request
    assert default.url == "http://localhost:11434/api/chat"
    request = (
        import_body(body, api="ollama-chat", url="https://gw.example.test/api/chat?key=not-a-real-key-0000")
        .interactions[0]
        .request
    )
    assert request.url == "https://gw.example.test/api/chat"


def test_an_api_whose_adapter_cannot_build_a_request_without_settings_gets_a_neutral_one() -> None:
    # openai-completions needs a server address nobody gave: the request goes to a `.invalid` host.
    body = _body("oai__content_logprobs_gpt4o")
    request = import_body(body, api="openai-completions", model="gpt-4o").interactions[0].request
    assert request.url == "https://synthetic.invalid/openai-completions"
    assert request.body == b'{"messages":[{"content":"Hello","role":"user"}],"model":"gpt-4o","stream":true}'


# -- a third party's api ------------------------------------------------------------------------------------


def test_adapter_names_a_declaration_that_is_not_installed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = b'{"message":{"role":"assistant","content":"Hi"},"done":false}\n{"done":true,"done_reason":"stop"}\n'
    body = tmp_path / "reply.ndjson"
    body.write_bytes(lines)
    out = tmp_path / "mine.jsonl"
    status, _, err = _cli(capsys, "import", str(body), "--api", "ndjson-chat", "-o", str(out))
    assert status == 2
    assert "unknown api 'ndjson-chat'" in _one_error_line(err)
    adapter = "examples.ndjson_chat.adapter:WIRE"
    status, _, err = _cli(capsys, "import", str(body), "--adapter", adapter, "-o", str(out))
    assert (status, err) == (0, "")
    imported = load(out)
    assert imported.api == "ndjson-chat"
    # The example's request builder, with no server address: its path on a host that can not exist.
    assert imported.interactions[0].request.url == "https://synthetic.invalid/api/chat"
    assert [c.data for c in imported.interactions[0].response.chunks] == lines.splitlines(keepends=True)
    status, _, err = _cli(
        capsys, "import", str(body), "--api", "anthropic-messages", "--adapter", adapter, "-o", str(out)
    )
    assert status == 2
    assert "is for api 'ndjson-chat', not 'anthropic-messages'" in _one_error_line(err)


# -- hostile inputs: one error line each, exit 2 ----------------------------------------------------------


def test_an_unknown_api_is_refused_with_the_close_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = tmp_path / "b.sse"
    body.write_bytes(_body(TEXT))
    status, _, err = _cli(capsys, "import", str(body), "--api", "anthropic-mesages", "-o", str(tmp_path / "o.jsonl"))
    assert status == 2
    assert "did you mean: anthropic-messages" in _one_error_line(err)
    assert not (tmp_path / "o.jsonl").exists()
    status, _, err = _cli(capsys, "import", str(body), "-o", str(tmp_path / "o.jsonl"))
    assert status == 2
    line = _one_error_line(err)
    assert "import needs --api API" in line
    assert "anthropic-messages, anthropic-vertex" in line  # the installed apis, listed


@pytest.mark.parametrize(
    ("option", "said"),
    [
        (["--chunking", "size:0"], "the size must be at least 1 byte"),
        (["--chunking", "size:-5"], "the size must be at least 1 byte"),
        (["--chunking", "size:ten"], "the size must be a whole number of bytes"),
        (["--chunking", "frame"], "unknown chunking 'frame'; use event, line or size:N"),
        (["--status", "99"], "status 99 is not an HTTP status (100-599)"),
        (["--status", "600"], "status 600 is not an HTTP status (100-599)"),
        (["--status", "ok"], "--status 'ok' is not a number"),
        (["--header", "no colon"], "--header 'no colon': expected 'NAME: VALUE'"),
    ],
)
def test_bad_options_are_one_error_line(
    option: list[str], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = tmp_path / "b.sse"
    body.write_bytes(_body(TEXT))
    status, _, err = _cli(
        capsys, "import", str(body), "--api", "anthropic-messages", *option, "-o", str(tmp_path / "o")
    )
    assert status == 2
    assert said in _one_error_line(err)
    assert not (tmp_path / "o").exists()


def test_an_empty_body_and_a_body_that_is_not_a_regular_file_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    out = str(tmp_path / "o.jsonl")
    status, _, err = _cli(capsys, "import", str(empty), "--api", "anthropic-messages", "-o", out)
    assert status == 2
    assert "the body is empty" in _one_error_line(err)
    status, _, err = _cli(capsys, "import", str(tmp_path), "--api", "anthropic-messages", "-o", out)
    assert status == 2
    assert "it is a directory; the body must be a regular file" in _one_error_line(err)
    status, _, err = _cli(capsys, "import", str(tmp_path / "missing"), "--api", "anthropic-messages", "-o", out)
    assert status == 2
    assert "No such file or directory" in _one_error_line(err)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_as_the_body_is_refused_without_waiting_for_a_writer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    status, _, err = _cli(capsys, "import", str(fifo), "--api", "anthropic-messages", "-o", str(tmp_path / "o"))
    assert status == 2
    assert "it is a FIFO (named pipe); the body must be a regular file" in _one_error_line(err)


def test_a_body_over_the_limit_is_refused_unread() -> None:
    with pytest.raises(CassetteError, match="over"):
        read_body("-", stdin=io.BytesIO(b"x" * (MAX_BODY_BYTES + 1)))


def test_a_body_the_framing_cannot_read_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = tmp_path / "b"
    body.write_bytes(_body(TEXT))  # server-sent events, declared as an AWS event stream
    status, _, err = _cli(capsys, "import", str(body), "--api", "bedrock-converse-stream", "-o", str(tmp_path / "o"))
    assert status == 2
    assert "the body is not in the aws-eventstream framing the api's adapter declares" in _one_error_line(err)
    body.write_bytes(b'{"error": {"message": "nope"}}')  # a JSON document declared as a 200 event stream
    status, _, err = _cli(capsys, "import", str(body), "--api", "anthropic-messages", "-o", str(tmp_path / "o"))
    assert status == 2
    assert "the body holds no event with a payload in the sse framing" in _one_error_line(err)
    # The same document with its status is an error response, imported.
    status, _, err = _cli(
        capsys, "import", str(body), "--api", "anthropic-messages", "--status", "500", "-o", str(tmp_path / "o")
    )
    assert (status, err) == (0, "")


async def test_a_body_cut_inside_a_frame_is_imported_with_a_warning_and_replays_as_cut(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole = _body(TEXT)
    body = tmp_path / "cut.sse"
    body.write_bytes(whole[: len(whole) - 30])
    out = tmp_path / "cut.jsonl"
    status, _, err = _cli(capsys, "import", str(body), "--api", "anthropic-messages", "-o", str(out))
    assert status == 0
    assert err == (
        "cassettes: warning: the body ends inside its last event (a cut stream): imported as it is, "
        "it replays as cut there\n"
    )
    final = await _final(load(out))
    assert final["stopReason"] == "error"
    assert final["errorInfo"]["kind"] == "truncated"


def test_a_body_without_the_terminal_marker_warns() -> None:
    whole = _body(TEXT)
    last = SSE.spans(whole)[-1]
    with pytest.warns(BodyWarning, match=r"ends without the api's terminal marker \(message_stop\)"):
        cassette = import_body(whole[: last.start], api="anthropic-messages")
    assert cassette.interactions[0].response.body == whole[: last.start]


def test_an_existing_output_is_replaced_as_mutate_replaces_one_but_never_the_body_or_a_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = tmp_path / "b.sse"
    body.write_bytes(_body(TEXT))
    out = tmp_path / "o.jsonl"
    out.write_text("old", encoding="utf-8")
    assert _cli(capsys, "import", str(body), "--api", "anthropic-messages", "-o", str(out))[0] == 0
    assert load(out).interactions[0].response.body == _body(TEXT)
    status, _, err = _cli(capsys, "import", str(body), "--api", "anthropic-messages", "-o", str(body))
    assert status == 2
    assert "is the body file itself" in _one_error_line(err)
    assert body.read_bytes() == _body(TEXT)
    status, _, err = _cli(capsys, "import", str(body), "--api", "anthropic-messages", "-o", str(tmp_path))
    assert status == 2
    assert "it is a directory; the output must be a file path" in _one_error_line(err)


# -- secrets ---------------------------------------------------------------------------------------------


def test_a_body_carrying_a_key_is_refused_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    leaky = _body(TEXT).replace(b"Hello", FAKE_KEY.encode())
    body = tmp_path / "leaky.sse"
    body.write_bytes(leaky)
    out = tmp_path / "o.jsonl"
    for target in (str(out), "-"):
        status, printed, err = _cli(capsys, "import", str(body), "--api", "anthropic-messages", "-o", target)
        assert status == 2
        line = _one_error_line(err)
        assert "Anthropic API key" in line
        assert FAKE_KEY not in line
        assert printed == ""
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [body]


def test_a_body_echoing_a_credential_of_the_environment_is_refused() -> None:
    token = "env-token-value-for-this-test-0001"
    body = _body(TEXT).replace(b"Hello", token.encode())
    with pytest.raises(SecretFound):
        import_body(body, api="anthropic-messages", env={"MY_GATEWAY_TOKEN": token})
    assert import_body(body, api="anthropic-messages", env={}).interactions[0].response.body == body


# -- the command's help ----------------------------------------------------------------------------------


def test_the_help_and_the_module_docstring_show_import(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "import" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["import", "--help"])
    shown = capsys.readouterr().out
    assert "--chunking HOW" in shown
    assert "cassettes import body.sse --api API -o tests/cassettes/text.jsonl" in shown
    assert "cassettes import BODY|- --api API -o OUT" in str(cassettes_cli.__doc__)
