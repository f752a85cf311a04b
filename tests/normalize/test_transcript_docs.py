"""The guides show adapters doing what they do: every request builder starts from
``normalize.transcript_for`` (which applies ``transform_messages``) — itself, or through the built-in
builder whose body it renders — the built-in ones and the example adapters the adapter guide includes alike."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILDERS = sorted((ROOT / "streamfns").glob("*/request.py"))
EXAMPLES = [ROOT / "examples" / "compatible_chat" / "adapter.py", ROOT / "examples" / "ndjson_chat" / "adapter.py"]


def _flat(path: Path) -> str:
    return " ".join(path.read_text(encoding="utf-8").split())


def test_every_request_builder_starts_from_transcript_for() -> None:
    assert len(BUILDERS) >= 4
    for path in [*BUILDERS, *EXAMPLES]:
        code = path.read_text(encoding="utf-8")
        assert not re.search(r"\btransform_messages\(", code), f"{path} calls transform_messages itself"
        # A builder that renders another api's body (Claude on Bedrock or Vertex renders the Messages
        # body) starts from that builder, which starts from transcript_for.
        delegate = re.search(r"from streamfns\.(\w+)\.request import build_request as \w+", code)
        if delegate is not None:
            assert (ROOT / "streamfns" / delegate.group(1) / "request.py") in BUILDERS, path
            continue
        assert re.search(r"\btranscript_for\(", code), path


def test_the_guides_name_transcript_for_as_the_first_step_of_a_request_builder() -> None:
    adapters = _flat(ROOT / "docs" / "adapters.md")
    assert "run `normalize.transcript_for` first" in adapters
    handoff = _flat(ROOT / "docs" / "handoff.md")
    assert "every adapter's request builder first runs `normalize.transcript_for(model, context)`" in handoff
    assert "every adapter first runs `normalize.transform_messages" not in handoff
    readme = _flat(ROOT / "README.md")
    assert "(`transcript_for`, built on `transform_messages`)" in readme
