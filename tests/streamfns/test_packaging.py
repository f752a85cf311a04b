"""The development install works from outside the repository, as users and their tools see it."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.parallel

ROOT = Path(__file__).resolve().parents[2]


def _outside(tmp_path: Path) -> Path:
    # Directories named like our packages, with nothing in them: what a parent directory of a
    # clone called "streamfns" looks like from the inside. They must not shadow the real packages.
    for name in ("streamfns", "normalize", "conformance", "cassettes"):
        (tmp_path / name).mkdir()
    return tmp_path


def test_an_outside_directory_imports_the_real_packages(tmp_path: Path) -> None:
    code = (
        "import streamfns, normalize, conformance, cassettes; "
        "print(streamfns.__file__); print(streamfns.get_model('anthropic', 'claude-haiku-4-5').api)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=_outside(tmp_path), capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    location, api = done.stdout.split()
    assert Path(location).is_relative_to(ROOT)
    assert api == "anthropic-messages"


def test_the_cli_lists_the_catalog_from_an_outside_directory(tmp_path: Path) -> None:
    cli = Path(sys.executable).parent / "streamfns"
    done = subprocess.run([str(cli), "models"], cwd=_outside(tmp_path), capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "anthropic/claude-haiku-4-5" in done.stdout


def test_a_type_checker_outside_the_repository_resolves_every_package(tmp_path: Path) -> None:
    pyright = shutil.which("pyright", path=str(Path(sys.executable).parent))
    if pyright is None:
        pytest.skip("pyright is installed by the dev extra (make test installs it)")
    source = _outside(tmp_path) / "client.py"
    source.write_text(
        "# pyright: strict\n"
        "from cassettes import Cassette\n"
        "from conformance import Capabilities\n"
        "from normalize import Model\n"
        "from streamfns.kit import WireApi\n"
        "print(Cassette, Capabilities, Model, WireApi)\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [pyright, "--pythonpath", sys.executable, str(source)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout
    assert "0 errors" in done.stdout


def test_the_development_install_needs_no_transitional_setuptools_mode() -> None:
    # setuptools' `editable_mode=compat` warns on every install that it is going away. Declaring the
    # repository as the import root makes its default (lenient) mode write the same plain .pth file
    # (src-layout rule: a declared root with every package right under it), instead of an import
    # hook that static tools can not follow and that an empty directory named like a package shadows.
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert config["tool"]["setuptools"]["package-dir"] == {"": "."}
    found = config["tool"]["setuptools"]["packages"]["find"]["include"]
    assert all((ROOT / pattern.rstrip("*")).is_dir() for pattern in found), "every package sits at the root"
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    installs = [line.strip() for line in makefile.splitlines() if "pip install" in line and " -e " in line]
    assert len(installs) == 2
    assert all("editable_mode" not in line and "--config-settings" not in line for line in installs), installs


def test_this_environment_has_the_repository_on_its_path_through_a_plain_pth_file() -> None:
    site = Path(sysconfig.get_paths()["purelib"])
    editable = sorted(site.glob("__editable__*streamfns*.pth"))
    if not editable:
        pytest.skip("not a development install (make demo / make test create one)")
    (pth,) = editable
    assert pth.read_text(encoding="utf-8").split() == [str(ROOT)]
