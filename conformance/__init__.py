"""The streamfns conformance harness: prove a StreamFn keeps the contract.

    import conformance
    report = await conformance.run(my_stream_fn, capabilities=conformance.Capabilities(api="anthropic-messages"))
    print(report.to_text())

It points the adapter at a loopback HTTP server (``model.base_url``) that replays recordings —
the author's cassettes or the bundled library's — with mutations and generic faults, and checks the
event grammar and the behaviours of the StreamFn contract. Each check has a stable id (see
:mod:`conformance.checks`); the report gives pass / fail / unsupported / xfail / harness-error per check
and a verdict. Front ends: ``python -m conformance run pkg.module:attr`` (:mod:`conformance.cli`) and
the pytest base class :class:`conformance.pytest_support.StreamFnConformance`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from conformance._version import __version__

if TYPE_CHECKING:
    from conformance.capabilities import KNOWN_APIS, Capabilities
    from conformance.checks import CHECK_IDS, CHECKS, get_check
    from conformance.declared import Target
    from conformance.limits import Limits
    from conformance.loopback import LoopbackServer, ReceivedRequest, Scripted, refused_url
    from conformance.recordings import LIBRARY_PICKS, Recording, library_recordings, load_recordings
    from conformance.registry import Check, Outcome
    from conformance.report import CheckResult, Evidence, Report, Status, Verdict
    from conformance.runner import run, run_sync
    from conformance.session import API_KEY
    from conformance.target import is_factory, load_target

# The harness loads on first use: the pytest plugin imports this package in every pytest session
# where streamfns is installed, and must not pull in the harness (and its dependencies) to do so.
_LAZY: dict[str, str] = {
    "API_KEY": "conformance.session",
    "CHECKS": "conformance.checks",
    "CHECK_IDS": "conformance.checks",
    "Capabilities": "conformance.capabilities",
    "Check": "conformance.registry",
    "CheckResult": "conformance.report",
    "Evidence": "conformance.report",
    "KNOWN_APIS": "conformance.capabilities",
    "LIBRARY_PICKS": "conformance.recordings",
    "Limits": "conformance.limits",
    "LoopbackServer": "conformance.loopback",
    "Outcome": "conformance.registry",
    "ReceivedRequest": "conformance.loopback",
    "Recording": "conformance.recordings",
    "Report": "conformance.report",
    "Scripted": "conformance.loopback",
    "Status": "conformance.report",
    "Target": "conformance.declared",
    "Verdict": "conformance.report",
    "get_check": "conformance.checks",
    "is_factory": "conformance.target",
    "library_recordings": "conformance.recordings",
    "load_recordings": "conformance.recordings",
    "load_target": "conformance.target",
    "refused_url": "conformance.loopback",
    "run": "conformance.runner",
    "run_sync": "conformance.runner",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'conformance' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "API_KEY",
    "CHECKS",
    "CHECK_IDS",
    "KNOWN_APIS",
    "LIBRARY_PICKS",
    "Capabilities",
    "Check",
    "CheckResult",
    "Evidence",
    "Limits",
    "LoopbackServer",
    "Outcome",
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
    "refused_url",
    "run",
    "run_sync",
]
