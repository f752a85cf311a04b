"""How the adapter's parallel function-call recording is derived from a real one.

No bundled Responses recording holds two function calls in one response (the library's "parallel"
pick, ``vercel__reasoning_encrypted_3_function_calls_codex``, is four sequential responses with one
call each). ``streamfns/openai_responses/pai__parallel_function_calls_gpt4o_HANDEDITED.jsonl`` is
therefore derived from the real ``pai__function_call_gpt4o`` (gpt-4o calling ``get_capital`` for
France): the call's events are repeated at ``output_index`` 1 for a second country, with fresh ids,
as the API streams parallel calls, and the final response lists both items. Every other byte of
every event is the recording's. ``python -m tests.openai_responses._parallel`` rewrites the file; a
test checks the committed file is exactly what this derivation gives.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

from cassettes import Cassette, Chunk, End, Interaction, RecordedResponse, library
from cassettes.format import dumps
from tests.sse_events import split_events

SOURCE = "pai__function_call_gpt4o"
NAME = "pai__parallel_function_calls_gpt4o_HANDEDITED"
PATH = Path(__file__).resolve().parents[2] / "streamfns" / "openai_responses" / f"{NAME}.jsonl"

_FIRST_ITEM = "fc_67e554a1de488191af0831d35cbe082e0794405d35281ae2"
_SECOND_ITEM = "fc_67e554a1de488191af0831d35cbe082e0794405d35281ae3"
_SECOND_CALL = "call_hAnDeDiTeDpArAlLeLcAlL2"


def _event(name: str, value: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(value, separators=(',', ':'), ensure_ascii=False)}\n\n".encode()


def _second(value: dict[str, Any]) -> dict[str, Any]:
    """The same event for the second call: output_index 1, its own ids, Japan instead of France."""
    text = json.dumps(value, ensure_ascii=False)
    text = text.replace(_FIRST_ITEM, _SECOND_ITEM).replace("call_kL0PCQV7M2WMoVX8V8OtYSAL", _SECOND_CALL)
    text = text.replace("France", "Japan")
    copied: dict[str, Any] = json.loads(text)
    copied["output_index"] = 1
    return copied


def derive() -> Cassette:
    """The hand-edited cassette (see the module docstring)."""
    source = library.load(SOURCE)
    response = source.interactions[0].response
    pieces: list[bytes] = []
    call_events: list[tuple[str, dict[str, Any]]] = []
    for event in split_events(response.body):
        parsed = event.json()
        assert isinstance(parsed, dict)
        assert event.event is not None
        value = cast("dict[str, Any]", parsed)
        kind = event.event
        if kind == "response.completed":
            for name, first in call_events:
                pieces.append(_event(name, _second(first)))
            completed: dict[str, Any] = value["response"]
            completed["output"].append(_second({"x": completed["output"][0]})["x"])
            completed["usage"]["output_tokens"] += 16
            completed["usage"]["total_tokens"] += 16
            pieces.append(_event(kind, value))
            continue
        if kind.startswith(("response.output_item.", "response.function_call_arguments.")):
            call_events.append((kind, value))
        pieces.append(event.raw)
    chunks = tuple(Chunk(data, 5.0 * n) for n, data in enumerate(pieces))
    edited = RecordedResponse(
        status=200,
        headers=response.headers,
        chunks=chunks,
        end=End("eof", 5.0 * len(chunks)),
    )
    attribution = dict(source.source or {})
    attribution["provenance"] = (
        f"hand-edited from the recorded {SOURCE}: its function call repeated at output_index 1 "
        "(new ids, 'Japan' for 'France') and listed in the final response; usage +16 output tokens"
    )
    return Cassette(
        interactions=(Interaction(source.interactions[0].request, edited),),
        api=source.api,
        model=source.model,
        source=attribution,
        extra={"name": NAME, "timing": "synthetic", "request": "synthetic"},
    )


if __name__ == "__main__":
    PATH.write_text(dumps(derive()), encoding="utf-8")
    print(f"wrote {PATH}")
