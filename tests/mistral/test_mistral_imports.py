"""The two chat adapters import each other's modules: the Mistral decoder builds on the chat-completions
one, and the chat-completions ``mistral`` profile takes Mistral's id rule from ``streamfns.mistral.rules``.
Whichever is imported first, in a fresh interpreter, both packages load (a package ``__init__`` that ran
into a half-loaded module of the other would fail here, not in a user's process)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import streamfns.mistral.rules
import streamfns.openai_completions.request

pytestmark = pytest.mark.parallel  # clock-blind: no socket, sleep or timeout

FIRSTS = [
    "streamfns.openai_completions",
    "streamfns.openai_completions.request",
    "streamfns.openai_completions.decode",
    "streamfns.mistral",
    "streamfns.mistral.rules",
    "streamfns.mistral.request",
    "streamfns.mistral.decode",
    "streamfns",
]


@pytest.mark.parametrize("first", FIRSTS)
def test_either_package_imports_first(first: str) -> None:
    code = f"import {first}\nimport streamfns.openai_completions, streamfns.mistral\nprint('ok')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, "ok"), done.stderr[-2000:]


def test_the_id_rule_has_one_home() -> None:
    assert streamfns.openai_completions.request.mistral_tool_call_id is streamfns.mistral.rules.mistral_tool_call_id
