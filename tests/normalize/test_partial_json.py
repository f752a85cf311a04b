"""The JSON repair: linear, resumable across fragments, and the same answer as the rule it implements."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from normalize import parse_arguments, repair_json
from normalize.partial_json import JsonRepairer

pytestmark = pytest.mark.parallel

_VALID = frozenset('"\\/bfnrt')
_HEX = frozenset("0123456789abcdefABCDEF")
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


def _reference(text: str) -> str:
    """The rule, one character at a time: inside strings escape raw control characters and double a
    backslash that starts no valid escape; outside strings change nothing."""
    out: list[str] = []
    in_string = False
    i = 0
    while i < len(text):
        ch = text[i]
        if not in_string:
            out.append(ch)
            in_string = ch == '"'
        elif ch == '"':
            out.append(ch)
            in_string = False
        elif ch == "\\":
            nxt = text[i + 1 : i + 2]
            if nxt == "u" and len(text[i + 2 : i + 6]) == 4 and all(c in _HEX for c in text[i + 2 : i + 6]):
                out.append(text[i : i + 6])
                i += 6
                continue
            if nxt and nxt in _VALID:
                out.append(ch + nxt)
                i += 2
                continue
            out.append("\\\\")
        elif ch < " ":
            out.append(_ESCAPES.get(ch, f"\\u{ord(ch):04x}"))
        else:
            out.append(ch)
        i += 1
    return "".join(out)


_JSONISH = st.text(alphabet=st.sampled_from(list('{}[]:,"\\u0aF9 \t\n\x01x\\"')), max_size=60)


@settings(max_examples=400, deadline=None)
@given(_JSONISH, st.lists(st.integers(min_value=0, max_value=60), max_size=6))
def test_the_repair_matches_the_rule_however_the_text_is_split(text: str, cuts: list[int]) -> None:
    assert repair_json(text) == _reference(text)
    repairer = JsonRepairer()
    bounds = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *bounds], [*bounds, len(text)], strict=True)]
    assert "".join(repairer.feed(piece) for piece in pieces) + repairer.finish() == _reference(text)


def test_valid_json_passes_through_unchanged() -> None:
    text = '{"a": "b\\n\\u00e9\\"", "c": [1, 2.5, null], "d": {"e": "\\\\"}}'
    assert repair_json(text) == text


def test_what_the_repair_fixes() -> None:
    assert parse_arguments('{"path": "A\\H", "text": "col1\tcol2"}') == {"path": "A\\H", "text": "col1\tcol2"}
    assert repair_json('{"a": "\\u12') == '{"a": "\\\\u12'
    assert repair_json('{"a": "x\\') == '{"a": "x\\\\'
