"""The streamed-arguments writer: any JSON object streamed as partial arguments (in document order,
strings cut anywhere) is written back as JSON text that parses to it, with a live view that matches
it; JSON paths parse as RFC 9535 normalized paths."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamfns.google.args import ArgumentsConflict, ArgumentsWriter, parse_json_path

pytestmark = pytest.mark.parallel

_keys = st.text(min_size=1, max_size=5)
_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**60), max_value=2**60),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
_values = st.recursive(
    _leaves,
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=3), st.dictionaries(_keys, inner, min_size=1, max_size=3)
    ),
    max_leaves=12,
)
_objects = st.dictionaries(_keys, _values, max_size=4)


def _path_text(path: tuple[str | int, ...]) -> str:
    out = ["$"]
    for segment in path:
        if isinstance(segment, int):
            out.append(f"[{segment}]")
        elif segment.isidentifier() and segment.isascii():
            out.append(f".{segment}")
        else:
            out.append("['" + segment.replace("\\", "\\\\").replace("'", "\\'") + "']")
    return "".join(out)


def partials_of(value: Any, cuts: list[int], path: tuple[str | int, ...] = ()) -> list[dict[str, Any]]:
    """The partial arguments that stream ``value`` in document order (strings cut into pieces)."""
    if isinstance(value, dict):
        members = cast("dict[str, Any]", value)
        return [p for key, item in members.items() for p in partials_of(item, cuts, (*path, key))]
    if isinstance(value, list):
        items = cast("list[Any]", value)
        return [p for index, item in enumerate(items) for p in partials_of(item, cuts, (*path, index))]
    where = _path_text(path)
    if isinstance(value, str):
        size = cuts.pop() if cuts else len(value) or 1
        pieces = [value[i : i + max(1, size)] for i in range(0, len(value), max(1, size))] or [""]
        out: list[dict[str, Any]] = [
            {"jsonPath": where, "stringValue": piece, "willContinue": True} for piece in pieces
        ]
        out.append({"jsonPath": where, "stringValue": ""})
        return out
    if isinstance(value, bool):
        return [{"jsonPath": where, "boolValue": value}]
    if value is None:
        return [{"jsonPath": where, "nullValue": None}]
    return [{"jsonPath": where, "numberValue": value}]


def _contains_empty_container(value: Any) -> bool:
    if isinstance(value, dict | list):
        items: list[Any] = (
            list(cast("dict[str, Any]", value).values()) if isinstance(value, dict) else cast("list[Any]", value)
        )
        return not items or any(_contains_empty_container(v) for v in items)
    return False


@settings(max_examples=300, deadline=None, database=None)
@given(value=_objects, cuts=st.lists(st.integers(min_value=1, max_value=5), max_size=20))
def test_any_object_streamed_as_partial_arguments_is_written_back_exactly(
    value: dict[str, Any], cuts: list[int]
) -> None:
    # Partial arguments carry leaves only, so an empty nested container cannot be streamed.
    if any(_contains_empty_container(v) for v in value.values()):
        return
    writer = ArgumentsWriter()
    fragments = [writer.open()]
    for partial in partials_of(value, list(cuts)):
        fragments.append(writer.feed(partial))
        json.dumps(writer.arguments)  # the live view is always plain JSON data
    fragments.append(writer.close())
    assert json.loads("".join(fragments)) == value
    assert writer.arguments == value


def test_the_live_view_shows_a_streaming_string_at_most_half_behind() -> None:
    writer = ArgumentsWriter()
    writer.open()
    text = ""
    for i in range(200):
        piece = f"{i:03d},"
        text += piece
        writer.feed({"jsonPath": "$.body", "stringValue": piece, "willContinue": True})
        shown = writer.arguments["body"]
        assert text.startswith(shown)
        assert len(shown) * 2 + 8 >= len(text)
    writer.feed({"jsonPath": "$.body", "stringValue": ""})
    assert writer.arguments == {"body": text}


def test_a_string_left_open_ends_when_another_path_begins_or_the_call_ends() -> None:
    writer = ArgumentsWriter()
    text = writer.open()
    text += writer.feed({"jsonPath": "$.a", "stringValue": "x", "willContinue": True})
    text += writer.feed({"jsonPath": "$.b", "numberValue": 2})
    text += writer.feed({"jsonPath": "$.c", "stringValue": "y", "willContinue": True})
    text += writer.close()
    assert json.loads(text) == {"a": "x", "b": 2, "c": "y"} == writer.arguments


def test_a_string_named_two_ways_is_one_string_and_a_piece_without_a_value_continues_it() -> None:
    writer = ArgumentsWriter()
    text = writer.open()
    text += writer.feed({"jsonPath": "$.a", "stringValue": "x", "willContinue": True})
    text += writer.feed({"jsonPath": "$['a']", "stringValue": "y", "willContinue": True})
    text += writer.feed({"jsonPath": "$.a", "willContinue": True})
    text += writer.feed({"jsonPath": "$.a"})
    text += writer.close()
    assert json.loads(text) == {"a": "xy"}


def test_control_characters_quotes_and_non_ascii_are_escaped_in_keys_and_values() -> None:
    writer = ArgumentsWriter()
    text = writer.open()
    text += writer.feed({"jsonPath": "$['k\"\\u0001']", "stringValue": 'a"\\\t\n\u0000é日', "willContinue": True})
    text += writer.feed({"jsonPath": "$['k\"\\u0001']", "stringValue": "\x1f"})
    text += writer.close()
    assert json.loads(text) == {'k"\x01': 'a"\\\t\n\u0000é日\x1f'}


def test_numbers_keep_their_type() -> None:
    writer = ArgumentsWriter()
    text = writer.open()
    for path, number in (("$.i", 3), ("$.f", 0.5), ("$.big", 2**64), ("$.tiny", 1e-300)):
        text += writer.feed({"jsonPath": path, "numberValue": number})
    text += writer.close()
    assert json.loads(text) == {"i": 3, "f": 0.5, "big": 2**64, "tiny": 1e-300}


@pytest.mark.parametrize(
    ("path", "segments"),
    [
        ("$", ()),
        ("$.a", ("a",)),
        ("$.operations[0].action", ("operations", 0, "action")),
        ("$['a b'].c", ("a b", "c")),
        ('$["x\\"y"][10]', ('x"y', 10)),
        ("$.naïve", ("naïve",)),
        ("$['\\ud83d\\ude00\\n\\'']", ("\U0001f600\n'",)),
        ("$[3][0]", (3, 0)),
    ],
)
def test_json_paths_parse_to_segments(path: str, segments: tuple[str | int, ...]) -> None:
    assert parse_json_path(path) == segments


@pytest.mark.parametrize("path", ["", "a", "$.", "$[01]", "$[-1]", "$..a", "$.a[*]", "$['x", "$[?(@.a)]", "$.a b"])
def test_paths_that_are_not_normalized_are_refused(path: str) -> None:
    with pytest.raises(ArgumentsConflict):
        parse_json_path(path)


def test_deep_and_hostile_paths_cost_linear_time_and_fail_closed() -> None:
    deep = "$" + ".a" * 20_000
    writer = ArgumentsWriter()
    writer.open()
    writer.feed({"jsonPath": deep, "numberValue": 1})  # placed: 20k nested objects, no recursion
    with pytest.raises(ArgumentsConflict):
        writer.feed({"jsonPath": "$" + ".a" * 10 + "[5]", "numberValue": 1})


def test_a_partial_argument_without_a_path_is_refused_even_when_no_string_is_open() -> None:
    writer = ArgumentsWriter()
    writer.open()
    with pytest.raises(ArgumentsConflict, match="no jsonPath"):
        writer.feed({"stringValue": "x", "numberValue": 1})
    with pytest.raises(ArgumentsConflict, match="no jsonPath"):
        writer.feed({"stringValue": "x", "willContinue": True, "other": 1})
