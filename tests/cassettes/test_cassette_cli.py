"""The `cassettes` command line: show, scan, mutate, library."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from cassettes import RecordedResponse, dumps, library, load, save
from cassettes import cli as cassettes_cli
from cassettes.canonical import NotJSON
from cassettes.cli import main
from normalize.wire import SSE, WireProfile, known_profiles
from tests.cassettes._helpers import make_cassette
from tests.sse_events import split_events


def test_show_renders_a_timeline_of_a_library_cassette(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "llma__text_haiku45"]) == 0
    out = capsys.readouterr().out
    assert "llma__text_haiku45: api=anthropic-messages model=claude-haiku-4-5-20251001" in out
    assert "#0 POST https://api.anthropic.com/v1/messages" in out
    assert "<- 200 text/event-stream, head at 0 ms" in out
    assert '[        0 ms]    490 B  message_start {"type":"message_start"' in out
    assert "ping {" in out
    assert "end eof (7 chunks, 1159 bytes)" in out


def test_show_lists_events_per_chunk_and_stalls(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "x.jsonl"
    save(make_cassette([b'data: {"a": 1}\n\nevent: two\ndata: 2\n\n', b"data: par", b"tial\n\n"]), path)
    assert main(["mutate", str(path), "--op", "stall:chunk=1,seconds=3", "-o", str(path)]) == 0
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert 'message {"a": 1}' in out
    assert "two 2" in out
    assert "after a 3.0 s stall      9 B  (inside an event)" in out


def test_scan_exit_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clean = tmp_path / "clean.jsonl"
    save(make_cassette([b"data: fine\n\n"]), clean)
    leaky = tmp_path / "leaky.jsonl"
    secret = "gsk_" + "L" * 52
    leaky.write_text(clean.read_text(encoding="utf-8").replace("fine", secret), encoding="utf-8")
    assert main(["scan", str(clean)]) == 0
    assert main(["scan", str(clean), str(leaky)]) == 1
    out = capsys.readouterr().out
    assert f"{clean}: no secrets found" in out
    assert f"{leaky}: Groq API key at {leaky} line 4" in out
    assert secret not in out


def test_mutate_applies_ops_in_order(tmp_path: Path) -> None:
    out = tmp_path / "m.jsonl"
    ops = ["--op", "rechunk:1", "--op", "truncate:bytes=100", "--op", "stall:chunk=5,seconds=2"]
    assert main(["mutate", "llma__text_haiku45", *ops, "-o", str(out)]) == 0
    response = load(out).interactions[0].response
    assert [len(c.data) for c in response.chunks] == [1] * 100
    assert response.end.kind == "reset"
    assert response.chunks[5].stall_s == 2


def _is_429(r: RecordedResponse) -> bool:
    return r.status == 429 and ("retry-after", "1") in r.headers


def _is_gateway_page(r: RecordedResponse) -> bool:
    return r.status == 502 and r.body.startswith(b"<!DOCTYPE html>")


def _is_empty(r: RecordedResponse) -> bool:
    return r.status == 200 and r.chunks == ()


def _has_no_stop(r: RecordedResponse) -> bool:
    return b"message_stop" not in r.body


def _first_data_broken(r: RecordedResponse) -> bool:
    return isinstance(split_events(r.body)[0].json(), NotJSON)


def _small_chunks(r: RecordedResponse) -> bool:
    return all(len(c.data) <= 3 for c in r.chunks)


def _seven_chunks(r: RecordedResponse) -> bool:
    return len(r.chunks) == 7  # no CRLF in this body: the original boundaries only


def _two_then_timeout(r: RecordedResponse) -> bool:
    return len(r.chunks) == 2 and r.end.kind == "timeout"


@pytest.mark.parametrize(
    ("op", "check"),
    [
        ("status:429", _is_429),
        ("status:502", _is_gateway_page),
        ("empty-body", _is_empty),
        ("drop-terminal", _has_no_stop),
        ("corrupt-json:0", _first_data_broken),
        ("rechunk:random,seed=4,max=3", _small_chunks),
        ("rechunk:crlf", _seven_chunks),
        ("truncate:chunks=2,end=timeout", _two_then_timeout),
    ],
)
def test_each_op_is_understood(op: str, check: Callable[[RecordedResponse], bool], tmp_path: Path) -> None:
    out = tmp_path / "m.jsonl"
    assert main(["mutate", "llma__text_haiku45", "--op", op, "-o", str(out)]) == 0
    assert check(load(out).interactions[0].response)


def test_mutate_to_stdout_and_bad_ops(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mutate", "llma__text_haiku45", "--op", "empty-body", "-o", "-"]) == 0
    assert capsys.readouterr().out.startswith('{"type":"cassette"')
    assert main(["mutate", "llma__text_haiku45", "--op", "explode", "-o", "-"]) == 2
    assert "unknown --op 'explode'" in capsys.readouterr().err
    assert main(["mutate", "llma__text_haiku45", "--op", "truncate:bytes=x", "-o", "-"]) == 2
    assert "bad --op" in capsys.readouterr().err


def test_library_lists_counts_and_how_many_have_synthetic_parts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["library"]) == 0
    out = capsys.readouterr().out
    for api, count in library.counts().items():
        assert f"{api}: {count}\n" in out
    total = len(library.names())
    assert out.endswith(
        f"total: {total}\nsynthetic, not as a server sent it: timing (chunk boundaries and times) in {total}, "
        f"request in {total} (cassettes show NAME tells which)\n"
    )
    assert main(["library", "--api", "google-generative-ai", "--names"]) == 0
    assert "  pai__text_gemini20flashexp  (synthetic: timing, request)\n" in capsys.readouterr().out


def test_library_refuses_an_api_nobody_knows_naming_the_known_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["library", "--api", "nope"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    known = sorted({*library.apis(), *known_profiles()})
    assert captured.err == f"cassettes: error: unknown --api 'nope'; known apis: {', '.join(known)}\n"
    assert main(["library", "--api", "anthropic-message"]) == 2
    # The closest first; anthropic-vertex is alike enough to be offered too (difflib ratio 0.73 > 0.7),
    # anthropic-bedrock is not (0.65).
    assert capsys.readouterr().err == (
        "cassettes: error: unknown --api 'anthropic-message'; did you mean: anthropic-messages, anthropic-vertex?\n"
    )


def test_library_lists_an_api_a_profile_declares_even_with_nothing_bundled(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    declared = {"profile-only-test": WireProfile(api="profile-only-test", framing=SSE)}
    monkeypatch.setattr(cassettes_cli, "known_profiles", lambda: declared)
    assert main(["library", "--api", "profile-only-test", "--names"]) == 0
    assert capsys.readouterr().out == "profile-only-test: 0\ntotal: 0\n"


def test_show_says_which_parts_are_synthetic_and_a_recording_has_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", "llma__text_haiku45"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1] == "  SYNTHETIC, not as a server sent it: timing (chunk boundaries and times), request"
    assert "  timing: synthetic" not in out  # said once, in words
    scripted = replace(make_cassette([b"data: 1\n\n"]), extra={"body": "scripted", "timing": "recorded"})
    path = tmp_path / "scripted.jsonl"
    save(scripted, path)
    assert main(["show", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "  SYNTHETIC, not as a server sent it: response body (scripted)"
    assert lines[2] == "  timing: recorded"
    save(make_cassette([b"data: 1\n\n"]), path)
    assert main(["show", str(path)]) == 0
    assert "SYNTHETIC" not in capsys.readouterr().out


def test_show_a_missing_file_says_file_not_found(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(tmp_path / "missing.jsonl")]) == 2
    assert capsys.readouterr().err == f"cassettes: error: {tmp_path / 'missing.jsonl'}: file not found\n"
    assert main(["show", "missing.jsonl"]) == 2
    assert "missing.jsonl: file not found" in capsys.readouterr().err
    assert main(["show", "no_such_name"]) == 2
    assert "no such file, and no bundled cassette has that name" in capsys.readouterr().err
    assert main(["show", str(tmp_path)]) == 2, "a directory is an error on one line, not a traceback"
    assert capsys.readouterr().err.startswith("cassettes: error: ")


def test_show_escapes_control_characters_from_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    evil = "\x1b]0;owned\x07\x1b[2J\u202e"
    cassette = make_cassette([f"event: {evil}\ndata: {evil}\n\n".encode()], url="https://h.test/\u202etxt.exe")
    cassette = replace(cassette, extra={"note": evil}, source={"by": evil}, model=evil)
    path = tmp_path / "evil.jsonl"
    save(cassette, path)
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out
    assert "\x07" not in out
    assert "\u202e" not in out
    assert "\\x1b]0;owned\\x07\\x1b[2J\\u202e" in out


def test_show_marks_an_incomplete_recording(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cut.jsonl"
    text = dumps(make_cassette([b"data: 1\n\n"]))
    path.write_text(text[: text.rindex('{"type":"footer"')], encoding="utf-8")
    assert main(["show", str(path)]) == 0
    assert "INCOMPLETE RECORDING: no completion footer" in capsys.readouterr().out


def test_scan_exits_1_only_for_secrets_and_2_for_files_it_could_not_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clean = tmp_path / "clean.jsonl"
    save(make_cassette([b"data: fine\n\n"]), clean)
    malformed = tmp_path / "malformed.jsonl"
    malformed.write_text('{"type":"cassette"}\n', encoding="utf-8")
    leaky = tmp_path / "leaky.jsonl"
    leaky.write_text(clean.read_text(encoding="utf-8").replace("fine", "gsk_" + "L" * 52), encoding="utf-8")
    assert main(["scan", str(malformed)]) == 2
    err = capsys.readouterr().err
    assert f"cassettes: error: {malformed}:1: the first line must be the header" in err
    assert main(["scan", str(tmp_path / "absent.jsonl")]) == 2
    assert "absent.jsonl: file not found" in capsys.readouterr().err
    assert main(["scan", str(clean), str(leaky)]) == 1
    assert main(["scan", str(leaky), str(malformed)]) == 2, "a file that could not be checked wins"
    out = capsys.readouterr().out
    assert f"{leaky}: Groq API key at {leaky} line 4" in out


def test_python_dash_m_cassettes_runs_the_cli_and_a_closed_pipe_ends_it_quietly(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    save(make_cassette([b"data: %d\n\n" % n for n in range(5000)]), path)  # far more than a pipe buffers
    with subprocess.Popen(
        [sys.executable, "-m", "cassettes", "show", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=Path(library.__file__).resolve().parents[2],
    ) as child:
        assert child.stdout is not None
        assert child.stderr is not None
        first = child.stdout.readline()
        child.stdout.close()  # like `| head -1`
        errors = child.stderr.read()
        child.wait(timeout=30)
    assert first == b"cassette: api=anthropic-messages model=m recorded_at=None framing=sse\n"
    assert errors == b""
    assert child.returncode == 0


def test_scrub_replaces_a_secret_so_the_scan_passes_and_the_cassette_still_replays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clean = tmp_path / "clean.jsonl"
    save(make_cassette([b"data: fine\n\n"]), clean)
    leaky = tmp_path / "leaky.jsonl"
    secret = "gsk_" + "S" * 52
    leaky.write_text(clean.read_text(encoding="utf-8").replace("fine", secret), encoding="utf-8")
    cleaned = tmp_path / "cleaned.jsonl"
    assert main(["scrub", str(leaky), "-o", str(cleaned)]) == 0
    text = cleaned.read_text(encoding="utf-8")
    assert secret not in text
    assert "[REDACTED]" in text
    assert main(["scan", str(cleaned)]) == 0
    assert load(cleaned).interactions[0].response.body == b"data: [REDACTED]\n\n"
    assert main(["scrub", str(leaky), "-o", "-"]) == 0
    printed = capsys.readouterr().out
    assert secret not in printed
    assert '"redacted"' in printed, "the header marks the body redacted"


def test_scrub_refuses_a_file_that_is_not_there(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scrub", str(tmp_path / "absent.jsonl"), "-o", str(tmp_path / "out.jsonl")]) == 2
    assert "absent.jsonl: file not found" in capsys.readouterr().err
    assert not (tmp_path / "out.jsonl").exists()
