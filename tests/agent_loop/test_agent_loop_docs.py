"""The documentation site's snippets run, and its generated tables come from the code.

Every ```` ```python ```` block of a page runs, in page order, in one namespace per page (an
``--8<-- "path"`` line includes that file, as the site does). Every ```` ```console ```` block runs
each ``$ command`` and compares the lines shown under it with the real output: ``...`` on its own
line stands for any lines, a line ending in `` ...`` matches by prefix. ```` ```sh ````,
```` ```text ```` and ```` ```toml ```` blocks are illustrations (live calls, installs) and are not run.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import shlex
import subprocess
import sys
import types
from pathlib import Path
from typing import Any, get_args

import pytest

import conformance
import streamfns
from normalize import RULES, ErrorKind
from streamfns._adapters import all_adapters

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted(path for path in DOCS.rglob("*.md") if "_gen" not in path.parts)
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
INCLUDE = re.compile(r'^--8<-- "([^"]+)"$', re.MULTILINE)
#: "js": the wrapper of an adapter process written in JavaScript (docs/other-languages.md), not run here.
LANGUAGES = {"python", "console", "sh", "text", "toml", "js"}
BIN = Path(sys.executable).parent


def _blocks(page: Path, language: str) -> list[str]:
    text = page.read_text(encoding="utf-8")
    return [body for lang, body in FENCE.findall(text) if lang == language]


def _generate_module() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("docs_generate", DOCS / "_gen" / "generate.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_fence_has_a_known_language_and_the_site_has_snippets() -> None:
    found: set[str] = set()
    for page in PAGES:
        found |= {lang for lang, _body in FENCE.findall(page.read_text(encoding="utf-8"))}
    assert found <= LANGUAGES, f"unknown fence languages (run or not?): {found - LANGUAGES}"
    assert sum(len(_blocks(page, "python")) for page in PAGES) >= 10
    assert sum(len(_blocks(page, "console")) for page in PAGES) >= 4


@pytest.mark.parametrize("page", [p for p in PAGES if _blocks(p, "python")], ids=lambda p: p.stem)
def test_python_snippets_run(page: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    name = f"docs_snippets_{page.stem.replace('-', '_')}"
    module = types.ModuleType(name)  # a real module, so dataclasses and pickling in snippets behave
    monkeypatch.setitem(sys.modules, name, module)
    printed = io.StringIO()
    for index, block in enumerate(_blocks(page, "python")):
        source = INCLUDE.sub(lambda m: (ROOT / m.group(1)).read_text(encoding="utf-8"), block)
        code = compile(source, f"{page.relative_to(ROOT)} python block {index + 1}", "exec")
        with contextlib.redirect_stdout(printed):
            exec(code, module.__dict__)  # running the documentation's own examples is the point
    assert printed.getvalue().strip(), f"{page.name}: the snippets printed nothing to show"


def _matches(expected: str, actual: str) -> bool:
    return actual.startswith(expected[:-4]) if expected.endswith(" ...") else actual == expected


def _segments_found(expected: list[str], actual: list[str]) -> bool:
    segments: list[list[str]] = [[]]
    for line in expected:
        if line == "...":
            segments.append([])
        else:
            segments[-1].append(line)
    position = 0
    for number, segment in enumerate(segments):
        if not segment:
            continue
        anchored_start = number == 0
        starts = [position] if anchored_start else range(position, len(actual) - len(segment) + 1)
        for start in starts:
            window = actual[start : start + len(segment)]
            if len(window) == len(segment) and all(map(_matches, segment, window)):
                position = start + len(segment)
                break
        else:
            return False
    return bool(segments[-1]) is False or position == len(actual)


def _console_runs() -> list[tuple[str, str, list[str]]]:
    runs: list[tuple[str, str, list[str]]] = []
    for page in PAGES:
        for block in _blocks(page, "console"):
            for chunk in block.split("$ ")[1:]:
                command, *expected = chunk.rstrip("\n").split("\n")
                runs.append((page.stem, command, expected))
    return runs


@pytest.mark.parametrize(("page", "command", "expected"), _console_runs(), ids=lambda value: str(value)[:40])
def test_console_examples_print_what_the_page_shows(page: str, command: str, expected: list[str]) -> None:
    argv = shlex.split(command)
    program = {"streamfns": str(BIN / "streamfns"), "python": sys.executable}.get(argv[0])
    assert program is not None, f"{page}: only streamfns and python commands run in console blocks: {command}"
    done = subprocess.run([program, *argv[1:]], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    actual = done.stdout.rstrip("\n").split("\n")
    assert _segments_found(expected, actual), f"{page}: `{command}` printed:\n{done.stdout}"


def test_the_output_matcher_is_strict() -> None:
    actual = ["a", "b", "c"]
    assert _segments_found(["a", "b", "c"], actual)
    assert _segments_found(["a", "...", "c"], actual)
    assert _segments_found(["...", "b", "..."], actual)
    assert _segments_found(["a ...", "..."], ["a b", "c"])
    assert not _segments_found(["a", "c"], actual)  # without "..." lines must be adjacent
    assert not _segments_found(["a", "b"], actual)  # and the output must not go on
    assert not _segments_found(["b", "..."], actual)  # nor start earlier
    assert not _segments_found(["a", "...", "x"], actual)


def test_every_marker_in_the_pages_has_a_generator() -> None:
    generators: dict[str, Any] = _generate_module().GENERATORS
    markers = {m for page in PAGES for m in re.findall(r"<!-- generated: ([a-z-]+) -->", page.read_text("utf-8"))}
    assert markers == set(generators)


def test_generated_tables_list_every_check_model_rule_and_error_kind() -> None:
    generate = _generate_module()
    checks = generate.checks()
    for check in conformance.CHECKS:
        assert f"### {check.id}\n\n**{check.title}.**" in checks
    models = generate.models()
    for model in streamfns.list_models():
        assert f"| `{model.id}` | `{model.api}` | {model.context_window:,} | {model.max_tokens:,} |" in models
    grammar = generate.grammar()
    assert all(f"| {rule} |" in grammar for rule in RULES)
    kinds = generate.error_kinds()
    assert all(f"| `{kind}` |" in kinds for kind in get_args(ErrorKind))
    adapters = generate.adapters()
    assert all(f"| `{api}` |" in adapters for api in all_adapters())
    help_text = generate.cli_help()
    assert help_text.count("examples:\n  streamfns ") == 6  # streamfns and its five commands


def test_a_table_cell_cannot_break_the_table() -> None:
    assert _generate_module()._cell("stop|length\n  toolUse") == "stop\\|length toolUse"
