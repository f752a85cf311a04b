"""One list of checks and one list of public names: what the conformance guide and `import conformance` promise."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import conformance
from conformance.checks import CHECKS, markdown_table
from conformance.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _guide_table() -> str:
    guide = (ROOT / "docs" / "conformance.md").read_text(encoding="utf-8")
    section = guide[guide.index("## The checks") :]
    return "".join(line + "\n" for line in section.splitlines() if line.startswith("|"))


def test_the_guides_table_of_checks_is_the_generated_one() -> None:
    assert _guide_table() == markdown_table(), "run `python -m conformance list --markdown` and paste it"


def test_the_table_lists_every_check_once_with_its_title(capsys: pytest.CaptureFixture[str]) -> None:
    rows = markdown_table().splitlines()[2:]
    assert [row.split(" | ")[0].removeprefix("| ") for row in rows] == [check.id for check in CHECKS]
    assert len({check.title for check in CHECKS}) == len(CHECKS)
    assert all(check.title in row for check, row in zip(CHECKS, rows, strict=True))
    assert main(["list", "--markdown"]) == 0
    assert capsys.readouterr().out == markdown_table()


def test_every_public_name_resolves_from_the_one_list() -> None:
    for name in conformance.__all__:
        assert getattr(conformance, name) is not None, name
    assert sorted(dir(conformance)) == sorted(conformance.__all__)
    with pytest.raises(AttributeError):
        _ = conformance.no_such_name  # pyright: ignore[reportAttributeAccessIssue]


def test_importing_the_package_loads_no_harness() -> None:
    probe = "import sys, conformance; print(sorted(m for m in sys.modules if m.startswith(('conformance.', 'httpx'))))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout.strip() == "[]"
