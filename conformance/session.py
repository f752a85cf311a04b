"""``Session``: one harness run's state — the adapter, its recordings, and every observation.

Checks ask for scenarios; the session runs each distinct scenario once (cached by key), each
against its own loopback server, and keeps the servers open until the end of the run so that
"was the connection released?" can be asked afterwards. It also records the tasks an adapter
left running after its stream ended, and cleans them and the servers up in :meth:`close`.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
from collections.abc import Callable, Sequence
from typing import Any

from conformance.capabilities import Capabilities
from conformance.limits import Limits
from conformance.loopback import LoopbackServer, ReceivedRequest, Scripted, refused_url
from conformance.observe import Observation, Scenario, drive
from conformance.plans import plan
from conformance.recordings import Feature, Recording
from normalize import AbortController, Context, Model, StreamOptions, UserMessage

__all__ = ["API_KEY", "Session"]

#: The API key every scenario passes; it must never show up in an event or an error message.
API_KEY = "conformance-test-key-0000"

_HARNESS_TASK_PREFIXES = ("loopback-", "conformance-")
_QUICK_GRACE_S = 0.05


def _task_label(task: asyncio.Task[Any]) -> str:
    coro = task.get_coro()
    name = getattr(coro, "__qualname__", type(coro).__name__)
    return f"{task.get_name()} ({name})"


class Session:
    """The state of one run (see the module docstring)."""

    def __init__(
        self,
        fn: Callable[..., Any],
        capabilities: Capabilities,
        recordings: Sequence[Recording],
        limits: Limits,
    ) -> None:
        self.fn = fn
        self.capabilities = capabilities
        self.recordings = list(recordings)
        self.limits = limits
        #: The request every scenario sends unless it brings its own (fixed, so runs compare equal).
        self.context = Context(messages=[UserMessage(content="Say hello.", timestamp=0)])
        self._observed: dict[str, Observation] = {}
        self._servers: list[LoopbackServer] = []
        self._stray: set[asyncio.Task[Any]] = set()
        self._leak_seen = False
        self._unreleased: list[tuple[Observation, ReceivedRequest]] | None = None
        self._current: Observation | None = None
        self._handler_installed = False
        self._previous_handler: Any = None

    # -- what there is to replay -------------------------------------------------------------------

    @property
    def http(self) -> bool:
        """True when the adapter talks HTTP (and the loopback server is used)."""
        return self.capabilities.http

    def recording(self, feature: Feature = "text") -> Recording | None:
        """The recording picked for ``feature`` (else the first one), or None without recordings."""
        for recording in self.recordings:
            if recording.feature == feature:
                return recording
        return self.recordings[0] if self.recordings else None

    def golden(self) -> list[Scenario]:
        """The unmutated replays (one per recording); a single plain call for an adapter without HTTP."""
        if not self.http:
            return [Scenario(key="call")]
        return [Scenario(key=r.name, recording=r.name, plans=(plan(r.cassette),)) for r in self.recordings]

    @property
    def observations(self) -> list[Observation]:
        """Every observation so far, in the order the scenarios ran."""
        return list(self._observed.values())

    def observed(self, scenario: Scenario) -> Observation | None:
        """The cached observation of ``scenario``, if it ran."""
        return self._observed.get(scenario.key)

    def observations_of(self, scenarios: Sequence[Scenario]) -> list[Observation]:
        """The observations of ``scenarios``, in order; ``RuntimeError`` if one has not run."""
        found: list[Observation] = []
        for scenario in scenarios:
            obs = self._observed.get(scenario.key)
            if obs is None:
                raise RuntimeError(f"scenario {scenario.key} did not run")
            found.append(obs)
        return found

    # -- running ----------------------------------------------------------------------------------

    def _model(self, scenario: Scenario, base_url: str) -> Model:
        recording = next((r for r in self.recordings if r.name == scenario.recording), None)
        recording = recording or self.recording()
        caps = self.capabilities
        return Model(
            id=recording.model_id if recording else "conformance-model",
            api=caps.api or "unknown",
            provider="conformance",
            base_url=base_url,
            reasoning=caps.thinking,
            input=["text", "image"] if caps.images else ["text"],
            max_tokens=1024,
        )

    def _options(self, scenario: Scenario, controller: AbortController) -> StreamOptions:
        idle = scenario.idle_timeout_s or self.limits.idle_timeout_s
        return StreamOptions(
            signal=controller.signal,
            api_key=API_KEY,
            timeout=idle,
            connect_timeout=idle,
            max_retries=scenario.max_retries,
            max_retry_delay_s=self.limits.max_retry_delay_s,
        )

    async def observe(self, scenario: Scenario) -> Observation:
        """Run ``scenario`` (once per key) and return what happened."""
        cached = self._observed.get(scenario.key)
        if cached is not None:
            return cached
        server: LoopbackServer | None = None
        base_url = scenario.base_url or ""
        if scenario.plans:
            server = LoopbackServer(_responder(scenario.plans))
            await server.__aenter__()
            self._servers.append(server)
            base_url = server.base_url
        elif scenario.refused:
            base_url = refused_url()
        self._install_loop_handler()
        before = asyncio.all_tasks()
        controller = AbortController()
        obs, task = await drive(
            self.fn,
            self._model(scenario, base_url),
            scenario.context or self.context,
            self._options(scenario, controller),
            scenario=scenario,
            controller=controller,
            abort_delay_s=self.limits.abort_delay_s if self.http else 0.0,
            deadline_s=self.limits.scenario_deadline_s,
            server=server,
        )
        self._current = obs
        if not task.done():
            self._stray.add(task)
        obs.leaked_tasks = await self._leftover_tasks(before)
        self._observed[scenario.key] = obs
        return obs

    async def observe_all(self, scenarios: Sequence[Scenario]) -> list[Observation]:
        """Run each scenario in turn (sequentially: timing checks must not compete)."""
        return [await self.observe(scenario) for scenario in scenarios]

    async def _leftover_tasks(self, before: set[asyncio.Task[Any]]) -> list[str]:
        # Once one leak was seen the check fails anyway; later scenarios then wait only briefly.
        grace = _QUICK_GRACE_S if self._leak_seen else self.limits.grace_s
        deadline = time.monotonic() + grace
        while True:
            pending = [
                task
                for task in asyncio.all_tasks() - before
                if not task.done() and not task.get_name().startswith(_HARNESS_TASK_PREFIXES)
            ]
            if not pending or time.monotonic() >= deadline:
                break
            await asyncio.sleep(0.01)
        if pending:
            self._leak_seen = True
            self._stray.update(pending)
        return sorted(_task_label(task) for task in pending)

    def _install_loop_handler(self) -> None:
        if self._handler_installed:
            return
        loop = asyncio.get_running_loop()
        self._previous_handler = loop.get_exception_handler()
        loop.set_exception_handler(self._on_loop_error)
        self._handler_installed = True

    def _on_loop_error(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        source = context.get("task") or context.get("future")
        name = source.get_name() if isinstance(source, asyncio.Task) else ""
        if self._current is None or name.startswith(_HARNESS_TASK_PREFIXES):
            if self._previous_handler is not None:
                self._previous_handler(loop, context)
            else:
                loop.default_exception_handler(context)
            return
        exc = context.get("exception")
        detail = f": {type(exc).__name__}: {exc}" if isinstance(exc, BaseException) else ""
        self._current.loop_errors.append(f"{context.get('message', 'event loop error')}{detail}")

    async def settle(self) -> None:
        """Let finished adapter objects be collected, so their loop errors are attributed now."""
        gc.collect()
        await asyncio.sleep(0)

    async def unreleased(self) -> list[tuple[Observation, ReceivedRequest]]:
        """Requests whose connection the adapter never closed (waiting one grace period in total)."""
        if self._unreleased is None:
            deadline = time.monotonic() + self.limits.grace_s
            waiting = [(obs, request) for obs in self.observations for request in obs.requests]
            for _, request in waiting:
                remaining = deadline - time.monotonic()
                if request.connection_closed.is_set() or remaining <= 0:
                    continue
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(remaining):
                        await request.connection_closed.wait()
            self._unreleased = [(obs, r) for obs, r in waiting if not r.connection_closed.is_set()]
        return self._unreleased

    async def close(self) -> None:
        """Cancel whatever the adapter left running and stop every server."""
        stray, self._stray = self._stray, set()
        for task in stray:
            task.cancel()
        if stray:
            await asyncio.wait(stray, timeout=1.0)
        for task in stray:
            if task.done() and not task.cancelled():
                with contextlib.suppress(BaseException):
                    task.exception()
        servers, self._servers = self._servers, []
        for server in servers:
            await server.close()
        if self._handler_installed:
            asyncio.get_running_loop().set_exception_handler(self._previous_handler)
            self._handler_installed = False


def _responder(plans: Sequence[Scripted]) -> Callable[[ReceivedRequest], Scripted]:
    queue = list(plans)

    def respond(_request: ReceivedRequest) -> Scripted:
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return respond
