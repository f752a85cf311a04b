"""The forms of one Ollama text line: the usual one (a role and content alone) and those with members
read as nothing beside them read the same, and the kit's shortcut takes both; text or thinking of
another type than a string is a protocol error, never dropped."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.adapters import OLLAMA, calls, texts
from tests.kit.test_kit_shortcut import _both_ways  # pyright: ignore[reportPrivateUsage]
from tests.ollama.test_ollama_hostile import done, kind, line, run

pytestmark = pytest.mark.parallel  # in-process transports only

STAMP = "2025-01-01T00:00:00Z"


def bare_line(message: dict[str, Any]) -> bytes:
    return json.dumps({"model": "m", "created_at": STAMP, "message": message, "done": False}).encode() + b"\n"


WORDS = [f"w{n} " for n in range(8)]

#: Text lines of each form, and whether the shortcut can take them (a line that calls no tool, thinks
#: nothing and only continues the text).
FORMS: dict[str, tuple[list[bytes], bool]] = {
    "role and content": ([line(word) for word in WORDS], True),
    "an empty thinking beside": ([line(word, message={"thinking": ""}) for word in WORDS], True),
    "images null beside": ([line(word, message={"images": None}) for word in WORDS], True),
    "tool_calls null beside": ([line(word, message={"tool_calls": None}) for word in WORDS], True),
    "no role": ([bare_line({"content": word}) for word in WORDS], True),
    "role last": ([bare_line({"content": word, "role": "assistant"}) for word in WORDS], True),
    "content and an unknown member": ([bare_line({"content": word, "x": 1}) for word in WORDS], True),
    "an empty tool_calls list beside": ([line(word, message={"tool_calls": []}) for word in WORDS], False),
}


@pytest.mark.parametrize("form", list(FORMS))
async def test_every_form_of_a_text_line_reads_as_the_usual_one(form: str, monkeypatch: pytest.MonkeyPatch) -> None:
    lines, shortcut = FORMS[form]
    usual_events, usual = await run(*FORMS["role and content"][0], done())
    events, message = await run(*lines, done())
    assert texts(message) == texts(usual) == "".join(WORDS)
    assert [event.type for event in events] == [event.type for event in usual_events]
    # One line per read, as real traffic comes: the shortcut gives what the full path gives, and takes
    # the lines it may take.
    got, expected, taken = await _both_ways(OLLAMA, [*lines, done()], monkeypatch)
    assert got == expected
    assert (taken > 0) is shortcut, taken


@pytest.mark.parametrize("member", ["content", "thinking"])
@pytest.mark.parametrize("value", [5, True, ["a"], {"text": "a"}, 0, False, [], {}])
@pytest.mark.parametrize("beside", [{}, {"images": None}])
async def test_text_or_thinking_that_is_not_a_string_is_a_protocol_error(
    member: str, value: object, beside: dict[str, Any]
) -> None:
    odd = bare_line({"role": "assistant", "content": "", **beside, member: value})
    _, message = await run(line("kept "), line("too "), odd, line("never "), done())
    assert (message.stop_reason, kind(message)) == ("error", "protocol")
    assert message.error_message is not None
    assert f"message.{member} that is not a string" in message.error_message
    assert texts(message) == "kept too "  # what came before it is kept


@pytest.mark.parametrize("member", ["content", "thinking"])
async def test_null_text_or_thinking_reads_as_none(member: str) -> None:
    _, message = await run(line("a "), bare_line({"role": "assistant", "content": "b ", member: None}), done())
    assert message.stop_reason == "stop"
    assert texts(message) == ("a " if member == "content" else "a b ")


async def test_a_role_beside_thinking_or_calls_alone_is_read_whole() -> None:
    """A message of two members is the usual text line only when they are a role and content: a role
    beside thinking alone, or beside calls alone (no content member), keeps every part."""
    call = {"function": {"name": "calc", "arguments": {"x": 1}}}
    _, message = await run(
        bare_line({"role": "assistant", "thinking": "hmm "}),
        bare_line({"role": "assistant", "tool_calls": [call]}),
        done(),
    )
    assert message.stop_reason == "toolUse"
    assert [block.type for block in message.content] == ["thinking", "toolCall"]
    assert [(c.name, c.arguments) for c in calls(message)] == [("calc", {"x": 1})]
