"""An adapter's ``streamfns.kit.Adapter`` declaration is a conformance target as it stands: no adapter
package needs a conformance module (which would import the harness from below it)."""

from __future__ import annotations

from pathlib import Path

import pytest

import conformance
from cassettes import library
from conformance import Capabilities, Target, load_target
from conformance.cli import main
from conformance.pytest_support import StreamFnConformance
from conformance.targets import builtin_targets
from examples.ndjson_chat import ADAPTER as NDJSON
from examples.ndjson_chat.adapter import WIRE as NDJSON_WIRE
from streamfns.anthropic import ADAPTER as ANTHROPIC
from streamfns.anthropic import WIRE as ANTHROPIC_WIRE
from streamfns.anthropic import stream_anthropic
from streamfns.kit import Adapter

ROOT = Path(__file__).resolve().parents[2]


def test_a_declaration_gives_its_stream_fn_every_feature_of_its_api_its_profile_and_its_exported_name() -> None:
    assert Target.from_adapter(ANTHROPIC) == Target(
        stream_anthropic,
        Capabilities.every_feature("anthropic-messages"),
        name="streamfns.anthropic.stream_anthropic",
        cassettes=None,  # none declared: the bundled recordings its profile names
        profile=ANTHROPIC_WIRE.profile,
    )


def test_declared_cassettes_are_files_or_directories_of_the_package_else_bundled_recordings() -> None:
    assert Target.from_adapter(NDJSON).cassettes == (ROOT / "examples" / "ndjson_chat" / "cassettes",)
    mixed = Adapter(
        api=NDJSON_WIRE.api,
        stream_fn=NDJSON_WIRE.stream_fn,
        package="examples.ndjson_chat",
        cassettes=("cassettes/tool.jsonl", "llma__text_haiku45"),
    )
    assert Target.from_adapter(mixed).cassettes == (
        ROOT / "examples" / "ndjson_chat" / "cassettes" / "tool.jsonl",
        library.path("llma__text_haiku45"),
    )


def test_a_declared_cassette_that_is_nowhere_is_refused_by_name() -> None:
    missing = Adapter(
        api="ndjson-chat", stream_fn=NDJSON_WIRE.stream_fn, package="examples.ndjson_chat", cassettes=("x",)
    )
    with pytest.raises(ValueError) as raised:
        Target.from_adapter(missing)
    assert str(raised.value) == (
        "the ndjson-chat adapter declares the cassette 'x', which is neither a file or directory of "
        "examples.ndjson_chat (installed as plain files) nor a bundled recording"
    )


def test_cassettes_must_be_declared_as_a_tuple_of_names() -> None:
    with pytest.raises(
        TypeError, match=r"the ndjson-chat adapter's cassettes must be a tuple of names, not 'cassettes'"
    ):
        Adapter(api="ndjson-chat", stream_fn=NDJSON_WIRE.stream_fn, package="x", cassettes="cassettes")  # pyright: ignore[reportArgumentType]


def test_what_the_declaration_cannot_say_is_given_alongside_it() -> None:
    fewer = Capabilities(api="anthropic-messages", tool_calls=True)
    target = Target.from_adapter(ANTHROPIC, capabilities=fewer, name="mine")
    assert (target.capabilities, target.name, target.stream_fn) == (fewer, "mine", stream_anthropic)


def test_a_stream_fn_its_package_does_not_export_is_named_by_its_qualified_name() -> None:
    def stream_quietly(*_args: object) -> None: ...

    adapter = Adapter(api="quiet", stream_fn=stream_quietly, package="tests.conformance")  # pyright: ignore[reportArgumentType]
    test = test_a_stream_fn_its_package_does_not_export_is_named_by_its_qualified_name.__name__
    assert Target.from_adapter(adapter).name == f"{__name__}.{test}.<locals>.stream_quietly"


def test_pkg_colon_adapter_loads_as_the_target_the_declaration_gives() -> None:
    assert load_target("streamfns.anthropic:ADAPTER") == Target.from_adapter(ANTHROPIC)
    assert load_target("examples.ndjson_chat:ADAPTER") == Target.from_adapter(NDJSON)
    assert builtin_targets()["anthropic-messages"] == Target.from_adapter(ANTHROPIC)


@pytest.mark.slow
async def test_run_takes_a_declaration() -> None:
    report = await conformance.run(ANTHROPIC, checks=["P1"])
    assert report.ids("pass") == ["P1"], report.to_text()
    assert report.adapter == "streamfns.anthropic.stream_anthropic"
    picks = ANTHROPIC_WIRE.recordings  # the bundled recordings its profile names, one per feature
    assert report.to_json()["recordings"] == [picks["text"], picks["tool"], picks["parallel"], picks["thinking"]]


@pytest.mark.slow
def test_the_command_line_runs_a_declaration(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "examples.ndjson_chat:ADAPTER", "--checks", "P1"]) == 0
    out = capsys.readouterr().out
    assert "— adapter examples.ndjson_chat.stream_ndjson_chat\n" in out, out


@pytest.mark.slow
class TestADeclarationThroughThePytestFrontEnd(StreamFnConformance):
    """The pytest class takes the declaration as its target, capabilities and recordings included."""

    target = NDJSON
    checks = ("G1", "P1", "P3")
