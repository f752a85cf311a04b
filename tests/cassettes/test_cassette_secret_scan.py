"""The secret scan: known key shapes, credential-looking environment values, no secret in messages.

Every fake key is assembled at runtime: a key-shaped literal in a committed file is rejected.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cassettes import SecretFound, SecretSet, dumps, save, scan_bytes, scan_cassette, scan_path, scan_text, secret_scan
from cassettes.secret_scan import SCAN_PAUSE_MS, BodyScanner, env_secrets
from tests.cassettes._helpers import make_cassette

FAKE_KEYS = {
    "Anthropic API key": "sk-ant-api03-" + "a1B2" * 10,
    "OpenAI project key": "sk-proj-" + "Zz9_" * 10,
    "OpenAI-style secret key": "sk-" + "q" * 48,
    "Google API key": "AIza" + "S" * 35,
    "xAI API key": "xai-" + "x" * 60,
    "Groq API key": "gsk_" + "g" * 52,
    "AWS access key id": "AKIA" + "ABCDEFGHIJKLMNOP",
    "JSON Web Token": "eyJ" + "hbGciOi" + "." + "eyJ" + "zdWIiOi" + "." + "sig",
    "bearer token": "Bearer " + "t" * 32,
}


@pytest.mark.parametrize(("kind", "secret"), FAKE_KEYS.items())
def test_each_known_shape_is_found_and_never_echoed(kind: str, secret: str) -> None:
    findings = scan_text(f'{{"note": "here: {secret} end"}}', "sample", env={})
    assert [f.kind for f in findings] == [kind]
    assert findings[0].location == "sample, offset 16"
    assert secret not in str(SecretFound(findings))


@pytest.mark.parametrize(
    "text",
    [
        "sk-short",
        "ask-" + "a" * 40,  # inside a word
        "AIza" + "S" * 10,
        "the model said: task-" + "b" * 40,
        "ASIA" + "x" * 16,  # lower case is not an AWS key id
        "Bearer short",
        "eyJonly.one",
    ],
)
def test_look_alikes_are_not_reported(text: str) -> None:
    assert scan_text(text, "sample", env={}) == []


def test_environment_values_named_like_credentials_are_found() -> None:
    env = {"MY_API_KEY": "value-" + "1" * 10, "SESSION_TOKEN": "short", "HOME_DIR": "not-a-secret-at-all"}
    assert env_secrets(env) == [("MY_API_KEY", "value-" + "1" * 10)]
    findings = scan_text("prefix value-1111111111 suffix", "sample", env=env)
    assert [f.kind for f in findings] == ["value of environment variable MY_API_KEY"]
    assert scan_text("prefix not-a-secret-at-all", "sample", env=env) == []


def test_the_environment_is_read_at_scan_time(monkeypatch: pytest.MonkeyPatch) -> None:
    value = "rotating-" + "v" * 12
    assert scan_text(value, "sample") == []
    monkeypatch.setenv("ROTATING_SECRET", value)
    assert [f.kind for f in scan_text(value, "sample")] == ["value of environment variable ROTATING_SECRET"]


def test_a_key_split_across_chunks_is_found_once() -> None:
    """Chunks of a slow stream (a pause before each) are scanned as they come."""
    secret = FAKE_KEYS["Anthropic API key"]
    scanner = BodyScanner("body", env={})
    assert scanner.feed(b"data: " + secret[:10].encode(), 0.0) == []
    assert scanner.pending == 0
    found = scanner.feed(secret[10:].encode() + b"\n\n", SCAN_PAUSE_MS)
    assert [f.kind for f in found] == ["Anthropic API key"]
    assert found[0].location == "body, offset 6"
    assert scanner.feed(b"data: more\n\n", 2 * SCAN_PAUSE_MS) == []
    assert scanner.flush() == []


def test_a_key_hidden_in_a_base64_chunk_is_found() -> None:
    secret = FAKE_KEYS["Groq API key"].encode()
    cassette = make_cassette([b"\xff" + secret])  # not UTF-8, so the file stores it as base64
    findings = scan_cassette(cassette, env={})
    # Found twice: encoded in the file's line, and in the decoded body.
    assert {(f.kind, "line 4" in f.location, "response body" in f.location) for f in findings} == {
        ("Groq API key (base64)", True, False),
        ("Groq API key", False, True),
    }


def test_save_refuses_and_writes_nothing(tmp_path: Path) -> None:
    cassette = make_cassette([b"data: " + FAKE_KEYS["Google API key"].encode() + b"\n\n"])
    target = tmp_path / "leaky.jsonl"
    with pytest.raises(SecretFound, match="Google API key at cassette line 4"):
        save(cassette, target)
    assert not target.exists()
    save(make_cassette([b"data: clean\n\n"]), target)
    assert target.exists()


# -- every spelling, at the byte level ------------------------------------------------------------------

SECRET = b"test-credential-0123456789"


@given(
    st.binary(max_size=5),
    st.binary(min_size=8, max_size=40).filter(lambda b: len(b.strip()) == len(b)),
    st.binary(max_size=5),
)
def test_a_secret_inside_any_base64_text_is_found_at_every_alignment(
    prefix: bytes, secret: bytes, suffix: bytes
) -> None:
    secrets = SecretSet([("the secret", secret)])
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        findings = scan_bytes(encode(prefix + secret + suffix), "blob", secrets=secrets)
        assert any(f.kind.startswith("the secret (base64") for f in findings), (prefix, secret, suffix)


@pytest.mark.parametrize(
    ("spelled", "start"),
    [
        (b"key=" + SECRET, 4),
        (b'{"k": "' + b"".join(b"\\u%04x" % c for c in SECRET) + b'"}', 7),
        (b'{"k": "te\\u0073t-credential-0123456789"}', 7),
        (b"q=" + b"".join(b"%%%02X" % c for c in SECRET), 2),
        (b"q=test%2dcredential%2D0123456789", 2),
        (b"x=" + SECRET.replace(b"-", b"\\u0025" + b"2d"), 2),  # URL escapes inside JSON escapes
    ],
)
def test_escaped_spellings_are_found_and_located_in_the_original_bytes(spelled: bytes, start: int) -> None:
    findings = scan_bytes(spelled, "body", secrets=SecretSet([("the secret", SECRET)]))
    assert [f.location for f in findings] == [f"body, offset {start}"]
    assert findings[0].kind in ("the secret", "the secret (escaped)")


def test_a_known_shape_inside_base64_is_found_without_knowing_the_key() -> None:
    key = FAKE_KEYS["Anthropic API key"].encode()
    for offset in range(3):
        blob = base64.b64encode(b"\x00" * offset + b"echo: " + key + b" end")
        assert [f.kind for f in scan_bytes(blob, "blob")] == ["Anthropic API key (base64)"], offset


def test_an_escaped_secret_split_across_chunks_is_found_once() -> None:
    spelled = b"".join(b"\\u%04x" % c for c in SECRET)
    scanner = BodyScanner("body", SecretSet([("the secret", SECRET)]))
    pieces = [b'data: "' + spelled[:7], spelled[7:90], spelled[90:] + b'"\n']
    found = [scanner.feed(piece, n * SCAN_PAUSE_MS) for n, piece in enumerate(pieces)]
    assert [[f.kind for f in batch] for batch in found] == [[], [], ["the secret (escaped)"]]
    assert found[2][0].location == "body, offset 7"
    assert scanner.feed(b"data: more\n\n", 3 * SCAN_PAUSE_MS) == []


def test_environment_values_are_trimmed_and_short_values_ignored() -> None:
    env = {"GATEWAY_TOKEN": "  test-credential-0123456789\n", "SHORT_KEY": " abc \n"}
    assert env_secrets(env) == [("GATEWAY_TOKEN", "test-credential-0123456789")]
    assert [f.kind for f in scan_text("x test-credential-0123456789 y", "t", env=env)] == [
        "value of environment variable GATEWAY_TOKEN"
    ]
    secrets = SecretSet()
    assert not secrets.add("short", b"1234567")
    assert secrets.add("long", b" 12345678 ")
    assert not secrets.add("again", b"12345678"), "a value is looked for once, under its first name"
    assert len(secrets) == 1


def test_an_escaped_key_in_the_header_extras_is_found(tmp_path: Path) -> None:
    key = FAKE_KEYS["Anthropic API key"]
    escaped = "".join(f"\\u{ord(c):04x}" for c in key[:10]) + key[10:]
    path = tmp_path / "extras.jsonl"
    text = dumps(make_cassette([b"data: 1\n\n"]))
    path.write_text(
        text.replace('"recorded_at":null', '"recorded_at":null,"note":"' + escaped + '"', 1), encoding="utf-8"
    )
    assert [f.kind for f in scan_path(path, env={})] == ["Anthropic API key"]


def _count_scanned(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record the length of every buffer the scan looks at."""
    sizes: list[int] = []
    real = secret_scan._hits  # pyright: ignore[reportPrivateUsage]

    def counted(data: bytes, secrets: SecretSet | None, *, unescape: bool = True) -> list[tuple[str, int, int]]:
        sizes.append(len(data))
        return real(data, secrets, unescape=unescape)

    monkeypatch.setattr(secret_scan, "_hits", counted)
    return sizes


def test_a_body_fed_byte_by_byte_is_scanned_in_linear_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """No window is rescanned per chunk: N one-byte chunks cost O(N) bytes of scanning, and an echo
    split over hundreds of them is still found, once, where it starts."""
    sizes = _count_scanned(monkeypatch)
    spelled = b"".join(b"\\u%04x" % c for c in SECRET)
    body = b'data: {"text": "hello"}\n\n' * 300 + b'data: "' + spelled + b'"\n\n' + b"data: bye\n\n" * 300
    scanner = BodyScanner("body", SecretSet([("the secret", SECRET)]))
    found = [f for i in range(len(body)) for f in scanner.feed(body[i : i + 1], 0.0)] + scanner.flush()
    assert [f.kind for f in found] == ["the secret (escaped)"]
    assert found[0].location == f"body, offset {body.index(spelled)}"
    window = scanner.secrets.window
    assert sum(sizes) <= 2 * len(body) + 2 * window, (sum(sizes), len(body))
    assert len(sizes) <= len(body) // window + 2


def test_a_slow_stream_is_scanned_chunk_by_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks that come a pause apart are each scanned at once (nothing is held back), at a cost of
    at most the window plus the chunk."""
    sizes = _count_scanned(monkeypatch)
    scanner = BodyScanner("body", SecretSet([("the secret", SECRET)]))
    for n in range(50):
        assert scanner.feed(b"data: tick\n\n", n * SCAN_PAUSE_MS) == []
        assert scanner.pending == 0
    assert len(sizes) == 50
    assert max(sizes) <= scanner.secrets.window + len(b"data: tick\n\n")
    # Faster than that, they wait for a window's worth (or the flush).
    assert scanner.feed(b"x", 49 * SCAN_PAUSE_MS + 1) == []
    assert scanner.pending == 1
    assert scanner.flush() == []
    assert scanner.pending == 0
