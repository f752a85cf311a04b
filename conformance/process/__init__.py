"""Adapters written in any language, judged by the harness: the adapter process protocol.

An adapter runs as a child process that speaks ``streamfns-process/1`` (docs/process-protocol.md): it
says ``ready``, reads one JSON request on stdin, writes the stream's events as JSON lines on stdout,
and takes an abort as a line on stdin or a signal. :class:`ProcessAdapter` is such a process as a
StreamFn — a faithful pipe, which the harness judges like any adapter, plus the process's own
conduct (checks X1 and X2). :func:`process_target` makes the :class:`~conformance.Target` the command
line's ``conformance run --exec 'node my_adapter.mjs' --api …`` runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from conformance.process.adapter import AbortStyle, ProcessAdapter, ProcessStream
from conformance.process.child import Fault, ProcessReport
from conformance.process.protocol import ABORT_LINE, PROTOCOL_VERSION, READY, options_json, request_line
from conformance.target import Capabilities, Target

__all__ = [
    "ABORT_LINE",
    "PROTOCOL_VERSION",
    "READY",
    "AbortStyle",
    "Fault",
    "ProcessAdapter",
    "ProcessFactory",
    "ProcessReport",
    "ProcessStream",
    "options_json",
    "process_target",
    "request_line",
]


@dataclass(frozen=True, slots=True)
class ProcessFactory:
    """A zero-argument factory of :class:`ProcessAdapter` s like ``template`` (a target's
    ``stream_fn``: each run gets processes of its own)."""

    template: ProcessAdapter

    def __call__(self) -> ProcessAdapter:
        """A new adapter (its processes start on the first call)."""
        return self.template.fresh()


def process_target(
    command: str | Sequence[str],
    *,
    api: str | None = None,
    capabilities: Capabilities | None = None,
    name: str | None = None,
    pool_size: int = 4,
    start_timeout_s: float = 20.0,
    abort: AbortStyle = "line",
    abort_grace_s: float = 2.0,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
) -> Target:
    """The target that runs ``command`` as an adapter process, once per call (a factory: each run gets
    processes of its own). ``capabilities`` default to every feature of ``api``
    (:meth:`Capabilities.every_feature`, as a full vendor adapter has); ``name`` to the command. The
    other arguments are :class:`ProcessAdapter`'s."""
    if capabilities is None:
        capabilities = Capabilities.every_feature(api)
    elif api is not None and capabilities.api != api:
        raise ValueError(f"api {api!r} and capabilities.api {capabilities.api!r} disagree")
    # Built here, so that a bad command or bound is refused now, not in the run; never called itself.
    template = ProcessAdapter(
        command,
        pool_size=pool_size,
        start_timeout_s=start_timeout_s,
        abort=abort,
        abort_grace_s=abort_grace_s,
        env=env,
        cwd=cwd,
    )
    return Target(ProcessFactory(template), capabilities, name=name or f"process: {template.command}")
