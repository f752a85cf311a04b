"""The kit's pure helpers: payload accessors, key rules and redaction, typed compat flags."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from typing import Any, Literal, cast

import pytest

from streamfns.kit import (
    ApiKey,
    CompatError,
    StreamFailure,
    array,
    int_or_none,
    load_event,
    load_json,
    obj,
    parse_compat,
    redact,
    str_or_none,
    text,
)
from streamfns.kit.keys import credentials_in, secret_forms


def test_accessors_return_the_expected_type_or_an_empty_value() -> None:
    assert obj({"a": 1}) == {"a": 1}
    assert obj([1]) == {} and obj(None) == {}  # noqa: PT018
    assert array([1]) == [1]
    assert array({"a": 1}) == []
    assert int_or_none(3) == 3
    assert int_or_none(True) is None
    assert int_or_none(3.0) is None
    assert str_or_none("x") == "x"
    assert str_or_none(1) is None
    assert text(None) == ""
    assert text("y") == "y"


def test_load_event_repairs_control_characters_and_refuses_the_rest() -> None:
    assert load_event(b'{"t": "a\tb"}', "V") == {"t": "a\tb"}
    with pytest.raises(StreamFailure) as caught:
        load_event(b'{"t": "a', "V")
    assert caught.value.info.kind == "protocol"
    assert "malformed JSON" in caught.value.message
    with pytest.raises(StreamFailure, match="non-object"):
        load_event(b"[1, 2]", "V")


def test_load_json_returns_any_value_repaired_and_refuses_what_is_not_json() -> None:
    assert load_json(b"null", "V") is None
    assert load_json(b"[1, 2]", "V") == [1, 2]
    assert load_json(b'"a\tb"', "V") == "a\tb"
    assert load_json(b'{"t": "a\x01b"}', "V") == {"t": "a\x01b"}
    with pytest.raises(StreamFailure) as caught:
        load_json(b"{", "V")
    assert caught.value.info.kind == "protocol"
    assert "V sent malformed JSON" in caught.value.message


def test_key_rules_build_their_header() -> None:
    assert ApiKey().headers("k") == {"authorization": "Bearer k"}
    assert ApiKey(header="X-Api-Key", scheme=None).headers("k") == {"x-api-key": "k"}
    assert ApiKey().headers(None) == {}
    assert credentials_in({"Authorization": "Bearer tok-123456789", "x-other": "v"}) == [
        "Bearer tok-123456789",
        "tok-123456789",
    ]


def test_every_spelling_of_a_secret_is_redacted_and_short_strings_are_left_alone() -> None:
    secret = "AbC+/def-0123456789"
    for form in secret_forms(secret):
        assert "0123" not in redact(f"x {form} y", [secret]).replace("[redacted]", ""), form
    assert redact("the word test stays", ["test"]) == "the word test stays"
    assert secret_forms("short") == set()


def test_redaction_keeps_the_rest_of_the_text_as_it_was() -> None:
    secret = "sk-proj-ABCdef1234567890XYZ"
    text = f"bad key: {secret.upper()} \ud800 héllo ✓ " * 3
    assert redact(text, [secret]) == "bad key: [redacted] \ud800 héllo ✓ " * 3
    many = " ".join([secret.upper()] * 2000)
    assert redact(many, [secret]) == " ".join(["[redacted]"] * 2000)


def test_redaction_catches_a_key_escaped_only_in_part() -> None:
    secret = "sk-proj-abcdefghij"
    assert redact('{"key": "sk\\u002dproj-abcdefghij"}', [secret]) == '{"key": "[redacted]"}'
    assert redact("key=sk%2Dproj-abcdefghij&x=1", [secret]) == "key=[redacted]&x=1"


@dataclass(frozen=True, slots=True, kw_only=True)
class Flags:
    strict: bool = False
    role: Literal["system", "developer"] = "system"
    fields: tuple[str, ...] = ("a",)
    budget: int | None = None
    ratio: float = 1.0


def test_parse_compat_builds_the_dataclass() -> None:
    flags = parse_compat(Flags, {"strict": True, "role": "developer", "fields": ["x", "y"], "budget": 5, "ratio": 2})
    assert flags == Flags(strict=True, role="developer", fields=("x", "y"), budget=5, ratio=2)
    assert parse_compat(Flags, None) == Flags()
    base = Flags(strict=True)
    assert parse_compat(Flags, {"budget": 1}, defaults=base) == Flags(strict=True, budget=1)
    assert parse_compat(Flags, {}, defaults=base) == base


def test_no_flags_give_the_defaults_shared_only_when_nobody_can_change_them() -> None:
    # Frozen: every model without flags gets the one instance (a call's set-up spared).
    assert parse_compat(Flags, None) is parse_compat(Flags, {})
    base = Flags(strict=True)
    assert parse_compat(Flags, {}, defaults=base) is base

    @dataclass
    class Unfrozen:
        strict: bool = False

    first, second = parse_compat(Unfrozen, None), parse_compat(Unfrozen, {})
    assert first == second == Unfrozen()
    assert first is not second
    mine = Unfrozen(strict=True)
    copied = parse_compat(Unfrozen, None, defaults=mine)
    assert copied == mine
    assert copied is not mine
    with pytest.raises(CompatError, match="must be a mapping"):
        parse_compat(Flags, cast("Any", []))


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"strcit": True, "rol": "x"}, "unknown Model.compat keys 'rol', 'strcit'"),
        ({"strict": "yes"}, "Model.compat['strict'] must be bool"),
        ({"role": "user"}, "one of 'system', 'developer'"),
        ({"fields": ["x", 1]}, "Model.compat['fields']"),
        ({"budget": True}, "Model.compat['budget'] must be int or NoneType"),
    ],
)
def test_parse_compat_reports_what_is_wrong(raw: dict[str, object], message: str) -> None:
    with pytest.raises(CompatError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_compat(Flags, raw)


def test_a_pure_decoder_and_the_kit_import_no_httpx() -> None:
    code = "import sys, streamfns.kit, streamfns.anthropic.decode, streamfns.anthropic; print('httpx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
