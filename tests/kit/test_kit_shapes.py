"""kit.shapes: a learned event layout reads a later event's holes off its bytes, and never reads a value
the event's full parse would not give.

The property that matters is soundness: whenever :meth:`EventShape.match` returns values, a strict parse
of the same bytes is the learned value with exactly those values in the holes. The fuzz below mutates
real event layouts byte by byte (in the fixed parts and in the holes, with escapes, digits, quotes and
whitespace) and checks that property on every mutation; the table tests pin what is refused outright.
"""

from __future__ import annotations

import copy
import gc
import json
import random
import re
from typing import Any

import jiter
import pytest

from streamfns.kit import shapes
from streamfns.kit.shapes import LAYOUTS_KEPT, MAX_SHAPE_BYTES, EventShape, HolePath, changed

pytestmark = pytest.mark.parallel

ANTHROPIC = b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"The "}}'
CHAT = (
    b'{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1782955817,"model":"gpt-4o-mini",'
    b'"choices":[{"index":0,"delta":{"content":"of "},"logprobs":null,"finish_reason":null}],'
    b'"usage":null,"obfuscation":"C63rXk"}'
)
GEMINI = (
    b'{"candidates": [{"content": {"parts": [{"text": "The stream "}],"role": "model"},"index": 0}],'
    b'"usageMetadata": {"promptTokenCount": 25,"candidatesTokenCount": 1,"totalTokenCount": 66},'
    b'"modelVersion": "gemini-2.5-flash"}'
)
RESPONSES = (
    b'{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,'
    b'"content_index":0,"delta":"The ","logprobs":[]}'
)
#: A Gemini text chunk's holes: the text, then the two running counts.
GEMINI_HOLES: list[HolePath] = [
    ("candidates", 0, "content", "parts", 0, "text"),
    ("usageMetadata", "candidatesTokenCount"),
    ("usageMetadata", "totalTokenCount"),
]
LAYOUTS: list[tuple[bytes, list[HolePath]]] = [
    (RESPONSES, [("delta",), ("sequence_number",)]),  # a hole before the piece (found from the start)
    (ANTHROPIC, [("delta", "text")]),
    (CHAT, [("choices", 0, "delta", "content"), ("obfuscation",)]),
    (GEMINI, GEMINI_HOLES),
]


def learned(data: bytes, holes: list[HolePath]) -> EventShape:
    shape = EventShape.learn(data, jiter.from_json(data), holes)
    assert shape is not None
    return shape


@pytest.mark.parametrize(("data", "holes"), LAYOUTS)
def test_learning_leaves_the_callers_value_as_it_was(data: bytes, holes: list[HolePath]) -> None:
    # The check of a learned layout writes sentinels into a copy of the value: every dict and list on
    # the way to a hole (nested ones too: Gemini's parts) must be the copy's own.
    value = jiter.from_json(data)
    before = copy.deepcopy(value)
    shape = EventShape.learn(data, value, holes)
    assert shape is not None
    assert value == before
    # Nor does it keep the value: a learned event left alive with its shape would be one more tree of
    # dicts and lists for the collector to walk per stream.
    assert not any(referrer is shape for referrer in gc.get_referrers(value))
    assert not hasattr(shape, "value")


def with_holes(value: Any, holes: list[HolePath], pieces: list[Any]) -> Any:
    out = copy.deepcopy(value)
    for path, piece in zip(holes, pieces, strict=True):
        target = out
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = piece
    return out


def parse(data: bytes) -> Any:
    try:
        return jiter.from_json(data)
    except ValueError:
        return ValueError


def test_a_text_delta_is_read_off_its_bytes_with_its_escapes() -> None:
    shape = learned(ANTHROPIC, [("delta", "text")])
    data = ANTHROPIC.replace(b'"The "', rb'"say \"hi\"\n\u00e9\ud83d\ude00 \\"')
    assert shape.match(data) == ['say "hi"\né😀 \\']
    assert shape.match(ANTHROPIC) == ["The "]


@pytest.mark.parametrize(
    "data",
    [
        ANTHROPIC.replace(b'"index":0', b'"index":1'),  # another block
        ANTHROPIC.replace(b'"text_delta"', b'"thinking_delta"'),  # another kind of delta
        ANTHROPIC.replace(b'"The "}}', b'"The ","extra":1}}'),  # a member more (closing the string early)
        ANTHROPIC.replace(b'"The "', b"17"),  # a number where the string was
        ANTHROPIC.replace(b'"The "', b"null"),
        ANTHROPIC.replace(b'"The "', b'{"a":"b"}'),
        ANTHROPIC.replace(b'"The "', b'"raw\x01control"'),  # invalid JSON: the full path decides
        ANTHROPIC.replace(b'"The "', b'"bad \\x escape"'),
        ANTHROPIC.replace(b'"The "', b'"\xff\xfe"'),  # not UTF-8
        ANTHROPIC.replace(b'"The "', b'"a" "b"'),
        ANTHROPIC.replace(b'"The "', b'"unterminated'),
        ANTHROPIC.replace(b":", b": ", 1),  # whitespace the learned bytes did not have
        ANTHROPIC[:-1],
        ANTHROPIC + b" ",
        b"",
    ],
)
def test_an_event_that_differs_outside_its_hole_is_no_match(data: bytes) -> None:
    assert learned(ANTHROPIC, [("delta", "text")]).match(data) is None


def test_the_values_come_back_in_the_order_the_holes_were_given() -> None:
    shape = learned(CHAT, [("obfuscation",), ("choices", 0, "delta", "content")])
    data = CHAT.replace(b'"of "', b'"x\\"},\\"logprobs"').replace(b'"C63rXk"', b'"abcdefgh"')
    assert shape.match(data) == ["abcdefgh", 'x"},"logprobs']


def test_integer_holes_take_plain_non_negative_integers_only() -> None:
    shape = learned(GEMINI, GEMINI_HOLES)
    assert shape.match(GEMINI.replace(b'"candidatesTokenCount": 1', b'"candidatesTokenCount": 1234')) == [
        "The stream ",
        1234,
        66,
    ]
    assert shape.match(GEMINI.replace(b": 66}", b": 0}")) == ["The stream ", 1, 0]
    for bad in (b"01", b"-1", b"1.5", b"1e3", b'"1"', b"", b"true"):
        assert shape.match(GEMINI.replace(b": 66}", b": " + bad + b"}")) is None, bad


@pytest.mark.parametrize(
    "spaced",
    [
        GEMINI.replace(b'"The stream "', b' "The stream "'),  # JSON whitespace around the piece
        GEMINI.replace(b'"The stream "', b'"The stream " '),
        GEMINI.replace(b'"The stream "', b'"The stream "\n'),
        GEMINI.replace(b'"The stream "', b'\r\n"The stream "'),
        RESPONSES.replace(b'"The "', b'"The "\t'),  # the piece of a shape with a hole before it
    ],
)
def test_a_hole_is_its_literal_alone_never_with_whitespace_around_it(spaced: bytes) -> None:
    # The whitespace parses the same, but it is another layout (a line break in it would end an SSE line).
    data, holes = (RESPONSES, LAYOUTS[0][1]) if spaced.startswith(b'{"type"') else (GEMINI, GEMINI_HOLES)
    shape = learned(data, holes)
    assert shape.match(data) is not None
    assert shape.match(spaced) is None
    assert shape.match(spaced) is None  # the same again, now the holes' places are known


@pytest.mark.parametrize(("before", "after"), [(b"data: ", b"\r\n\r\n"), (b"event: e\ndata: ", b"\n\n")])
def test_a_framed_shape_of_several_holes_reads_a_whole_read_as_the_shape_reads_its_data(
    before: bytes, after: bytes
) -> None:
    shape = learned(GEMINI, GEMINI_HOLES)
    framed = shape.framed(before, after)
    rng = random.Random(5)
    for _ in range(300):
        text = "".join(rng.choice(["a", " ", "\n", '"', "é", "\\"]) for _ in range(rng.randint(0, 8)))
        counts = (rng.choice([0, 7, 12345]), rng.choice([1, 99, 100000]))
        data = (
            GEMINI.replace(b'"The stream "', json.dumps(text).encode())
            .replace(b'"candidatesTokenCount": 1', b'"candidatesTokenCount": %d' % counts[0])
            .replace(b": 66}", b": %d}" % counts[1])
        )
        assert framed.match(before + data + after) == shape.match(data) == [text, *counts]
    # What the frame holds around the data is checked too, and nothing may lie between the two.
    assert framed.match(before + GEMINI + after[:-1]) is None
    assert framed.match(before + GEMINI + b"\n" + after) is None
    assert framed.match(before[:-1] + GEMINI + after) is None
    broken = GEMINI.replace(b'"candidatesTokenCount": 1', b'"candidatesTokenCount": 1\n')
    assert framed.match(before + broken + after) is None


@pytest.mark.parametrize(
    ("data", "holes"),
    [
        (b'{"a":"x","b":{"a":"x"}}', [("a",)]),  # the name holds the same value twice: which is the hole?
        (b'{"a":true}', [("a",)]),  # not a string or an integer
        (b'{"a":-3}', [("a",)]),
        (b'{"a":1.5}', [("a",)]),
        (b'{"a":{"b":"c"}}', [("a",)]),
        (b'{"a":["x"]}', [("a", 0)]),  # a hole must end in a member name
        (b'{"a":"x"}', [("b",)]),  # no such member
        (b'{"a":"x"}', []),  # no hole
        (b'{"a":"x","b":"y"}', [("a",), ("a",)]),  # two holes over one member
    ],
)
def test_a_layout_whose_holes_cannot_be_told_apart_is_not_learned(data: bytes, holes: list[HolePath]) -> None:
    assert EventShape.learn(data, jiter.from_json(data), holes) is None


def test_a_duplicate_key_is_read_as_the_full_parse_reads_it() -> None:
    data = b'{"a":"x","a":"y"}'
    shape = EventShape.learn(data, jiter.from_json(data), [("a",)])
    if shape is not None:  # learned at the member the parse keeps (the last), or not at all
        assert shape.match(b'{"a":"x","a":"z"}') == ["z"]
        assert shape.match(b'{"a":"q","a":"z"}') is None


def test_a_value_that_does_not_parse_as_given_is_not_learned() -> None:
    # The caller's value must be the parse of the bytes: a repaired value is refused by the check.
    assert EventShape.learn(b'{"a":"x\x01"}', {"a": "x\x01"}, [("a",)]) is None


def _mutations(data: bytes, rng: random.Random) -> bytes:
    alphabet = b'"\\{}[],: 0123456789abcnlu\n\x01\xc3\xa9'
    out = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        roll = rng.random()
        at = rng.randrange(len(out) + 1)
        if roll < 0.4 and out:
            out[min(at, len(out) - 1)] = rng.choice(alphabet)
        elif roll < 0.7:
            out[at:at] = bytes([rng.choice(alphabet)])
        elif out:
            del out[min(at, len(out) - 1)]
    return bytes(out)


def fuzzed_matches(shape: EventShape, data: bytes, seed: int) -> list[tuple[bytes, list[Any]]]:
    """Each of 3,000 mutations of ``data`` that ``shape`` matches, with what it read (some must: the
    mutations reach the holes' insides without changing the layout)."""
    rng = random.Random(seed)
    found = [(mutated, shape.match(mutated)) for mutated in (_mutations(data, rng) for _ in range(3000))]
    matched = [(mutated, pieces) for mutated, pieces in found if pieces is not None]
    assert matched
    return matched


@pytest.mark.parametrize(("data", "holes"), LAYOUTS)
def test_fuzz_a_match_is_always_what_the_full_parse_reads(data: bytes, holes: list[HolePath]) -> None:
    value = jiter.from_json(data)
    for mutated, pieces in fuzzed_matches(learned(data, holes), data, 20261202):
        assert parse(mutated) == with_holes(value, holes, pieces), mutated


def test_fuzz_new_hole_values_in_the_learned_layout_are_read() -> None:
    rng = random.Random(7)
    data = ANTHROPIC
    holes: list[HolePath] = [("delta", "text")]
    value = jiter.from_json(data)
    shape = learned(data, holes)
    for _ in range(500):
        piece = "".join(rng.choice(['"', "\\", "é", "😀", "\n", "a", "}", "\x00", "\u2028"]) for _ in range(6))
        for ascii_only in (True, False):
            encoded = json.dumps(piece, ensure_ascii=ascii_only).encode("utf-8")
            mutated = data.replace(b'"The "', encoded)
            assert shape.match(mutated) == [piece]
            assert parse(mutated) == with_holes(value, holes, [piece])


VERTEX_ARGUMENT = (
    b'{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"partialArgs":[{"jsonPath":"$.edits[0].text",'
    b'"stringValue":"def ","willContinue":true}],"willContinue":true}}]}}],"usageMetadata":{"trafficType":"ON_DEMAND"}}'
)
ARGUMENT_HOLES: list[HolePath] = [
    ("candidates", 0, "content", "parts", 0, "functionCall", "partialArgs", 0, "stringValue"),
    ("candidates", 0, "content", "parts", 0, "functionCall", "partialArgs", 0, "jsonPath"),
]


def test_a_filled_hole_is_fixed_bytes_and_the_other_holes_are_read_as_before() -> None:
    general = learned(VERTEX_ARGUMENT, ARGUMENT_HOLES)
    filled = general.filled(1, b'"$.edits[0].text"')
    assert filled is not None
    assert filled.one_string, "one string hole left: read with slices and a parse, not a pattern"
    other_piece = VERTEX_ARGUMENT.replace(b'"def "', rb'"x\"y\n"')
    assert filled.match(other_piece) == ['x"y\n']
    assert general.match(other_piece) == ['x"y\n', "$.edits[0].text"]
    # Another path, or the same path spelled otherwise, is no match of the filled shape.
    for other in (b'"$.edits[1].text"', rb'"$.edits[0].t\u0065xt"', b'"$.edits[0].text "'):
        data = VERTEX_ARGUMENT.replace(b'"$.edits[0].text"', other)
        assert filled.match(data) is None
        assert general.match(data) is not None


def test_fuzz_a_filled_shape_matches_what_its_general_shape_matches_with_that_literal() -> None:
    # Soundness of filled: every match is a match of the general shape whose filled hole holds the
    # literal, so the full parse reads the learned value with the pieces and that path.
    value = jiter.from_json(VERTEX_ARGUMENT)
    general = learned(VERTEX_ARGUMENT, ARGUMENT_HOLES)
    filled = general.filled(1, b'"$.edits[0].text"')
    assert filled is not None
    for mutated, pieces in fuzzed_matches(filled, VERTEX_ARGUMENT, 20261206):
        assert general.match(mutated) == [*pieces, "$.edits[0].text"], mutated
        assert parse(mutated) == with_holes(value, ARGUMENT_HOLES, [*pieces, "$.edits[0].text"]), mutated


def test_filling_a_hole_of_several_keeps_the_others_in_the_callers_order() -> None:
    general = learned(GEMINI, GEMINI_HOLES)
    filled = general.filled(1, b"1")
    assert filled is not None
    assert not filled.one_string
    data = GEMINI.replace(b'"The stream "', b'"x"').replace(b'"totalTokenCount": 66', b'"totalTokenCount": 70')
    assert filled.match(data) == ["x", 70]
    assert filled.match(data.replace(b'"candidatesTokenCount": 1', b'"candidatesTokenCount": 2')) is None


@pytest.mark.parametrize(
    ("slot", "literal"),
    [
        (0, b'"$.edits[0].text"'),  # the piece stays a hole
        (2, b'"$.edits[0].text"'),  # no such hole
        (-1, b'"$.edits[0].text"'),
        (1, b'"$.edits[0].text" '),  # not the literal alone
        (1, b'"unterminated'),
        (1, b'"bad \\x escape"'),  # an escape JSON does not have
        (1, b'"\xff"'),  # not UTF-8
        (1, b'"a" "b"'),
        (1, b"17"),  # a number where a string hole is
        (1, b""),
    ],
)
def test_a_hole_is_filled_only_with_one_literal_of_its_kind(slot: int, literal: bytes) -> None:
    assert learned(VERTEX_ARGUMENT, ARGUMENT_HOLES).filled(slot, literal) is None


@pytest.mark.parametrize("literal", [b'"1"', b"01", b"-1", b"1.0", b" 1", b""])
def test_an_integer_hole_is_filled_only_with_plain_digits(literal: bytes) -> None:
    holes: list[HolePath] = [("delta",), ("sequence_number",)]
    assert learned(RESPONSES, holes).filled(1, literal) is None
    assert learned(RESPONSES, holes).filled(1, b"12") is not None


def test_changed_names_the_members_that_moved() -> None:
    before = jiter.from_json(CHAT)
    after = jiter.from_json(CHAT.replace(b"C63rXk", b"Q"))
    paths: list[HolePath] = [("obfuscation",), ("model",), ("choices", 0, "delta", "content")]
    assert changed(before, after, paths) == [("obfuscation",)]
    assert changed(None, after, paths) == []


def test_a_large_event_is_not_learned() -> None:
    # Learning costs some 80 parses of the event: a hostile server's huge events stay on the full path.
    text = json.dumps("x" * (MAX_SHAPE_BYTES - 80)).encode()
    small = ANTHROPIC.replace(b'"The "', text)
    assert len(small) <= MAX_SHAPE_BYTES
    assert EventShape.learn(small, jiter.from_json(small), [("delta", "text")]) is not None
    large = ANTHROPIC.replace(b'"The "', json.dumps("x" * MAX_SHAPE_BYTES).encode())
    assert EventShape.learn(large, jiter.from_json(large), [("delta", "text")]) is None


# -- layouts remembered across streams ----------------------------------------------------------------


@pytest.fixture
def searches(monkeypatch: pytest.MonkeyPatch) -> list[HolePath]:
    """A fresh table of remembered layouts, and the paths learning searched for (by name) since."""
    monkeypatch.setattr(shapes, "_layouts", {})
    searched: list[HolePath] = []
    locate = shapes._locate  # pyright: ignore[reportPrivateUsage]

    def counting(data: bytes, value: Any, path: HolePath) -> tuple[int, int, type] | None:
        searched.append(path)
        return locate(data, value, path)

    monkeypatch.setattr(shapes, "_locate", counting)
    return searched


def remembered() -> dict[tuple[HolePath, ...], Any]:
    return shapes._layouts  # pyright: ignore[reportPrivateUsage]


@pytest.mark.parametrize(("data", "holes"), LAYOUTS)
def test_a_layout_learned_once_is_taken_again_without_a_search(
    data: bytes, holes: list[HolePath], searches: list[HolePath]
) -> None:
    learned(data, holes)
    assert searches == holes
    # Another stream's first event of that layout: other hole values, the same bytes around them.
    rng = random.Random(5)
    for _ in range(200):
        mutated = _mutations(data, rng)
        pieces = learned(data, holes).match(mutated)
        if pieces is None or parse(mutated) is ValueError:
            continue
        value = jiter.from_json(mutated)
        del searches[:]
        shape = EventShape.learn(mutated, value, holes)
        assert shape is not None
        assert searches == [], "a known layout is not searched for again"
        assert shape.hits == 0
        # It reads later events exactly as a shape learned from this event reads them.
        head, kinds, middles, tail, order = _layout_of(shape)
        fresh = EventShape(head, kinds, middles, tail, order=order)
        for _ in range(20):
            later = _mutations(mutated, rng)
            got = shape.match(later)
            assert got == fresh.match(later)
            if got is not None:
                assert parse(later) == with_holes(value, holes, got), later


def _layout_of(shape: EventShape) -> tuple[bytes, tuple[type, ...], tuple[bytes, ...], bytes, list[int]]:
    slots = [slot for _, slot in shape._strings_slots]  # pyright: ignore[reportPrivateUsage]
    return shape._head, shape._kinds, shape._middles, shape._tail, slots  # pyright: ignore[reportPrivateUsage]


def test_an_event_of_another_layout_is_searched_for(searches: list[HolePath]) -> None:
    holes: list[HolePath] = [("delta", "text")]
    learned(ANTHROPIC, holes)
    other = ANTHROPIC.replace(b'"index":0', b'"index":1')
    del searches[:]
    shape = learned(other, holes)
    assert searches == holes
    assert shape.match(ANTHROPIC) is None
    assert shape.match(other) == ["The "]
    # Both are remembered now, the newest first.
    heads = [layout[0] for layout in remembered()[tuple(holes)]]
    assert heads == [other[: other.index(b'"The "')], ANTHROPIC[: ANTHROPIC.index(b'"The "')]]


_DELTA_X = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}}


@pytest.mark.parametrize(
    ("data", "value"),
    [
        # The same bytes around a hole whose literal is not one strict string.
        (ANTHROPIC.replace(b'"The "', b'"x\x01"'), {**_DELTA_X, "delta": {"type": "text_delta", "text": "x\x01"}}),
        (ANTHROPIC.replace(b'"The "', b'"x\\"'), {**_DELTA_X, "delta": {"type": "text_delta", "text": "x\\"}}),
        # JSON whitespace after the literal: another layout.
        (ANTHROPIC.replace(b'"The "', b'"x" '), _DELTA_X),
        # A value that is not the parse of the bytes, in the hole.
        (ANTHROPIC.replace(b'"The "', b'"z"'), _DELTA_X),
    ],
)
def test_a_known_layout_decides_an_event_as_a_learn_with_nothing_known_would(
    data: bytes, value: Any, searches: list[HolePath]
) -> None:
    holes: list[HolePath] = [("delta", "text")]
    learned(ANTHROPIC, holes)
    known = EventShape.learn(data, value, holes)
    remembered().clear()
    fresh = EventShape.learn(data, value, holes)
    assert (known is None) == (fresh is None)
    if known is not None and fresh is not None:
        assert _layout_of(known) == _layout_of(fresh)


def test_the_table_of_layouts_stays_small_whatever_a_server_sends(searches: list[HolePath]) -> None:
    holes: list[HolePath] = [("delta", "text")]
    for index in range(3 * LAYOUTS_KEPT):
        data = ANTHROPIC.replace(b'"index":0', b'"index":%d' % index)
        learned(data, holes)
    kept = remembered()[tuple(holes)]
    assert len(kept) == LAYOUTS_KEPT
    assert kept[0][0].endswith(b'"index":%d,"delta":{"type":"text_delta","text":' % (3 * LAYOUTS_KEPT - 1))
    for n in range(100):  # as many sets of holes as a decoder could be led to name
        data = b'{"m%d":"x"}' % n
        learned(data, [(f"m{n}",)])
    assert len(remembered()) <= 32
    assert (("m99",),) in remembered()


def test_paths_that_cannot_be_remembered_are_still_learned(searches: list[HolePath]) -> None:
    holes: Any = [["delta", "text"]]  # a third party's lists, not tuples
    shape = EventShape.learn(ANTHROPIC, jiter.from_json(ANTHROPIC), holes)
    assert shape is not None
    assert shape.match(ANTHROPIC.replace(b"The ", b"x")) == ["x"]
    assert remembered() == {}


# The compiled reading of a repeating layout (shapes._reader_of): a second implementation of match,
# checked against the search it replaces on the same inputs.

SEVERAL = [(data, holes) for data, holes in LAYOUTS if len(holes) > 1] + [
    (b'{"n":12,"k":"x"}', [("n",)]),  # one integer hole
    (b'{"a":"x","n":3,"b":"y","m":4}', [("b",), ("n",), ("a",), ("m",)]),  # four, in another order
]


@pytest.fixture
def readers(monkeypatch: pytest.MonkeyPatch) -> dict[Any, Any]:
    """A fresh table of compiled readings (none made by an earlier test)."""
    table: dict[Any, Any] = {}
    monkeypatch.setattr(shapes, "_readers", table)
    return table


def searching_and_compiled(data: bytes, holes: list[HolePath]) -> tuple[EventShape, EventShape]:
    """Two shapes of one layout: one that always searches (its reading never compiled), one that reads
    with the compiled pattern."""
    searching = learned(data, holes)
    searching.hits = shapes.READER_AFTER_HITS + 1  # past the count that compiles (it is checked once)
    compiled = learned(data, holes)
    compiled._reader = shapes._reader_of(compiled._layout)  # pyright: ignore[reportPrivateUsage]
    assert searching._reader is None  # pyright: ignore[reportPrivateUsage]
    return searching, compiled


def escaped_texts(rng: random.Random) -> list[str]:
    characters = ['"', "\\", "é", "😀", "\n", "a", "}", "\x00", "\u2028", "/", "\\u0041", " "]
    return ["".join(rng.choice(characters) for _ in range(rng.randint(0, 12))) for _ in range(200)]


@pytest.mark.parametrize(("data", "holes"), SEVERAL)
def test_fuzz_the_compiled_reading_matches_what_the_search_matches(
    data: bytes, holes: list[HolePath], readers: dict[Any, Any]
) -> None:
    searching, compiled = searching_and_compiled(data, holes)
    value = jiter.from_json(data)
    rng = random.Random(20261206)
    inputs = [_mutations(data, rng) for _ in range(3000)]
    # New values in every string hole (escapes, non-ASCII, both spellings) and every integer hole.
    literals = [json.dumps(_at(value, path)).encode() for path in holes]
    for text in escaped_texts(rng):
        replaced = data
        for path, literal in zip(holes, literals, strict=True):
            if isinstance(_at(value, path), str):
                new = json.dumps(text, ensure_ascii=rng.random() < 0.5).encode("utf-8")
            else:
                new = str(rng.choice([0, 1, 9, 10, 2**70])).encode()
            replaced = replaced.replace(literal, new, 1)
        inputs.append(replaced)
    # Literals the JSON grammar refuses or reads otherwise, at every hole.
    refused = [
        b'"\\x"',
        b'"\xff"',
        b'"a\x01"',
        b'"\\ud800x"',
        b'"a"  ',
        b' "a"',
        b"01",
        b"-1",
        b"1.0",
        b"1e3",
        b"",
        b'"',
    ]
    inputs += [data.replace(literal, bad, 1) for literal in literals for bad in refused]
    matched = 0
    for given in inputs:
        expected = searching.match(given)
        assert compiled.match(given) == expected, given
        if expected is not None:
            matched += 1
            assert parse(given) == with_holes(value, holes, expected), given
    assert 0 < matched < len(inputs)
    assert compiled.hits == searching.hits - shapes.READER_AFTER_HITS - 1 == matched


def test_a_string_hole_reads_as_jiter_reads_it_or_both_refuse() -> None:
    # Only literals the compiled pattern lets through reach _string_value: quoted, no bare quote,
    # backslash or control character inside. Without a backslash it decodes the bytes itself.
    string_group = re.compile(shapes._STRING_GROUP)  # pyright: ignore[reportPrivateUsage]
    literals = [
        b'""',
        b'"plain ascii"',
        b'"caf\xc3\xa9 \xe2\x80\xa8 \xf0\x9f\x98\x80"',  # two-, three- and four-byte UTF-8
        b'"\x7f \xef\xbf\xbe"',  # DEL and U+FFFE: JSON takes both
        b'"\xff"',  # not UTF-8
        b'"\xc0\xaf"',  # an overlong encoding of "/"
        b'"\xed\xa0\x80"',  # a surrogate, encoded raw
        b'"\xf4\x90\x80\x80"',  # past U+10FFFF
        b'"\xc3"',  # cut inside a character
        b'"tab\\t, quote\\", slash\\/ and \\u00e9"',
        b'"\\ud83d\\ude00"',  # a surrogate pair, escaped
        b'"\\ud800x"',  # a lone surrogate, escaped
        b'"\\x"',  # not an escape
    ]
    for literal in literals:
        assert string_group.fullmatch(literal), literal
        try:
            expected: object = jiter.from_json(literal)
        except ValueError:
            expected = ValueError
        try:
            got: object = shapes._string_value(literal)  # pyright: ignore[reportPrivateUsage]
        except ValueError:
            got = ValueError
        assert got == expected, literal
        assert got is ValueError or type(got) is str


def _at(value: Any, path: HolePath) -> Any:
    for step in path:
        value = value[step]
    return value


def test_a_layout_that_repeats_is_compiled_once_for_every_stream(readers: dict[Any, Any]) -> None:
    data, holes = LAYOUTS[-1]  # Gemini's three holes
    shape = learned(data, holes)
    for count in range(1, shapes.READER_AFTER_HITS):
        assert shape.match(data) is not None
        assert readers == {}, f"compiled after {count} events"
    assert shape.match(data) is not None
    assert list(readers) == [shape._layout]  # pyright: ignore[reportPrivateUsage]
    reading = readers[shape._layout]  # pyright: ignore[reportPrivateUsage]
    # The next stream's shape of that layout reads with it from its first event; the framed shape of
    # a whole read is a layout of its own.
    assert learned(data, holes)._reader is reading  # pyright: ignore[reportPrivateUsage]
    assert shape.framed(b"data: ", b"\n\n")._reader is None  # pyright: ignore[reportPrivateUsage]


def test_a_single_string_hole_keeps_its_own_read(readers: dict[Any, Any]) -> None:
    shape = learned(ANTHROPIC, [("delta", "text")])
    for _ in range(3 * shapes.READER_AFTER_HITS):
        assert shape.match(ANTHROPIC) == ["The "]
    assert readers == {}  # three slices and a parse cost less than a pattern


def test_the_table_of_compiled_layouts_stays_small_whatever_a_server_sends(readers: dict[Any, Any]) -> None:
    for index in range(100):
        data = b'{"i":%d,"t":"x","n":1}' % index
        shape = learned(data, [("t",), ("n",)])
        for _ in range(shapes.READER_AFTER_HITS):
            assert shape.match(data) == ["x", 1]
        assert shape._reader is not None  # pyright: ignore[reportPrivateUsage]
    assert len(readers) == shapes._READERS_KEPT  # pyright: ignore[reportPrivateUsage]


def test_a_long_escaped_text_is_read_whole(readers: dict[Any, Any]) -> None:
    data, holes = LAYOUTS[-1]
    searching, compiled = searching_and_compiled(data, holes)
    for text in ['\\"' * 50_000, "é" * 100_000, "a" * 200_000 + "\\"]:
        given = data.replace(b'"The stream "', json.dumps(text, ensure_ascii=False).encode("utf-8"))
        assert compiled.match(given) == searching.match(given) == [text, 1, 66]
    unclosed = data.replace(b'"The stream "', b'"' + b"\\\\" * 50_000 + b'\\"')
    assert compiled.match(unclosed) is searching.match(unclosed) is None


def test_what_shapes_derive_from_their_layouts_is_kept_for_a_bounded_number(monkeypatch: pytest.MonkeyPatch) -> None:
    table: dict[Any, Any] = {}
    monkeypatch.setattr(shapes, "_derived", table)
    first = learned(ANTHROPIC, [("delta", "text")])
    kept = dict(table)
    # Another stream's shape of that layout reads with the same fields, and reads as the first does.
    again = learned(ANTHROPIC, [("delta", "text")])
    assert table == kept
    assert again._lefts is first._lefts  # pyright: ignore[reportPrivateUsage]
    assert again._strings_slots is first._strings_slots  # pyright: ignore[reportPrivateUsage]
    assert again.match(ANTHROPIC.replace(b"The ", b"x")) == first.match(ANTHROPIC.replace(b"The ", b"x")) == ["x"]
    for index in range(200):  # a server that changes its layout every event
        data = b'{"i":%d,"t":"x","n":1}' % index
        assert learned(data, [("t",), ("n",)]).match(data) == ["x", 1]
    assert len(table) == shapes._DERIVED_KEPT  # pyright: ignore[reportPrivateUsage]


def test_a_layout_of_large_fixed_bytes_is_never_compiled(readers: dict[Any, Any]) -> None:
    # Compiling costs about 2 ms a kilobyte: a server whose large events change layout every 32 events
    # must not make each change cost that. Such a layout keeps the search, which reads as well.
    padding = "p" * shapes.READER_MAX_BYTES
    data = json.dumps({"t": "x", "n": 1, "pad": padding}, separators=(",", ":")).encode()
    shape = learned(data, [("t",), ("n",)])
    for count in range(3 * shapes.READER_AFTER_HITS):
        assert shape.match(data.replace(b'"t":"x"', b'"t":"%d"' % count)) == [str(count), 1]
    assert readers == {}
    small = learned(data.replace(padding.encode(), b"p"), [("t",), ("n",)])
    for _ in range(shapes.READER_AFTER_HITS):
        small.match(data.replace(padding.encode(), b"p"))
    assert len(readers) == 1  # the same layout with a short padding is
