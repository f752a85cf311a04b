"""``python -m bench [builder|sse|anthropic|all]``: print throughput figures and budget ratios."""

from __future__ import annotations

import importlib
import sys

_SUITES = {
    "builder": "bench.builder_bench",
    "sse": "bench.sse_bench",
    "anthropic": "bench.anthropic_bench",
    "latency": "bench.latency_bench",
}


def main(argv: list[str] | None = None) -> int:
    """Run the named suites (all when none is named)."""
    names = (argv if argv is not None else sys.argv[1:]) or ["all"]
    if names == ["all"]:
        names = list(_SUITES)
    for name in names:
        module_name = _SUITES.get(name)
        if module_name is None:
            print(f"unknown suite {name!r}; choose from {', '.join(_SUITES)}", file=sys.stderr)
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
