"""The secret scan: known key shapes, credential-looking environment values, no secret in messages.

Every fake key is assembled at runtime: a key-shaped literal in a committed file is rejected.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cassettes import SecretFound, save, scan_cassette, scan_text
from cassettes.secret_scan import BodyScanner, env_secrets
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
    secret = FAKE_KEYS["Anthropic API key"]
    scanner = BodyScanner("body", env={})
    assert scanner.feed(b"data: " + secret[:10].encode()) == []
    found = scanner.feed(secret[10:].encode() + b"\n\n")
    assert [f.kind for f in found] == ["Anthropic API key"]
    assert found[0].location == "body, offset 6"
    assert scanner.feed(b"data: more\n\n") == []


def test_a_key_hidden_in_a_base64_chunk_is_found() -> None:
    secret = FAKE_KEYS["Groq API key"].encode()
    cassette = make_cassette([b"\xff" + secret])  # not UTF-8, so the file stores it as base64
    findings = scan_cassette(cassette, env={})
    assert [f.kind for f in findings] == ["Groq API key"]
    assert "interaction 0 response body" in findings[0].location


def test_save_refuses_and_writes_nothing(tmp_path: Path) -> None:
    cassette = make_cassette([b"data: " + FAKE_KEYS["Google API key"].encode() + b"\n\n"])
    target = tmp_path / "leaky.jsonl"
    with pytest.raises(SecretFound, match="Google API key at cassette line 4"):
        save(cassette, target)
    assert not target.exists()
    save(make_cassette([b"data: clean\n\n"]), target)
    assert target.exists()
