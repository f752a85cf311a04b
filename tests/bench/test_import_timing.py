"""The import budget times compiled modules, as an installed package imports them, and leaves the
checkout untouched: ``bench.latency_bench.bytecode_cached_env``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.latency_bench import bytecode_cached_env

pytestmark = pytest.mark.parallel


def test_the_environment_caches_bytecode_in_its_prefix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    cache = tmp_path / "cache"
    env = bytecode_cached_env(str(cache))
    assert "PYTHONDONTWRITEBYTECODE" not in env
    assert env["PYTHONPYCACHEPREFIX"] == str(cache)
    assert env["PATH"] == os.environ["PATH"]  # the rest of the environment is kept

    package = tmp_path / "checkout" / "timed_package"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("VALUE = 41 + 1\n")
    probe = "import timed_package, sys; assert timed_package.VALUE == 42; print(sys.flags.dont_write_bytecode)"
    run = subprocess.run(
        [sys.executable, "-c", probe], cwd=package.parent, env=env, check=True, capture_output=True, text=True
    )
    assert run.stdout.strip() == "0"
    # Compiled once into the prefix (mirroring the source's path), never beside the source.
    assert list(cache.rglob("timed_package/__init__.*.pyc"))
    assert not list((tmp_path / "checkout").rglob("*.pyc"))

    # Without the prefix, this process's setting holds: nothing is written anywhere.
    plain = subprocess.run(
        [sys.executable, "-c", probe], cwd=package.parent, check=True, capture_output=True, text=True
    )
    assert plain.stdout.strip() == "1"
