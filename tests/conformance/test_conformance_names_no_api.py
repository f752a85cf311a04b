"""The harness and the cassette tools know no wire api by name: what an api's bytes look like comes
from its adapter's wire profile. No string in their code (docstrings aside) names a built-in api, a
bundled recording, or a vendor's terminal marker."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from cassettes import library
from normalize.wire import known_profiles

ROOT = Path(__file__).resolve().parents[2]
#: Vendor words that would betray an api-specific branch (terminal markers, error shapes).
_VENDOR_WORDS = ("message_stop", "[DONE]", "finishReason", "finish_reason", "response.completed", "x-amzn")


def _strings(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def _code_files() -> list[Path]:
    files = [*(ROOT / "conformance").rglob("*.py"), *(ROOT / "cassettes").glob("*.py")]
    return sorted(path for path in files if "library" not in path.parts)


@pytest.mark.parametrize("path", _code_files(), ids=lambda path: str(path.relative_to(ROOT)))
def test_no_string_in_the_harness_or_the_cassette_tools_names_an_api(path: Path) -> None:
    apis = set(known_profiles())
    assert {"anthropic-messages", "openai-completions", "openai-responses", "google-generative-ai"} <= apis
    recordings = set(library.names())
    found = [
        f"line {line}: {text!r}"
        for line, text in _strings(path)
        if any(api in text for api in apis) or text in recordings or any(word in text for word in _VENDOR_WORDS)
    ]
    assert found == []
