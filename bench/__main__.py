"""``python -m bench [--json PATH] [suite ...] [-- suite arguments]``: throughput figures and budget ratios.

A suite is a module ``bench/<name>_bench.py`` with a ``main()``; it is named on the command line
with hyphens (``bench/openai_completions_bench.py`` → ``python -m bench openai-completions``).
With no name, or ``all``, every suite runs. Options after the suite names that the runner does not
know (``python -m bench load --streams 1000 --rate 20 --seconds 30``) go to the suites whose
``main`` takes an argument list (the load suite); the others take none.

``-h``/``--help`` prints this and the suites (with a named suite's own options), and runs nothing.

``--json PATH`` writes what the run measured (µs per event per stack and body, the judged ratios, the
load figure, machine, date and git revision) to ``PATH``: ``docs/performance.md`` is generated from
the committed ``docs/perf/bench.json``.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import json
import pkgutil
import sys
from pathlib import Path
from typing import Any

from bench import _report
from bench._util import RULE

__all__ = ["main", "suites"]


def suites() -> dict[str, str]:
    """Suite name → module, from the ``*_bench.py`` files beside this one."""
    found: dict[str, str] = {}
    for info in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if info.name.endswith("_bench"):
            found[info.name.removesuffix("_bench").replace("_", "-")] = f"bench.{info.name}"
    return dict(sorted(found.items()))


def _split(argv: list[str]) -> tuple[list[str], str | None, list[str]]:
    """(suite names, --json path, arguments for the suites)."""
    names: list[str] = []
    passed: list[str] = []
    json_path: str | None = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--json" and i + 1 < len(argv):
            json_path, i = argv[i + 1], i + 2
            continue
        if arg.startswith("--json="):
            json_path = arg.partition("=")[2]
        elif arg == "--":
            passed += argv[i + 1 :]
            break
        elif arg.startswith("-") or passed:
            passed.append(arg)  # an option and its values belong to the suites
        else:
            names.append(arg)
        i += 1
    return names, json_path, passed


def _takes_arguments(fn: Any) -> bool:
    try:
        return bool(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return False


def _help(known: dict[str, str], names: list[str]) -> int:
    """What ``-h``/``--help`` prints, measuring nothing: the runner's usage and its suites, then the
    options of each named suite that takes any (its own ``--help``)."""
    print((__doc__ or "").strip())
    print(f"\nsuites: {', '.join(known)}")
    for name in names:
        module = importlib.import_module(known[name])
        if _takes_arguments(module.main):
            print(f"\n== {name}", flush=True)
            with contextlib.suppress(SystemExit):  # argparse's help exits; the runner's does not
                module.main(["--help"])
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the named suites (all when none is named); write ``--json`` when asked."""
    known = suites()
    names, json_path, passed = _split(list(argv if argv is not None else sys.argv[1:]))
    unknown = [name for name in names if name not in known and name != "all"]
    if unknown:
        print(f"unknown suite {unknown[0]!r}; choose from {', '.join(known)}", file=sys.stderr)
        return 2
    if "-h" in passed or "--help" in passed:
        return _help(known, [name for name in names if name != "all"])
    if not names or names == ["all"]:
        names = list(known)
    if json_path is not None:
        _report.start()
    print(RULE)
    status = 0
    for name in names:
        try:
            module = importlib.import_module(known[name])
        except ModuleNotFoundError as exc:
            print(f"== {name}: not available ({exc})")
            continue
        print(f"== {name}", flush=True)
        _report.suite(name)
        try:
            outcome = module.main(passed) if _takes_arguments(module.main) else module.main()
        except Exception as exc:  # one broken suite must not lose the others' figures
            print(f"== {name}: failed ({type(exc).__name__}: {exc})", flush=True)
            status = 1
            continue
        if isinstance(outcome, int) and outcome and name == "load":
            status = outcome  # the load suite's leak checks are must-be-0 figures
    if json_path is not None:
        document = {"schema": 1, **_report.machine_info(), "rule": RULE, "suites": _report.results()}
        Path(json_path).parent.mkdir(parents=True, exist_ok=True)
        Path(json_path).write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {json_path}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
