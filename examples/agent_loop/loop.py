"""An agent loop over any StreamFn, consuming it the way pi-agent-core does.

    agent = Agent(model, tools=[calculator], system_prompt="Be brief.")
    messages = await agent.run("What is 6 * 7?", on_event=print)

The outer loop runs follow-up messages; the inner loop runs one turn per provider request. One turn::

    turn_start
    pending messages                 message_start / message_end each, entering the transcript
    prepare_request(Request)         may replace this request's context, model, thinking level
    the reply                        message_start, message_update ..., message_end
    its tool calls                   tool_execution_start / _update ... / _end, then the results
    finish_turn(CompletedTurn)       "end", "continue" or None (ignored after an error/aborted reply)
    turn_end
    the decision                     end; or another turn; or poll steering, then follow-ups
    prepare_next_turn(NextTurn)      only when another turn follows (never before a run's first):
                                     may replace the transcript, model, thinking level, pending messages

The hooks (:mod:`examples.agent_loop.hooks`) may be plain or ``async`` functions; each gets the object
describing the turn or the request and the run's signal, and returns None (no change, default
scheduling) or its replacement or decision. :func:`~examples.agent_loop.hooks.max_turns`,
:func:`~examples.agent_loop.hooks.max_tool_calls` and :func:`~examples.agent_loop.hooks.finish_turns`
bound a run through ``finish_turn``; ``timeout_s`` aborts the run's signal, so a hung stream or tool
ends too.

Listeners (:meth:`Agent.subscribe`, then the one given to :meth:`Agent.run`) are awaited in that
order, one event at a time, before the loop goes on: the transcript is already updated at
``message_end``, so a listener may persist it there. A listener that raises does not stop the run
(:mod:`examples.agent_loop.listeners`). A tool's ``on_update`` may be called plainly or awaited
(:mod:`examples.agent_loop.progress`).

- **Steering** (:meth:`Agent.steer`): delivered after the current turn's tool results, before the
  next request — and it keeps the run going even when the reply asked for nothing.
- **Follow-up** (:meth:`Agent.follow_up`): delivered only when the agent would otherwise stop.
- Both queues give one message per turn boundary (``"one-at-a-time"``, the default) or all that wait
  (``"all"``): ``steering_mode``, ``follow_up_mode``. The mode holds across runs: steering left
  queued by an earlier run is taken by the next run's first turn, after its prompt, one message (or
  all of them) per turn as the mode says.
- **Abort** (:meth:`Agent.abort`, at any moment, or ``timeout_s``): the stream ends ``aborted`` with
  its partial content, a running tool is stopped and answered ``Operation aborted``, and the run ends
  after that turn's ``turn_end``. After an abort no request is ever sent: an abort that lands before
  a turn's request (in ``prepare_next_turn``, while its pending messages enter, in
  ``prepare_request``, between turns) ends the run at once with ``agent_end`` — no StreamFn call, no
  reply in the transcript, no ``turn_end`` for a turn that made no request; the queued steering and
  follow-up messages that had not entered the transcript go back to the front of their queue.
- A reply ending ``error`` or ``aborted`` ends the run after ``turn_end``; the message stays in the
  transcript (``normalize.transform_messages`` drops it when the transcript is sent again), and
  none of its tool calls run.
- A hook that raises an ``Exception`` ends the run with an **error reply**: an assistant message with
  no content, ``stop_reason`` ``"error"`` (``"aborted"`` when the run was aborted), the exception's
  message as ``error_message``, appended after whatever the turn had added (the turn's pending
  messages enter first), then ``message_start``, ``message_end``, ``turn_end`` (with the turn's tool
  results, if it had any) and ``agent_end``. :meth:`Agent.run` returns normally.
- Tool calls run concurrently; their results are appended in the assistant message's order. A
  reply cut by the output limit (``length``) has its calls answered with an error, never run: their
  arguments may be incomplete.

:meth:`Agent.run` returns the messages this run added that are still in the transcript when it ends,
in transcript order (``agent_end`` carries the same list): its prompt, steering and follow-up
messages, replies and tool results — minus any a ``prepare_next_turn`` replacement dropped (a
compaction); a summary such a hook put into the transcript is the hook's, not the run's.

The loop never raises for what a provider, a tool, a hook or a listener does wrong (the StreamFn is
called through ``streamfns.guarded_call``; a tool's ``Exception``, or a ``CancelledError`` it raises
by itself, is an error result the model sees). :meth:`Agent.run` refuses to start (``RuntimeError``)
while running, and when there is nothing to continue from: ``Cannot continue: no messages in
context``, ``Cannot continue from message role: assistant``. Two things end a run by propagating out
of :meth:`Agent.run`, each only after the stream has been closed, the other tools cancelled and
awaited (each given ``tools.CLEANUP_S`` to clean up), the run's signal aborted and the agent reset
(``running`` is False, a new run may start):

- a cancellation of the task awaiting :meth:`Agent.run` (its ``CancelledError``);
- a ``KeyboardInterrupt`` or ``SystemExit`` (any ``BaseException`` that is not an ``Exception``)
  from a tool, a hook or a listener: an interrupt is the program's, not a failure to show the model,
  so it goes through — raised as itself from ``await agent.run(...)``, never thrown out of the event
  loop with the run left suspended. It wins over an abort and a cancellation.

No ``turn_end`` or ``agent_end`` follows; the transcript keeps the reply, whose unanswered tool calls
``normalize.transform_messages`` answers ``No result provided`` when the transcript is sent again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Literal

from examples.agent_loop.events import (
    AgentEnd,
    AgentStart,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    ToolExecutionEnd,
    ToolExecutionStart,
    TurnEnd,
    TurnStart,
)
from examples.agent_loop.hooks import (
    CompletedTurn,
    FinishDecision,
    FinishTurn,
    NextTurn,
    PrepareNextTurn,
    PrepareRequest,
    Request,
    resolved,
)
from examples.agent_loop.listeners import Emit, Listener, emitter
from examples.agent_loop.progress import ToolProgress
from examples.agent_loop.tools import AgentTool, ToolInterrupt, error_result, prepare_tool_call, run_tool_call
from normalize import (
    AbortController,
    AbortSignal,
    AssistantMessage,
    Context,
    DoneEvent,
    ErrorEvent,
    ErrorInfo,
    Message,
    Model,
    StartEvent,
    StreamOptions,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from normalize.stream import classify_exception
from streamfns import StreamFn, guarded_call, stream

__all__ = ["LENGTH_TEXT", "Agent", "QueueMode"]

#: How many queued messages a turn boundary takes: one, or all that wait.
QueueMode = Literal["one-at-a-time", "all"]

LENGTH_TEXT = (
    'Tool call "{name}" was not executed: the response hit the output token limit, so its arguments '
    "may be truncated. Re-issue the tool call with complete arguments."
)


def _as_messages(prompt: str | Message | Sequence[Message]) -> list[Message]:
    if isinstance(prompt, str):
        return [UserMessage(content=prompt)]
    if isinstance(prompt, Sequence):
        return list(prompt)
    return [prompt]


@dataclasses.dataclass(slots=True)
class _Run:
    """One run's state: its signal and listeners, what it added, where its queued messages came from."""

    signal: AbortSignal
    emit: Emit
    #: id() of each message taken from a queue → that queue (an abort puts undelivered ones back).
    origins: dict[int, list[Message]] = dataclasses.field(default_factory=dict[int, list[Message]])
    added: list[Message] = dataclasses.field(default_factory=list[Message])
    turns: int = 0
    tool_calls: int = 0


@dataclasses.dataclass(slots=True)
class _Turn:
    """One turn's progress, for ending it honestly wherever it stops."""

    pending: list[Message]
    started: bool = False  # turn_start was emitted
    entered: int = 0  # how many of ``pending`` entered the transcript
    results: list[ToolResultMessage] = dataclasses.field(default_factory=list[ToolResultMessage])


#: What a finished turn leaves for the decision: its reply, the calls it made, ``finish_turn``'s answer.
_Ended = tuple[AssistantMessage, list[ToolCall], FinishDecision | None]


class Agent:
    """A transcript, a model, tools and a StreamFn (``streamfns.stream`` by default).

    ``messages`` is the transcript; it grows with every run. ``options`` are passed to every
    request (the loop adds its abort signal). The hooks, the queue modes and ``timeout_s`` (seconds
    after which a run's signal is aborted) are described in the module docstring.
    """

    def __init__(
        self,
        model: Model,
        *,
        tools: Iterable[AgentTool] = (),
        system_prompt: str | None = None,
        stream_fn: StreamFn = stream,
        options: StreamOptions | None = None,
        messages: Iterable[Message] = (),
        prepare_next_turn: PrepareNextTurn | None = None,
        prepare_request: PrepareRequest | None = None,
        finish_turn: FinishTurn | None = None,
        steering_mode: QueueMode = "one-at-a-time",
        follow_up_mode: QueueMode = "one-at-a-time",
        timeout_s: float | None = None,
    ) -> None:
        self.model = model
        self.tools = {tool.name: tool for tool in tools}
        self.system_prompt = system_prompt
        self.stream_fn = stream_fn
        self.options = options or StreamOptions()
        self.messages: list[Message] = list(messages)
        self.prepare_next_turn = prepare_next_turn
        self.prepare_request = prepare_request
        self.finish_turn = finish_turn
        self.steering_mode: QueueMode = steering_mode
        self.follow_up_mode: QueueMode = follow_up_mode
        self.timeout_s = timeout_s
        self._listeners: list[Listener] = []
        self._steering: list[Message] = []
        self._follow_ups: list[Message] = []
        self._controller: AbortController | None = None

    # -- controls -------------------------------------------------------------------------------

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Add a listener to every run (awaited in registration order, before ``run()``'s own);
        returns the function that removes it."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def steer(self, message: str | Message) -> None:
        """Queue a message for the next request of the current run (after this turn's tool results);
        with no run going on, for the first turn of the next run, after its prompt."""
        self._steering += _as_messages(message)

    def follow_up(self, message: str | Message) -> None:
        """Queue a message to send when the agent would otherwise stop."""
        self._follow_ups += _as_messages(message)

    @property
    def queued(self) -> tuple[list[Message], list[Message]]:
        """Copies of the steering and the follow-up queue (what waits for a turn boundary)."""
        return list(self._steering), list(self._follow_ups)

    def abort(self, reason: str | None = None) -> None:
        """Abort the current run (does nothing when no run is going on)."""
        if self._controller is not None:
            self._controller.abort(reason)

    @property
    def running(self) -> bool:
        """True while :meth:`run` is going on."""
        return self._controller is not None

    # -- the loop -------------------------------------------------------------------------------

    async def run(self, prompt: str | Message | Sequence[Message], on_event: Listener | None = None) -> list[Message]:
        """Run until the model stops asking for tools and no message waits; returns the messages this
        run added that are still in the transcript, in its order (see the module docstring).

        ``prompt`` may be empty (``[]``): the run then continues from the transcript as it is (for
        example after messages were added by hand), or with the queued messages. With neither, it
        raises ``RuntimeError`` when the transcript is empty (``Cannot continue: no messages in
        context``) or ends with an assistant message (``Cannot continue from message role:
        assistant``) — nothing is sent.
        """
        if self._controller is not None:
            raise RuntimeError("the agent is already running; use steer() or follow_up()")
        prompted = _as_messages(prompt)
        if not prompted and not self._steering and not self._follow_ups:
            if not self.messages:
                raise RuntimeError("Cannot continue: no messages in context")
            if self.messages[-1].role == "assistant":
                raise RuntimeError(f"Cannot continue from message role: {self.messages[-1].role}")
        controller = self._controller = AbortController()
        run = _Run(controller.signal, emitter(lambda: [*self._listeners, *([on_event] if on_event else [])]))
        # The prompt first, then steering an earlier run left queued — taken as its mode says, like any
        # steering poll — or, with neither, the first follow-up.
        pending = [*prompted, *self._take(self._steering, self.steering_mode, run)]
        if not pending:
            pending = self._take(self._follow_ups, self.follow_up_mode, run)
        timer = None
        if self.timeout_s is not None:
            # An abort, not only a decision: a stream or a tool that hangs is ended by it.
            reason = f"the run timed out after {self.timeout_s:g} s"
            timer = asyncio.get_running_loop().call_later(self.timeout_s, controller.abort, reason)
        try:
            await run.emit(AgentStart())
            await self._turns(pending, run)
            kept = self._kept(run.added)
            await run.emit(AgentEnd(messages=kept))
        except BaseException as exc:
            # Whatever still holds the signal (a tool that ignored cancellation and was left to finish)
            # learns that the run is over.
            controller.abort(f"the run ended: {type(exc).__name__}")
            raise
        finally:
            if timer is not None:
                timer.cancel()
            self._controller = None
        return kept

    def _take(self, queue: list[Message], mode: QueueMode, run: _Run) -> list[Message]:
        """What one turn boundary takes from ``queue`` (removed from it, its origin remembered)."""
        taken = queue[:] if mode == "all" else queue[:1]
        del queue[: len(taken)]
        for message in taken:
            run.origins[id(message)] = queue
        return taken

    def _put_back(self, undelivered: list[Message], run: _Run) -> None:
        """Queued messages that never entered the transcript go back to the front of their queue, in order."""
        for queue in (self._steering, self._follow_ups):
            queue[:0] = [message for message in undelivered if run.origins.get(id(message)) is queue]

    def _kept(self, added: list[Message]) -> list[Message]:
        ours = {id(message) for message in added}
        return [message for message in self.messages if id(message) in ours]

    async def _turns(self, pending: list[Message], run: _Run) -> None:
        while True:  # the outer loop: the prompt, then each follow-up
            while True:  # the inner loop: one provider request per turn
                turn = _Turn(pending)
                try:
                    ended = await self._turn(turn, run)
                except Exception as exc:  # a hook raised: the run ends with an error reply saying so
                    await self._fail(turn, exc, run)
                    return
                if ended is None:  # aborted before the request: nothing is sent
                    self._put_back(turn.pending[turn.entered :], run)
                    return
                reply, calls, decision = ended
                if reply.stop_reason in ("error", "aborted") or run.signal.aborted or decision == "end":
                    return  # an abort after the reply (say, during its tools) sends nothing more
                pending = self._take(self._steering, self.steering_mode, run)
                if not calls and not pending and decision != "continue":
                    break  # the model is done and nobody steered: only follow-ups can go on
            pending = self._take(self._follow_ups, self.follow_up_mode, run)
            if not pending:
                return

    async def _turn(self, turn: _Turn, run: _Run) -> _Ended | None:
        """One turn, up to its ``turn_end``; None when an abort ended it before its request."""
        if run.turns:
            # Only between turns: after the previous turn's ``turn_end``, once the loop goes on — never
            # before a run's first turn (pi-agent-core's order; a run starts from the transcript as given).
            turn.pending = await self._next_turn(turn.pending, run.signal)
            if run.signal.aborted:
                return None
        await run.emit(TurnStart())
        turn.started = True
        await self._enter(turn, run)
        if run.signal.aborted:
            return None
        request = Request(context=self._context(), model=self.model, thinking_level=self.options.reasoning)
        if self.prepare_request is not None:
            request = await resolved(self.prepare_request(request, run.signal)) or request
        if run.signal.aborted:  # checked right before the call: after an abort nothing is sent
            return None
        reply = await self._reply(request, run)
        failed = reply.stop_reason in ("error", "aborted")
        calls = [] if failed else [block for block in reply.content if isinstance(block, ToolCall)]
        turn.results = await self._run_tools(reply, calls, run)
        for result in turn.results:
            self._add(result, run.added)
            await run.emit(MessageStart(result))
            await run.emit(MessageEnd(result))
        run.turns, run.tool_calls = run.turns + 1, run.tool_calls + len(calls)
        decision: FinishDecision | None = None
        if self.finish_turn is not None:
            completed = CompletedTurn(reply, turn.results, turns=run.turns, tool_calls=run.tool_calls)
            decision = await resolved(self.finish_turn(completed, run.signal))
        await run.emit(TurnEnd(message=reply, tool_results=turn.results))
        return reply, calls, decision

    async def _enter(self, turn: _Turn, run: _Run) -> None:
        """The turn's pending messages enter the transcript, one by one, until they are in or an abort."""
        while turn.entered < len(turn.pending) and not run.signal.aborted:
            message = turn.pending[turn.entered]
            turn.entered += 1
            self._add(message, run.added)
            await run.emit(MessageStart(message))
            await run.emit(MessageEnd(message))

    async def _fail(self, turn: _Turn, exc: Exception, run: _Run) -> None:
        """End the turn with an error reply carrying ``exc``'s message (pi-agent-core's last-resort net)."""
        if not turn.started:
            await run.emit(TurnStart())
            turn.started = True
        await self._enter(turn, run)  # the messages the failed turn was for: the reply answers them
        self._put_back(turn.pending[turn.entered :], run)  # an abort stopped them: they wait again
        aborted = run.signal.aborted
        reply = AssistantMessage.empty_for(self.model)
        reply.stop_reason = "aborted" if aborted else "error"
        reply.error_message = str(exc) or type(exc).__name__
        reply.error_info = ErrorInfo.of("aborted" if aborted else classify_exception(exc))
        self._add(reply, run.added)
        await run.emit(MessageStart(reply))
        await run.emit(MessageEnd(reply))
        await run.emit(TurnEnd(message=reply, tool_results=turn.results))

    async def _next_turn(self, pending: list[Message], signal: AbortSignal) -> list[Message]:
        """The pending messages, after ``prepare_next_turn`` (whose replacement becomes the agent's state)."""
        if self.prepare_next_turn is None:
            return pending
        turn = NextTurn(
            context=self._context(), model=self.model, thinking_level=self.options.reasoning, messages=list(pending)
        )
        replaced = await resolved(self.prepare_next_turn(turn, signal))
        if replaced is None:
            return pending
        self.model, self.system_prompt = replaced.model, replaced.context.system_prompt
        self.options = dataclasses.replace(self.options, reasoning=replaced.thinking_level)
        self.messages[:] = replaced.context.messages
        return list(replaced.messages)

    def _context(self) -> Context:
        return Context(
            system_prompt=self.system_prompt,
            tools=[tool.declaration for tool in self.tools.values()] or None,
            messages=list(self.messages),
        )

    def _add(self, message: Message, added: list[Message]) -> None:
        self.messages.append(message)
        added.append(message)

    async def _reply(self, request: Request, run: _Run) -> AssistantMessage:
        """Stream one assistant reply into the transcript, emitting its message events."""
        options = dataclasses.replace(self.options, signal=run.signal, reasoning=request.thinking_level)
        events = guarded_call(self.stream_fn, request.model, request.context, options)
        partial: AssistantMessage | None = None
        try:
            async for event in events:
                if isinstance(event, StartEvent):
                    partial = event.partial
                    self._add(partial, run.added)
                    await run.emit(MessageStart(partial))
                elif partial is not None and not isinstance(event, DoneEvent | ErrorEvent):
                    await run.emit(MessageUpdate(message=partial, event=event))
        finally:
            await events.aclose()  # a no-op after the terminal; closes the response if we are cancelled
        final = await events.result()
        if partial is None:  # a StreamFn that never started: the message still enters the transcript
            self._add(final, run.added)
            await run.emit(MessageStart(final))
        elif final is not partial:  # streamfns returns the partial itself; another stream might not
            _replace(self.messages, partial, final)
            _replace(run.added, partial, final)
        await run.emit(MessageEnd(final))
        return final

    async def _run_tools(self, reply: AssistantMessage, calls: list[ToolCall], run: _Run) -> list[ToolResultMessage]:
        """Answer every call: refused ones at once, the others run concurrently; results in call order."""
        results: list[ToolResultMessage | None] = [None] * len(calls)
        running: list[asyncio.Future[tuple[int, ToolResultMessage, float]]] = []
        reporters: list[ToolProgress] = []
        try:
            for index, call in enumerate(calls):
                await run.emit(ToolExecutionStart(tool_call_id=call.id, tool_name=call.name, arguments=call.arguments))
                if reply.stop_reason == "length":
                    prepared: AgentTool | str = LENGTH_TEXT.format(name=call.name)
                else:
                    prepared = prepare_tool_call(self.tools, call, run.signal)
                if isinstance(prepared, str):
                    refused = results[index] = error_result(call, prepared)
                    await run.emit(ToolExecutionEnd(tool_call_id=call.id, tool_name=call.name, result=refused))
                else:
                    reporter = ToolProgress(call, run.emit)
                    reporters.append(reporter)
                    work = run_tool_call(prepared, call, run.signal, reporter)
                    running.append(asyncio.ensure_future(_timed(index, work, reporter)))
            for finished in asyncio.as_completed(running):
                try:
                    index, result, duration_ms = await finished
                except ToolInterrupt:
                    break  # raised as itself below, once the other tools are cancelled and awaited
                results[index] = result
                end = ToolExecutionEnd(result.tool_call_id, result.tool_name, result, duration_ms=duration_ms)
                await run.emit(end)
        finally:
            for task in running:
                task.cancel()
            if running:
                await asyncio.wait(running)
            deliveries = [delivery for reporter in reporters for delivery in reporter.cancel()]
            if deliveries:
                await asyncio.wait(deliveries)
            interrupt = _first_interrupt([*running, *deliveries])
            if interrupt is not None:
                # As itself, in the run's own task (the first in call order, if several tools raised
                # one); it wins over a cancellation on its way out, as in run_tool_call.
                raise interrupt.error
        return [result for result in results if result is not None]


def _replace(messages: list[Message], old: Message, new: Message) -> None:
    for index, message in enumerate(messages):
        if message is old:
            messages[index] = new
            return


async def _timed(
    index: int, work: Awaitable[ToolResultMessage], reporter: ToolProgress
) -> tuple[int, ToolResultMessage, float]:
    """The call's index, its result and how long it took in milliseconds (a monotonic clock: never < 0),
    once every update the tool reported has been delivered."""
    started = time.perf_counter()
    try:
        result = await work
    except (Exception, asyncio.CancelledError):
        raise
    except BaseException as exc:  # raised as itself it would leave this task through the event loop
        raise ToolInterrupt(exc) from None
    duration_ms = (time.perf_counter() - started) * 1000
    await reporter.close()  # the tool's updates, reported plainly or awaited, all precede its end
    return index, result, duration_ms


def _first_interrupt(tasks: Sequence[asyncio.Future[Any]]) -> ToolInterrupt | None:
    """The first interrupt among the finished ``tasks``, in call order; every task's outcome is
    retrieved, so a second interrupt (dropped: one goes through) is never reported as unretrieved."""
    found: ToolInterrupt | None = None
    for task in tasks:
        failure = None if task.cancelled() else task.exception()
        if found is None and isinstance(failure, ToolInterrupt):
            found = failure
    return found
