"""The streamfns conformance harness: prove a StreamFn keeps the contract.

    import conformance
    from my_adapter import ADAPTER          # the package's streamfns.kit.Adapter declaration

    report = await conformance.run(ADAPTER)  # or: run(my_stream_fn, capabilities=conformance.Capabilities(...))
    print(report.to_text())

It points the adapter at a loopback HTTP server (``model.base_url``) that replays recordings —
the author's cassettes or the bundled library's — with mutations and generic faults, and checks the
event grammar and the behaviours of the StreamFn contract. What the api's bytes look like (server-sent
events, JSON lines or an AWS event stream; its terminal marker; its error bodies) comes from the
api's wire profile (:class:`normalize.wire.WireProfile`), which its adapter declares: the harness
knows no api by name. Each check has a stable id (see
:mod:`conformance.checks`); the report gives pass / fail / unsupported / xfail / harness-error per check
and a verdict, and prints the ``cassettes mutate`` command that reproduces each failing scenario's
bytes. Whatever the adapter does, a run ends with a report within ``Limits.bound_s`` — short of
ending the process itself with ``os._exit`` (see :mod:`conformance.watchdog`). Front ends:
``python -m conformance run my_adapter:ADAPTER`` (:mod:`conformance.cli`) and the pytest base class
:class:`conformance.pytest_support.StreamFnConformance`. An adapter written in another language is
judged as a process (:func:`process_target`; ``conformance run --exec 'node my_adapter.mjs' --api …``),
and every report gives a verdict at two contract levels, ``pi`` and ``streamfns``
(:mod:`conformance.report`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from conformance._version import __version__
    from conformance.check import Check, Outcome
    from conformance.checks import CHECK_IDS, CHECKS, get_check
    from conformance.loopback import LoopbackServer, ReceivedRequest, Scripted, refused_url
    from conformance.process import ProcessAdapter, process_target
    from conformance.recordings import FeatureSource, Recording, library_recordings, load_recordings
    from conformance.report import CheckResult, Evidence, Level, Report, Status, Verdict
    from conformance.runner import run, run_sync
    from conformance.session import API_KEY
    from conformance.target import Capabilities, CassetteSource, Target, is_factory, load_target
    from conformance.watchdog import Limits


__all__ = [
    "API_KEY",
    "CHECKS",
    "CHECK_IDS",
    "Capabilities",
    "CassetteSource",
    "Check",
    "CheckResult",
    "Evidence",
    "FeatureSource",
    "Level",
    "Limits",
    "LoopbackServer",
    "Outcome",
    "ProcessAdapter",
    "ReceivedRequest",
    "Recording",
    "Report",
    "Scripted",
    "Status",
    "Target",
    "Verdict",
    "__version__",
    "get_check",
    "is_factory",
    "library_recordings",
    "load_recordings",
    "load_target",
    "process_target",
    "refused_url",
    "run",
    "run_sync",
]

# The harness loads on first use: the pytest plugin imports this package in every pytest session
# where streamfns is installed, and must not pull in the harness (and its dependencies) to do so.
# A public name is found in the first of these modules (lightest first) whose ``__all__`` lists it,
# so ``__all__`` above is the only list of names.
_MODULES = (
    "conformance._version",
    "conformance.target",
    "conformance.watchdog",
    "conformance.report",
    "conformance.loopback",
    "conformance.recordings",
    "conformance.session",
    "conformance.check",
    "conformance.checks",
    "conformance.process",
    "conformance.runner",
)


def __getattr__(name: str) -> Any:
    if name in __all__:
        for module_name in _MODULES:
            module = importlib.import_module(module_name)
            if name in getattr(module, "__all__", ()):
                value = getattr(module, name)
                globals()[name] = value
                return value
    raise AttributeError(f"module 'conformance' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
