"""``python -m bench [suite ...]``: print throughput figures and budget ratios.

A suite is a module ``bench/<name>_bench.py`` with a ``main()``; it is named on the command line
with hyphens (``bench/openai_completions_bench.py`` → ``python -m bench openai-completions``).
With no name, or ``all``, every suite runs.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def suites() -> dict[str, str]:
    """Suite name → module, from the ``*_bench.py`` files beside this one."""
    found: dict[str, str] = {}
    for info in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if info.name.endswith("_bench"):
            found[info.name.removesuffix("_bench").replace("_", "-")] = f"bench.{info.name}"
    return dict(sorted(found.items()))


def main(argv: list[str] | None = None) -> int:
    """Run the named suites (all when none is named)."""
    known = suites()
    names = (argv if argv is not None else sys.argv[1:]) or ["all"]
    if names == ["all"]:
        names = list(known)
    for name in names:
        module_name = known.get(name)
        if module_name is None:
            print(f"unknown suite {name!r}; choose from {', '.join(known)}", file=sys.stderr)
            return 2
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            print(f"== {name}: not available ({exc})")
            continue
        print(f"== {name}")
        module.main()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
