"""The mutation grammar (`cassettes.mutation_specs`): one spelling, parsed and written back, listed by `--help`."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cassettes import load, mutation_specs, mutations
from cassettes.cli import main, parse_op
from cassettes.errors import CassetteError
from cassettes.library import load as load_library
from cassettes.model import END_KINDS

TEXT = load_library("llma__text_haiku45")
BODY = TEXT.interactions[0].response.body


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("rechunk:1", "rechunk:1"),
        ("rechunk", "rechunk:1"),
        ("rechunk:random", "rechunk:random,seed=0,max=64"),
        ("rechunk:random, max=3 ,seed=4", "rechunk:random,seed=4,max=3"),
        ("rechunk:crlf", "rechunk:crlf"),
        ("rechunk:utf8", "rechunk:utf8"),
        ("truncate:bytes=100", "truncate:bytes=100,end=reset"),
        ("truncate:chunks=2,end=timeout", "truncate:chunks=2,end=timeout"),
        ("truncate:0.25", "truncate:at=25%,end=reset"),
        ("truncate:25%,end=eof", "truncate:at=25%,end=eof"),
        ("truncate:at=12.5%,end=eof", "truncate:at=12.5%,end=eof"),
        ("stall:chunk=3,seconds=30.0", "stall:chunk=3,seconds=30"),
        ("stall:seconds=0.25,chunk=1", "stall:chunk=1,seconds=0.25"),
        ("status:429", "status:429"),
        ("status:429,retry-after=1", "status:429"),
        ("status:429,retry-after=7", "status:429,retry-after=7"),
        ("status:429,retry-after=none", "status:429,retry-after=none"),
        ("status:500,retry-after=none", "status:500"),
        ("status:code=503,retry-after=0.2", "status:503,retry-after=0.2"),
        ("empty-body", "empty-body"),
        ("drop-terminal", "drop-terminal"),
        ("drop-terminal:api=openai-completions", "drop-terminal:api=openai-completions"),
        ("corrupt-json", "corrupt-json:0"),
        ("corrupt-json:-1", "corrupt-json:-1"),
        ("interaction:0", "interaction:0"),
        ("drop-terminal + truncate:bytes=900,end=eof", "drop-terminal+truncate:bytes=900,end=eof"),
    ],
)
def test_every_spelling_has_one_canonical_spec_that_reads_back(written: str, canonical: str) -> None:
    mutation = mutation_specs.parse(written)
    assert mutation.spec == canonical
    assert mutation_specs.parse(canonical) == mutation


_ENDS = st.sampled_from(END_KINDS)
_OPS = st.one_of(
    st.builds(mutation_specs.Rechunk, st.integers(1, 4096)),
    st.builds(mutation_specs.Rechunk, st.just("random"), seed=st.integers(0, 10**6), max_size=st.integers(1, 512)),
    st.sampled_from(
        [
            mutation_specs.Rechunk("split_crlf"),
            mutation_specs.Rechunk("split_utf8"),
            mutation_specs.EmptyBody(),
            mutation_specs.DropTerminal(),
        ]
    ),
    st.builds(mutation_specs.Truncate, bytes=st.integers(0, 10**7), end=_ENDS),
    st.builds(mutation_specs.Truncate, chunks=st.integers(0, 10**4), end=_ENDS),
    st.builds(mutation_specs.Truncate, at=st.floats(0, 1), end=_ENDS),
    st.builds(mutation_specs.Stall, st.integers(0, 10**4), st.floats(0, 10**5)),
    st.builds(
        mutation_specs.Status,
        st.integers(100, 599),
        retry_after=st.one_of(st.none(), st.just("auto"), st.from_regex(r"\A\d{1,4}(\.\d{1,3})?\Z")),
    ),
    st.builds(mutation_specs.CorruptJson, st.integers(-50, 50)),
    st.builds(mutation_specs.KeepInteraction, st.integers(-5, 5)),
    st.builds(mutation_specs.DropTerminal, st.sampled_from(["anthropic-messages", "openai-responses"])),
)


@settings(max_examples=100, deadline=None)
@given(st.lists(_OPS, min_size=1, max_size=4))
def test_any_mutation_is_written_in_a_spec_that_parses_back_to_it(chain: list[mutation_specs.Op]) -> None:
    mutation = mutation_specs.Mutation(tuple(chain))
    assert mutation_specs.parse(mutation.spec) == mutation


def test_fraction_cuts_cut_that_share_of_the_body() -> None:
    expected = mutations.truncate(TEXT, after_bytes=len(BODY) // 4, end="eof")
    for spelling in ("truncate:at=25%,end=eof", "truncate:0.25,end=eof", "truncate:25%,end=eof"):
        assert mutation_specs.parse(spelling)(TEXT) == expected
    assert mutation_specs.parse("truncate:at=100%,end=eof")(TEXT).interactions[0].response.body == BODY
    assert mutation_specs.parse("truncate:at=0%")(TEXT).interactions[0].response.body == b""


def test_each_op_applies_the_mutation_it_names() -> None:
    pairs = [
        ("rechunk:random,seed=3,max=9", mutations.rechunk(TEXT, "random", seed=3, max_size=9)),
        ("truncate:chunks=2,end=timeout", mutations.truncate(TEXT, after_chunks=2, end="timeout")),
        ("stall:chunk=2,seconds=1.5", mutations.stall(TEXT, 2, 1.5)),
        ("status:429,retry-after=0.2", mutations.status_override(TEXT, 429, retry_after="0.2")),
        ("status:500", mutations.status_override(TEXT, 500, retry_after=None)),
        ("empty-body", mutations.empty_body(TEXT)),
        ("corrupt-json:2", mutations.corrupt_json(TEXT, 2)),
        (
            "drop-terminal+truncate:bytes=700,end=eof",
            mutations.truncate(mutations.drop_terminal(TEXT), after_bytes=700, end="eof"),
        ),
    ]
    for spec, expected in pairs:
        assert mutation_specs.parse(spec)(TEXT) == expected, spec


def test_interaction_keeps_one_of_several() -> None:
    pair = mutation_specs.parse("interaction:0")(TEXT)
    twice = type(TEXT)(
        interactions=(*TEXT.interactions, *mutation_specs.parse("status:500")(TEXT).interactions), api=TEXT.api
    )
    assert mutation_specs.parse("interaction:1")(twice).interactions[0].response.status == 500
    assert mutation_specs.parse("interaction:-2")(twice) == type(TEXT)(interactions=pair.interactions, api=TEXT.api)
    with pytest.raises(CassetteError, match="interaction 2 does not exist"):
        mutation_specs.parse("interaction:2")(twice)


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("bogus", "unknown op 'bogus' (valid ops: rechunk, truncate, stall, status, empty-body"),
        ("truncate:bytes=x", "bytes must be an integer, not 'x' (syntax: truncate:bytes=N|chunks=N|at=P%"),
        ("truncate:100", "write bytes=100 or chunks=100"),
        ("truncate:bytes=1,chunks=2", "exactly one of bytes=N, chunks=N or at=P%"),
        ("truncate:at=150%", "a percentage from 0% to 100%"),
        ("truncate:bytes=1,end=closed-ish", "end must be one of"),
        ("rechunk:0", "rechunk size must be at least 1"),
        ("rechunk:crlf,seed=1", "seed= and max= apply to rechunk:random only"),
        ("stall:chunk=1", "give chunk=N and seconds=S"),
        ("status:429,retry-after=Wed", "retry-after must be a number of seconds or none"),
        ("status:99", "not an HTTP status"),
        ("empty-body:now", "unexpected argument(s) now"),
        ("corrupt-json:1,", "an empty argument"),
        ("drop-terminal+", "an empty op"),
    ],
)
def test_bad_specs_name_the_problem_and_the_syntax(spec: str, says: str) -> None:
    with pytest.raises(mutation_specs.OpSyntaxError) as caught:
        mutation_specs.parse(spec)
    assert says in str(caught.value)


def test_the_cli_lists_every_op_with_its_syntax_in_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["mutate", "--help"])
    out = capsys.readouterr().out
    for item in mutation_specs.OPS:
        assert item.syntax in out
    assert {item.name for item in mutation_specs.OPS} == set(mutation_specs.parse.__globals__["_PARSERS"])


def test_the_cli_accepts_exactly_the_grammar(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    joined, repeated = tmp_path / "joined.jsonl", tmp_path / "repeated.jsonl"
    spec = "drop-terminal+truncate:at=50%,end=eof"
    assert main(["mutate", "llma__text_haiku45", "--op", spec, "-o", str(joined)]) == 0
    argv = ["--op", "drop-terminal", "--op", "truncate:at=50%,end=eof"]
    assert main(["mutate", "llma__text_haiku45", *argv, "-o", str(repeated)]) == 0
    assert load(joined) == load(repeated) == mutation_specs.parse(spec)(TEXT)
    assert parse_op(spec) == mutation_specs.parse(spec)
    assert main(["mutate", "llma__text_haiku45", "--op", "drop-terminal+bogus", "-o", "-"]) == 2
    err = capsys.readouterr().err
    assert "unknown --op 'bogus' in 'drop-terminal+bogus'; valid ops: rechunk, truncate" in err
    assert main(["mutate", "llma__text_haiku45", "--op", "truncate:0.25", "-o", str(joined)]) == 0
