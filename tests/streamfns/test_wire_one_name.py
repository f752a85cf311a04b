"""A wire api's StreamFn has one name, ``WIRE.stream_fn``: the kit, the examples and the docs use it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import streamfns.kit
from examples.compatible_chat import ADAPTER as COMPATIBLE
from examples.compatible_chat import stream_compatible_chat
from examples.compatible_chat.adapter import WIRE as COMPATIBLE_WIRE
from examples.ndjson_chat import ADAPTER as NDJSON
from examples.ndjson_chat import stream_ndjson_chat
from examples.ndjson_chat.adapter import WIRE as NDJSON_WIRE
from streamfns.kit import WireApi

pytestmark = pytest.mark.parallel

ROOT = Path(__file__).resolve().parents[2]
#: ``WIRE.stream`` (or ``.stream(``) read off a wire api: the second name this test keeps out.
OTHER_NAME = re.compile(r"\bWIRE\.stream\b(?!_)")


def test_a_wire_api_has_one_public_name_for_its_stream_fn() -> None:
    public = {name for name in dir(WireApi) if not name.startswith("_")}
    assert "stream_fn" in WireApi.__dataclass_fields__
    assert "stream" not in public
    assert not hasattr(COMPATIBLE_WIRE, "stream")


def test_both_examples_export_their_wire_apis_stream_fn_itself() -> None:
    assert stream_compatible_chat is COMPATIBLE_WIRE.stream_fn is COMPATIBLE.stream_fn
    assert stream_ndjson_chat is NDJSON_WIRE.stream_fn is NDJSON.stream_fn
    assert COMPATIBLE.profile is COMPATIBLE_WIRE.profile


def test_the_kit_the_examples_and_the_docs_name_it_stream_fn() -> None:
    texts = {"streamfns.kit": streamfns.kit.__doc__ or ""}
    assert "WIRE.stream_fn" in texts["streamfns.kit"]
    for path in [*ROOT.glob("examples/*/*.py"), *ROOT.glob("docs/*.md"), ROOT / "README.md"]:
        texts[str(path.relative_to(ROOT))] = path.read_text(encoding="utf-8")
    assert {where for where, text in texts.items() if OTHER_NAME.search(text)} == set()
