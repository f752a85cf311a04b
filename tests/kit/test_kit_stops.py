"""``StopTable``: one declared table per adapter shape maps a vendor's stop reasons."""

from __future__ import annotations

from typing import Any, cast

import pytest

from normalize import ErrorInfo, MessageBuilder
from streamfns.kit import StopMapping, StopTable

pytestmark = pytest.mark.parallel  # clock-blind: no socket, sleep or timeout

FILTERED = "Acme filtered the response ({raw})"
UNKNOWN = "Acme sent an unknown stop reason: 'shrug'"
TABLE = StopTable(
    vendor="Acme",
    stops={"done": "stop", "too_long": "length", "calls": "toolUse"},
    errors={"unsafe": "content_filter", "broke": "server"},
    error_prefixes={"IMG_": "content_filter"},
    messages={"unsafe": "Acme filtered it", "content_filter": FILTERED},
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("done", StopMapping("stop", None, None)),
        ("too_long", StopMapping("length", None, None)),
        ("calls", StopMapping("toolUse", None, None)),
        ("unsafe", StopMapping("error", ErrorInfo.of("content_filter", code="unsafe"), "Acme filtered it")),
        (
            "IMG_NEW",
            StopMapping(
                "error", ErrorInfo.of("content_filter", code="IMG_NEW"), "Acme filtered the response (IMG_NEW)"
            ),
        ),
        ("broke", StopMapping("error", ErrorInfo.of("server", code="broke"), "Acme stopped the response: broke")),
        (
            "shrug",
            StopMapping("error", ErrorInfo.of("protocol", code="shrug"), "Acme sent an unknown stop reason: 'shrug'"),
        ),
    ],
)
def test_each_reason_maps_as_declared(raw: str, expected: StopMapping) -> None:
    assert TABLE.map(raw) == expected


def test_a_vendor_detail_is_quoted_and_a_given_message_wins() -> None:
    assert TABLE.map("broke", detail="  upstream died ").message == "Acme stopped the response: broke: upstream died"
    assert TABLE.map("unsafe", message="the model refused").message == "the model refused"
    assert TABLE.map("done", detail="ignored").message is None  # a normal stop carries no message


def test_braces_in_a_reason_are_text_not_a_template() -> None:
    mapping = TABLE.map("{vendor}{0}")
    assert mapping.message == "Acme sent an unknown stop reason: '{vendor}{0}'"


def test_an_unknown_reason_may_be_declared_not_retryable() -> None:
    table = StopTable(vendor="V", stops={}, unknown="server", unknown_retryable=False)
    info = table.map("odd").error
    assert info is not None
    assert (info.kind, info.retryable, info.code) == ("server", False, "odd")
    assert StopTable(vendor="V", stops={}, unknown="server").map("odd").error == ErrorInfo.of("server", code="odd")


def test_with_stops_adds_a_servers_own_words_without_changing_the_table() -> None:
    extended = TABLE.with_stops({"eos": "stop", "unsafe": "stop"})
    assert extended.map("eos").reason == "stop"
    assert extended.map("unsafe").reason == "stop"  # the server's word replaces ours
    assert TABLE.map("eos").reason == "error"
    assert TABLE.with_stops({}) is TABLE


def test_stop_records_the_mapping_on_the_builder() -> None:
    builder = MessageBuilder()
    builder.text_start("t", "partial")
    assert TABLE.stop(builder, "unsafe").reason == "error"
    builder.finish()
    message = builder.message
    assert (message.stop_reason, message.raw_stop_reason, message.error_message) == (
        "error",
        "unsafe",
        "Acme filtered it",
    )
    assert message.error_info is not None
    assert (message.error_info.kind, message.error_info.output_started) == ("content_filter", True)


def test_a_table_that_maps_to_something_else_is_refused_when_declared() -> None:
    with pytest.raises(ValueError, match="must map to stop, length or toolUse"):
        StopTable(vendor="V", stops={"x": cast("Any", "error")})
    with pytest.raises(ValueError, match="error kinds that do not exist"):
        StopTable(vendor="V", stops={}, errors={"x": cast("Any", "oops")})
