"""The runnable examples of the adapter guide (docs/adapters.md) run as printed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "docs" / "adapters.md").read_text(encoding="utf-8")
RUNNABLE = [block for block in re.findall(r"```python\n(.*?)```", GUIDE, re.DOTALL) if "asyncio.run(main())" in block]


def test_the_guide_has_a_runnable_example_per_framing() -> None:
    assert len(RUNNABLE) == 2
    assert "compatible_chat" in RUNNABLE[0]
    assert "ndjson_chat" in RUNNABLE[1]


@pytest.mark.parametrize("index", range(len(RUNNABLE)))
def test_a_runnable_example_runs(
    index: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    exec(compile(RUNNABLE[index], f"docs/adapters.md#example{index}", "exec"), {"__name__": "__main__"})
    assert "toolUse ['toolCall'" in capsys.readouterr().out
