"""``Session``: one harness run's state — the adapter, its recordings, and every observation.

Checks ask for scenarios; the session runs each distinct scenario once (cached by key), each
against its own loopback server. Once a scenario's stream has ended, the session gives the adapter
its grace (``Limits.grace_s``) to finish the tasks it started and to close the connections it
opened — waiting until both have happened, or the grace is over — and records what was still
running and still open (checks L2 and L1). What counts as closed is what the server saw: the
client closing the connection, not a time (see :mod:`conformance.loopback`). The session cleans the
leftovers and the servers up in :meth:`close`.

All times and bounds are read on the worker thread's :class:`~conformance.clock.ThreadClock`, so the
machine's load lengthens a run without changing what it finds.

The running half (:meth:`start`, :meth:`observe_all`, :meth:`finish`, :meth:`close`) runs in the
watchdog's worker thread (see :mod:`conformance.watchdog`), reporting each step and its bound; the
checks read the session afterwards from the caller's thread. :meth:`abandon` is the caller's way
out when the worker stopped responding: it keeps what was observed, adds what the stuck scenario
had produced so far, and says why the rest was not run.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import inspect
import time
from collections.abc import Callable, Sequence
from typing import Any

from cassettes import header_value
from conformance.clock import ThreadClock
from conformance.loopback import LoopbackServer, ReceivedRequest, Scripted, refused_url
from conformance.observe import Observation, Running, Scenario, Timing, drive
from conformance.plans import replay
from conformance.process.adapter import ProcessAdapter
from conformance.profile_guard import guarded
from conformance.recordings import Feature, Recording
from conformance.target import Capabilities, Need, adapter_name, is_factory
from conformance.text import describe_exception
from conformance.watchdog import Limits
from normalize import AbortController, Context, Model, StreamOptions, UserMessage
from normalize.wire import SSE, WireProfile, framing_for, profile_for

__all__ = ["API_KEY", "Session"]

#: The API key every scenario passes; it must never show up in an event or an error message.
API_KEY = "conformance-test-key-0000"

_HARNESS_TASK_PREFIXES = ("loopback-", "conformance-")
#: asyncio's own task connecting a new subprocess's pipes (unnamed): in a run of an adapter process,
#: the harness's process pool starts processes while scenarios run, so such a task is the harness's.
_SUBPROCESS_PLUMBING = "BaseSubprocessTransport._connect_pipes"
_QUICK_GRACE_S = 0.05
#: How often the grace wait looks for tasks the adapter started meanwhile (seconds).
_SETTLE_POLL_S = 0.05


def _task_label(task: asyncio.Task[Any]) -> str:
    coro = task.get_coro()
    name = getattr(coro, "__qualname__", type(coro).__name__)
    return f"{task.get_name()} ({name})"


def _file_name(key: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in key).strip("_") + ".jsonl"


class Session:
    """The state of one run (see the module docstring)."""

    def __init__(
        self,
        capabilities: Capabilities,
        recordings: Sequence[Recording],
        limits: Limits,
        profile: WireProfile | None = None,
        *,
        process: bool = False,
    ) -> None:
        self.capabilities = capabilities
        #: True when the adapter runs as a process (``conformance.process``): X1 and X2 apply.
        self.process = process
        self.recordings = list(recordings)
        self.limits = limits
        #: The api's wire profile as declared: the one given, else the one declared for the api (None:
        #: nobody declares it).
        self.declared = profile if profile is not None else profile_for(capabilities.api)
        #: The profile every plan reads frames with: the declared one (its functions guarded: they are
        #: the adapter's code), else one whose framing is the recordings' content type (server-sent
        #: events when they name none).
        self.profile = guarded(self.declared) if self.declared else _bare_profile(capabilities, self.recordings)
        #: Whether ``cassettes mutate`` finds the declared profile by the api's name.
        self._installed = self.declared is not None and profile_for(self.declared.api) is self.declared
        #: The request every scenario sends unless it brings its own (fixed, so runs compare equal).
        self.context = Context(messages=[UserMessage(content="Say hello.", timestamp=0)])
        #: The StreamFn, once :meth:`start` resolved the target.
        self.fn: Callable[..., Any] | None = None
        #: Why the target could not be used at all (the adapter's failure), else None.
        self.target_failure: str | None = None
        #: Why some scenarios were not run (budget spent, event loop blocked), else None.
        self.interrupted: str | None = None
        #: A bug of the harness that stopped the scenarios (reported as harness-error), else None.
        self.harness_failure: str | None = None
        #: The reading of the worker thread's clock after which no scenario starts (set before the
        #: thread exists: its clock starts out as time.monotonic(), see ThreadClock).
        self.budget_end = time.monotonic() + limits.run_budget_s
        self._clock: ThreadClock | None = None
        self._observed: dict[str, Observation] = {}
        self._servers: list[LoopbackServer] = []
        self._stray: set[asyncio.Task[Any]] = set()
        #: A task left running or a connection left open was seen: later scenarios wait only briefly.
        self._leak_seen = False
        self._hangs = 0
        self._floods = 0
        self._errors: list[str] = []
        self._running: Scenario | None = None
        self._handle: Running | None = None
        #: The adapter's name (``module.qualname``), read in the worker thread by :meth:`start`.
        self.adapter: str | None = None
        self._stop = False
        self._step: Callable[[str, float], None] = lambda _doing, _seconds: None

    # -- what there is to replay -------------------------------------------------------------------

    @property
    def http(self) -> bool:
        """True when the adapter talks HTTP (and the loopback server is used)."""
        return self.capabilities.http

    def lacks(self, need: Need) -> bool:
        """True when the run cannot provide what a check needs: a capability the adapter does not
        declare, a wire profile that says how to take the terminal marker out (``terminal``) or what
        an in-stream error frame looks like (``stream_error``)."""
        if need == "terminal":
            ending = self.declared.ending if self.declared is not None else None
            return ending is None or ending.strip is None
        if need == "stream_error":
            return self.declared is None or self.declared.stream_error is None
        if need == "process":
            return not self.process
        return self.capabilities.lacks(need)

    def recording(self, feature: Feature = "text") -> Recording | None:
        """The recording picked for ``feature`` (else the first one), or None without recordings."""
        for recording in self.recordings:
            if feature in recording.features:
                return recording
        return self.recordings[0] if self.recordings else None

    def golden(self) -> list[Scenario]:
        """The unmutated replays (one per recording); a single plain call for an adapter without HTTP."""
        if not self.http:
            return [Scenario(key="call")]
        return [replay(recording, wire=self.profile) for recording in self.recordings]

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

    def hung(self) -> list[Observation]:
        """The observations that hung (or blocked the event loop), in the order they ran."""
        return [obs for obs in self.observations if obs.hung]

    def reproduce(self, scenario: Scenario) -> str:
        """How to get the bytes ``scenario`` served: the ``cassettes mutate`` command for each response
        that derives from a recording, or what a generic fault is."""
        if not scenario.served:
            return scenario.fault or "a plain call (no server)"
        by_name = {recording.name: recording for recording in self.recordings}
        parts: list[str] = []
        several = len(scenario.served) > 1
        for number, served in enumerate(scenario.served, start=1):
            recording = by_name.get(served.recording or "")
            if served.fault is not None or recording is None:
                text = served.fault or "a response the harness wrote"
            else:
                out = _file_name(f"{scenario.key}-{number}" if several else scenario.key)
                text = recording.reproduce(served.mutation, out, adapter=self._adapter_note())
            if served.ending:
                text = f"{text} ({served.ending})"
            parts.append(f"response {number}: {text}" if several else text)
        return "; ".join(parts)

    def _adapter_note(self) -> str | None:
        """What ``cassettes mutate`` needs to be told about the api, when it cannot find it itself."""
        declared = self.declared
        if declared is None or self._installed:
            return None
        return f"add --adapter MODULE:ATTR naming the wire profile this run used for api {declared.api!r}"

    # -- running (in the worker thread) -------------------------------------------------------------

    @property
    def clock(self) -> ThreadClock:
        """The worker thread's clock (made on first use, in the worker thread)."""
        if self._clock is None:
            self._clock = ThreadClock()
        return self._clock

    def attach(self, step: Callable[[str, float], None]) -> None:
        """Report each step (what, and within how many seconds) to ``step`` (the watchdog)."""
        self._step = step

    async def start(self, target: Callable[..., Any]) -> bool:
        """Resolve ``target`` into the StreamFn (calling it when it is a factory); False, with
        :attr:`target_failure` set, when the adapter's code failed to give one."""
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(self._on_loop_error)
        self._step("reading the target's name and signature", self.limits.scenario_bound_s(0.0))
        self.adapter = adapter_name(target)
        if not is_factory(target):
            self.fn = target
            return True
        deadline = self.limits.scenario_deadline_s
        self._step(f"calling the factory {self.adapter}", self.limits.scenario_bound_s(deadline))
        task = loop.create_task(_call_factory(target), name="conformance-factory")
        await self.clock.wait({task}, deadline)
        if not task.done():
            task.cancel()
            self._stray.add(task)
            self.target_failure = f"the factory {self.adapter} did not return within {deadline:g} s"
            return False
        problem, fn = task.result()
        if fn is None:
            self.target_failure = problem
            return False
        self.fn = fn
        return True

    async def observe_all(self, scenarios: Sequence[Scenario]) -> None:
        """Run each scenario in turn (sequentially: timing checks must not compete), until the
        budget is spent or the run is abandoned."""
        for scenario in scenarios:
            if self._stop:
                return
            if scenario.key in self._observed:
                continue
            if self.clock.now() >= self.budget_end:
                left = sum(1 for s in scenarios if s.key not in self._observed)
                self.interrupted = (
                    f"the run's budget of {self.limits.run_budget_s:g} s was spent"
                    f"{self._hang_note()}; {left} scenario(s) were not run"
                )
                return
            await self.observe(scenario)

    async def observe(self, scenario: Scenario) -> Observation:
        """Run ``scenario`` (once per key) and return what happened."""
        cached = self._observed.get(scenario.key)
        if cached is not None:
            return cached
        if self.fn is None:
            raise RuntimeError("start() the session first")
        limits = self.limits
        deadline = limits.deadline_after_hangs(self._hangs)
        if isinstance(self.fn, ProcessAdapter):
            # Before the scenario's clock starts: a process's start-up is not the adapter's time.
            self._step("waiting for a ready adapter process", self.fn.start_timeout_s * 2 + 5.0)
            await self.fn.prepare()
        self._step(f"scenario {scenario.key}", limits.scenario_bound_s(deadline))
        server: LoopbackServer | None = None
        base_url = scenario.base_url or ""
        if scenario.served:
            server = LoopbackServer(_responder(scenario.plans))
            await server.__aenter__()
            self._servers.append(server)
            base_url = server.base_url
        elif scenario.refused:
            base_url = refused_url()
        self._errors = []
        self._running = scenario
        before = asyncio.all_tasks()
        controller = AbortController()
        timing = Timing(
            deadline_s=deadline,
            abort_delay_s=limits.abort_delay_s if self.http else 0.0,
            trigger_s=limits.trigger_s,
            unwind_s=limits.unwind_s,
            max_events=limits.events_after_floods(self._floods),
            max_stream_size=limits.stream_size_after_floods(self._floods),
        )
        obs, task = await drive(
            self.fn,
            self._model(scenario, base_url),
            scenario.context or self.context,
            self._options(scenario, controller),
            scenario=scenario,
            controller=controller,
            timing=timing,
            server=server,
            clock=self.clock,
            on_start=self._watch,
        )
        obs.loop_errors = self._errors
        if not task.done():
            self._stray.add(task)
        if obs.hung:
            self._hangs += 1
        if obs.cut_off is not None:
            self._floods += 1
        await self._settle(obs, before)
        if isinstance(self.fn, ProcessAdapter):
            # After the grace: what still runs is killed, and what each process did is on record.
            obs.processes = await self.fn.collect(obs.grace_s)
        if not self._stop:
            self._observed[scenario.key] = obs
        self._running = None
        return obs

    def _watch(self, running: Running) -> None:
        self._handle = running

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

    async def _settle(self, obs: Observation, before: set[asyncio.Task[Any]]) -> None:
        """The scenario's stream has ended: wait until every task the adapter started meanwhile has
        finished and every connection of the scenario is closed, or until the grace is over (on the
        clock: a loaded machine does not shorten it), then record what was left in ``obs``. A
        well-behaved adapter costs nothing here: the wait ends as soon as the server sees the last
        close. Once one leak was seen the run fails anyway; later scenarios then wait only briefly."""
        grace = _QUICK_GRACE_S if self._leak_seen else self.limits.grace_s
        clock = self.clock
        deadline = clock.now() + grace
        loop = asyncio.get_running_loop()
        while True:
            pending = [
                task
                for task in asyncio.all_tasks() - before
                if not task.done()
                and not task.get_name().startswith(_HARNESS_TASK_PREFIXES)
                and not (self.process and _task_label(task).endswith(f"({_SUBPROCESS_PLUMBING})"))
            ]
            open_ = [request for request in obs.requests if not request.connection_closed.is_set()]
            # An adapter process gets the same grace to exit (see conformance.process).
            exits = self.fn.settle_waits() if isinstance(self.fn, ProcessAdapter) else []
            remaining = deadline - clock.now()
            if not (pending or open_ or exits) or remaining <= 0:
                break
            closes = [loop.create_task(r.connection_closed.wait(), name="conformance-close") for r in open_]
            try:
                # Bounded by the poll too: the adapter may start tasks while we wait.
                await asyncio.wait([*pending, *closes, *exits], timeout=min(remaining, _SETTLE_POLL_S))
            finally:
                for waiter in closes:
                    waiter.cancel()
        obs.grace_s = grace
        obs.unreleased = [number for number, r in enumerate(obs.requests, start=1) if r in open_]
        obs.leaked_tasks = sorted(_task_label(task) for task in pending)
        if pending or open_:
            self._leak_seen = True
            self._stray.update(pending)

    def _on_loop_error(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        source = context.get("task") or context.get("future")
        name = source.get_name() if isinstance(source, asyncio.Task) else ""
        if name.startswith(_HARNESS_TASK_PREFIXES):
            loop.default_exception_handler(context)
            return
        exc = context.get("exception")
        detail = f": {describe_exception(exc)}" if isinstance(exc, BaseException) else ""
        self._errors.append(f"{context.get('message', 'event loop error')}{detail}")

    def on_escape(self, exc: BaseException) -> None:
        """An exit or interrupt raised in a task the adapter started escaped the event loop."""
        self._errors.append(f"{describe_exception(exc)} escaped the event loop from a task the adapter started")

    async def finish(self) -> None:
        """After the last scenario: let finished adapter objects be collected, so their loop errors
        are attributed now — unless the run was abandoned: its report is written, and a full
        collection, holding the interpreter's lock, would only slow whatever runs beside this stray
        worker (another run's adapter, its bounds counted on a clock that such waits do not pause)."""
        if self._stop:
            return
        self._step("collecting the adapter's garbage", self.limits.scenario_deadline_s)
        gc.collect()
        await asyncio.sleep(0)

    async def dispose(self) -> None:
        """Await the StreamFn's ``aclose()``, if it has one (an adapter object that owns a client): once,
        after the last scenario, in the event loop the adapter ran in. Whatever it does is bounded and
        never the harness's concern."""
        fn = self.fn
        if fn is None:
            return
        self._step("closing the adapter (its aclose())", self.limits.unwind_s + 1.0)
        task = asyncio.get_running_loop().create_task(_aclose(fn), name="conformance-aclose")
        await self.clock.wait({task}, self.limits.unwind_s)
        if not task.done():
            task.cancel()
            self._stray.add(task)

    async def close(self) -> None:
        """Cancel whatever the adapter left running and stop every server."""
        stray, self._stray = self._stray, set()
        for task in stray:
            task.cancel()
        if stray:
            await self.clock.wait(stray, self.limits.unwind_s)
        for task in stray:
            if task.done() and not task.cancelled():
                with contextlib.suppress(BaseException):
                    task.exception()
        servers, self._servers = self._servers, []
        for server in servers:
            await server.close()

    # -- giving up (in the caller's thread) ---------------------------------------------------------

    def abandon(self, reason: str) -> None:
        """The worker stopped responding: keep what was observed, record the scenario that was running
        as blocked (with what it had produced), and stop running anything more — also stop reading
        the stream of the scenario that was running, should the worker get to it again. Only plain
        data the worker already read is touched here: no code of the adapter's runs."""
        self._stop = True
        running, handle = self._running, self._handle
        if handle is not None:
            handle.stop()
        if running is not None and handle is not None and running.key not in self._observed:
            obs = handle.snapshot()
            obs.hung = True
            obs.blocked = reason
            obs.loop_errors = self._errors
            # No grace can be given (the loop is stuck): what is open now is what was left open.
            obs.unreleased = [n for n, r in enumerate(obs.requests, start=1) if not r.connection_closed.is_set()]
            self._observed[running.key] = obs
        if self.fn is None and self.target_failure is None:
            self.target_failure = reason
        self.interrupted = reason
        if isinstance(self.fn, ProcessAdapter):
            self.fn.kill_all()  # signals only: no code of the adapter's, and the stuck loop is not needed

    def _hang_note(self) -> str:
        hung = self.hung()
        if not hung:
            return ""
        names = ", ".join(obs.scenario.key for obs in hung[:3])
        more = f" and {len(hung) - 3} more" if len(hung) > 3 else ""
        return f" ({len(hung)} scenario(s) hung: {names}{more})"


async def _call_factory(target: Callable[..., Any]) -> tuple[str, Callable[..., Any] | None]:
    """Call the factory; (problem, None) when the adapter's code fails, ("", fn) otherwise."""
    name = adapter_name(target)
    try:
        produced: Any = target()
        if inspect.isawaitable(produced):
            produced = await produced
    except asyncio.CancelledError:
        raise
    except BaseException as exc:  # the adapter's code: its failure, reported
        return f"the factory {name} raised {describe_exception(exc)}", None
    if not callable(produced):
        return f"the factory {name} returned {type(produced).__name__}, not a StreamFn", None
    fn: Callable[..., Any] = produced
    return "", fn


async def _aclose(fn: Callable[..., Any]) -> None:
    try:
        aclose = getattr(fn, "aclose", None)
        if callable(aclose):
            closing = aclose()
            if inspect.isawaitable(closing):
                await closing
    except asyncio.CancelledError:
        raise
    except BaseException:  # the adapter's clean-up failing is not the harness's concern
        pass


def _bare_profile(capabilities: Capabilities, recordings: Sequence[Recording]) -> WireProfile:
    """A profile that only knows the framing: the recordings' content type says which."""
    for recording in recordings:
        for interaction in recording.cassette.interactions:
            framing = framing_for(header_value(interaction.response.headers, "content-type"))
            if framing is not None:
                return WireProfile(api=capabilities.api or "", framing=framing)
    return WireProfile(api=capabilities.api or "", framing=SSE)


def _responder(plans: Sequence[Scripted]) -> Callable[[ReceivedRequest], Scripted]:
    queue = list(plans)

    def respond(_request: ReceivedRequest) -> Scripted:
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return respond
