"""An agent loop over any StreamFn, consuming it the way pi-agent-core does.

    agent = Agent(model, tools=[calculator], system_prompt="Be brief.")
    messages = await agent.run("What is 6 * 7?", on_event=print)

The outer loop runs follow-up messages; the inner loop runs one turn per provider request. One turn::

    prepare_next_turn(NextTurn)      may replace the transcript, model, thinking level, pending messages
    turn_start
    pending messages                 message_start / message_end each, entering the transcript
    prepare_request(Request)         may replace this request's context, model, thinking level
    the reply                        message_start, message_update ..., message_end
    its tool calls                   tool_execution_start / _update ... / _end, then the results
    finish_turn(CompletedTurn)       "end", "continue" or None (ignored after an error/aborted reply)
    turn_end
    the decision                     end; or another turn; or poll steering, then follow-ups

Every hook may be a plain or an ``async`` function; each gets the object describing the turn or the
request and the run's signal, and returns None (no change, default scheduling) or its replacement or
decision. :func:`max_turns`, :func:`max_tool_calls` and :func:`finish_turns` bound a run through
``finish_turn``; ``timeout_s`` aborts the run's signal, so a hung stream or tool ends too.

Listeners (:meth:`Agent.subscribe`, then the one given to :meth:`Agent.run`) are awaited in that
order, one event at a time, before the loop goes on: the transcript is already updated at
``message_end``, so a listener may persist it there.

- **Steering** (:meth:`Agent.steer`): delivered after the current turn's tool results, before the
  next request — and it keeps the run going even when the reply asked for nothing.
- **Follow-up** (:meth:`Agent.follow_up`): delivered only when the agent would otherwise stop.
- Both queues give one message per turn boundary (``"one-at-a-time"``, the default) or all that wait
  (``"all"``): ``steering_mode``, ``follow_up_mode``.
- **Abort** (:meth:`Agent.abort`, at any moment, or ``timeout_s``): the stream ends ``aborted`` with
  its partial content, a running tool is stopped and answered ``Operation aborted``, and the run ends
  after that turn's ``turn_end``: no further request is made.
- A reply ending ``error`` or ``aborted`` ends the run after ``turn_end``; the message stays in the
  transcript (``normalize.transform_messages`` drops it when the transcript is sent again), and
  none of its tool calls run.
- Tool calls run concurrently; their results are appended in the assistant message's order. A
  reply cut by the output limit (``length``) has its calls answered with an error, never run: their
  arguments may be incomplete.

The loop never raises for what a provider or a tool does wrong (the StreamFn is called through
``streamfns.guarded_call``; a tool's ``Exception``, or a ``CancelledError`` it raises by itself, is
an error result the model sees). :meth:`Agent.run` refuses to start (``RuntimeError``) while running,
and when there is nothing to continue from: ``Cannot continue: no messages in context``, ``Cannot
continue from message role: assistant``. Three things end a run by propagating out of :meth:`Agent.run`,
each only after the stream has been closed, the other tools cancelled and awaited (each given
``tools.CLEANUP_S`` to clean up), the run's signal aborted and the agent reset (``running`` is
False, a new run may start):

- an exception raised by a listener or a hook;
- a cancellation of the task awaiting :meth:`Agent.run` (its ``CancelledError``);
- a tool's ``KeyboardInterrupt`` or ``SystemExit`` (any ``BaseException`` that is not an
  ``Exception``): an interrupt is the program's, not a tool failure to show the model, so it goes
  through — raised as itself from ``await agent.run(...)``, never thrown out of the event loop with
  the run left suspended. It wins over an abort, a cancellation and a listener's exception.

No ``turn_end`` or ``agent_end`` follows; the transcript keeps the reply, whose unanswered tool calls
``normalize.transform_messages`` answers ``No result provided`` when the transcript is sent again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Literal, TypeVar, cast

from examples.agent_loop.events import (
    AgentEnd,
    AgentEvent,
    AgentStart,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    TurnEnd,
    TurnStart,
)
from examples.agent_loop.tools import (
    AgentTool,
    OnUpdate,
    ToolInterrupt,
    as_content,
    error_result,
    prepare_tool_call,
    run_tool_call,
)
from normalize import (
    AbortController,
    AbortSignal,
    AssistantMessage,
    Context,
    DoneEvent,
    ErrorEvent,
    Message,
    Model,
    StartEvent,
    StreamOptions,
    ThinkingLevel,
    ToolCall,
    ToolResultContent,
    ToolResultMessage,
    UserMessage,
)
from streamfns import StreamFn, guarded_call, stream

__all__ = [
    "LENGTH_TEXT",
    "Agent",
    "CompletedTurn",
    "FinishDecision",
    "FinishTurn",
    "Listener",
    "NextTurn",
    "PrepareNextTurn",
    "PrepareRequest",
    "QueueMode",
    "Request",
    "finish_turns",
    "max_tool_calls",
    "max_turns",
]

_T = TypeVar("_T")

#: A listener: a plain function, or an ``async`` one (what it returns is awaited when awaitable).
Listener = Callable[[AgentEvent], object]
#: How many queued messages a turn boundary takes: one, or all that wait.
QueueMode = Literal["one-at-a-time", "all"]
#: What ``finish_turn`` decides: end the run, or make another request (None: default scheduling).
FinishDecision = Literal["end", "continue"]

LENGTH_TEXT = (
    'Tool call "{name}" was not executed: the response hit the output token limit, so its arguments '
    "may be truncated. Re-issue the tool call with complete arguments."
)


@dataclasses.dataclass(slots=True)
class NextTurn:
    """What the next turn starts from (``prepare_next_turn`` sees it and may return a replacement).

    ``context`` holds the system prompt, the tools and the transcript so far; ``messages`` the
    messages about to enter the transcript (the prompt, steering or follow-ups; append to add more). A
    replacement's model, thinking level, system prompt and transcript become the agent's own (a
    compacted transcript stays compacted); its ``context.tools`` are ignored: the tools are the agent's.
    """

    context: Context
    model: Model
    thinking_level: ThinkingLevel | None
    messages: list[Message]


@dataclasses.dataclass(slots=True)
class Request:
    """The one provider request of a turn (``prepare_request`` sees it and may return a replacement,
    which is sent instead — for this request only)."""

    context: Context
    model: Model
    thinking_level: ThinkingLevel | None


@dataclasses.dataclass(slots=True)
class CompletedTurn:
    """A turn whose reply and tools are done (what ``finish_turn`` decides on).

    ``turns`` and ``tool_calls`` count this run's turns and answered tool calls, this turn's included.
    """

    message: AssistantMessage
    tool_results: list[ToolResultMessage]
    turns: int
    tool_calls: int


PrepareNextTurn = Callable[[NextTurn, AbortSignal], NextTurn | Awaitable[NextTurn | None] | None]
PrepareRequest = Callable[[Request, AbortSignal], Request | Awaitable[Request | None] | None]
FinishTurn = Callable[[CompletedTurn, AbortSignal], FinishDecision | Awaitable[FinishDecision | None] | None]


async def _resolved(value: _T | Awaitable[_T]) -> _T:
    """A hook's or listener's answer, awaited when it is awaitable (an ``async`` function's)."""
    if inspect.isawaitable(value):
        return await cast("Awaitable[_T]", value)
    return cast("_T", value)


def max_turns(limit: int) -> FinishTurn:
    """A ``finish_turn`` ending the run once it has made ``limit`` turns (None before that)."""

    def finish(turn: CompletedTurn, _signal: AbortSignal) -> FinishDecision | None:
        return "end" if turn.turns >= limit else None

    return finish


def max_tool_calls(limit: int) -> FinishTurn:
    """A ``finish_turn`` ending the run once it has answered ``limit`` tool calls (None before that)."""

    def finish(turn: CompletedTurn, _signal: AbortSignal) -> FinishDecision | None:
        return "end" if turn.tool_calls >= limit else None

    return finish


def finish_turns(*hooks: FinishTurn) -> FinishTurn:
    """A ``finish_turn`` asking ``hooks`` in order: the first decision that is not None wins."""

    async def finish(turn: CompletedTurn, signal: AbortSignal) -> FinishDecision | None:
        for hook in hooks:
            decision: FinishDecision | None = await _resolved(hook(turn, signal))
            if decision is not None:
                return decision
        return None

    return finish


def _as_messages(prompt: str | Message | Sequence[Message]) -> list[Message]:
    if isinstance(prompt, str):
        return [UserMessage(content=prompt)]
    if isinstance(prompt, Sequence):
        return list(prompt)
    return [prompt]


def _take(queue: list[Message], mode: QueueMode) -> list[Message]:
    """What one turn boundary takes from ``queue`` (removed from it)."""
    taken = queue[:] if mode == "all" else queue[:1]
    del queue[: len(taken)]
    return taken


Emit = Callable[[AgentEvent], Awaitable[None]]


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
        """Queue a message for the next request of the current run (after this turn's tool results)."""
        self._steering += _as_messages(message)

    def follow_up(self, message: str | Message) -> None:
        """Queue a message to send when the agent would otherwise stop."""
        self._follow_ups += _as_messages(message)

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
        """Run until the model stops asking for tools and no message waits; returns the new messages.

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
        emit = self._emitter(on_event)
        added: list[Message] = []
        # Steering that an earlier run ended before delivering (it failed, or was aborted) goes out
        # now, ahead of the new prompt it preceded — never in the middle of this run's tool loop.
        pending = [*self._steering, *prompted]
        self._steering.clear()
        if not pending:
            pending = _take(self._follow_ups, self.follow_up_mode)
        timer = None
        if self.timeout_s is not None:
            # An abort, not only a decision: a stream or a tool that hangs is ended by it.
            reason = f"the run timed out after {self.timeout_s:g} s"
            timer = asyncio.get_running_loop().call_later(self.timeout_s, controller.abort, reason)
        try:
            await emit(AgentStart())
            await self._turns(pending, controller.signal, emit, added)
            await emit(AgentEnd(messages=added))
        except BaseException as exc:
            # Whatever still holds the signal (a tool that ignored cancellation and was left to finish)
            # learns that the run is over.
            controller.abort(f"the run ended: {type(exc).__name__}")
            raise
        finally:
            if timer is not None:
                timer.cancel()
            self._controller = None
        return added

    def _emitter(self, on_event: Listener | None) -> Emit:
        # One event at a time: the tools' progress and the loop's own events may be emitted from
        # different tasks, and a listener must never see the next event before it finished this one.
        lock = asyncio.Lock()

        async def emit(event: AgentEvent) -> None:
            async with lock:
                for listener in [*self._listeners, *([on_event] if on_event is not None else [])]:
                    await _resolved(listener(event))

        return emit

    async def _turns(self, pending: list[Message], signal: AbortSignal, emit: Emit, added: list[Message]) -> None:
        turns = tool_calls = 0
        while True:  # the outer loop: the prompt, then each follow-up
            while True:  # the inner loop: one provider request per turn
                pending = await self._next_turn(pending, signal)
                if signal.aborted:
                    return  # aborted before the turn began: nothing is sent
                await emit(TurnStart())
                for message in pending:
                    self._add(message, added)
                    await emit(MessageStart(message))
                    await emit(MessageEnd(message))
                reply = await self._reply(signal, emit, added)
                failed = reply.stop_reason in ("error", "aborted")
                calls = [] if failed else [block for block in reply.content if isinstance(block, ToolCall)]
                results = await self._run_tools(reply, calls, signal, emit)
                for result in results:
                    self._add(result, added)
                    await emit(MessageStart(result))
                    await emit(MessageEnd(result))
                turns, tool_calls = turns + 1, tool_calls + len(calls)
                decision = None
                if self.finish_turn is not None:
                    completed = CompletedTurn(message=reply, tool_results=results, turns=turns, tool_calls=tool_calls)
                    decision = await _resolved(self.finish_turn(completed, signal))
                await emit(TurnEnd(message=reply, tool_results=results))
                if failed or signal.aborted or decision == "end":
                    return  # an abort after the reply (say, during its tools) sends nothing more
                pending = _take(self._steering, self.steering_mode)
                if not calls and not pending and decision != "continue":
                    break  # the model is done and nobody steered: only follow-ups can go on
            pending = _take(self._follow_ups, self.follow_up_mode)
            if not pending:
                return

    async def _next_turn(self, pending: list[Message], signal: AbortSignal) -> list[Message]:
        """The pending messages, after ``prepare_next_turn`` (whose replacement becomes the agent's state)."""
        if self.prepare_next_turn is None:
            return pending
        turn = NextTurn(
            context=self._context(), model=self.model, thinking_level=self.options.reasoning, messages=list(pending)
        )
        replaced = await _resolved(self.prepare_next_turn(turn, signal))
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

    async def _reply(self, signal: AbortSignal, emit: Emit, added: list[Message]) -> AssistantMessage:
        """Stream one assistant reply into the transcript, emitting its message events."""
        request = Request(context=self._context(), model=self.model, thinking_level=self.options.reasoning)
        if self.prepare_request is not None:
            request = await _resolved(self.prepare_request(request, signal)) or request
        options = dataclasses.replace(self.options, signal=signal, reasoning=request.thinking_level)
        events = guarded_call(self.stream_fn, request.model, request.context, options)
        partial: AssistantMessage | None = None
        try:
            async for event in events:
                if isinstance(event, StartEvent):
                    partial = event.partial
                    self._add(partial, added)
                    await emit(MessageStart(partial))
                elif partial is not None and not isinstance(event, DoneEvent | ErrorEvent):
                    await emit(MessageUpdate(message=partial, event=event))
        finally:
            await events.aclose()  # a no-op after the terminal; closes the response if a listener raised
        final = await events.result()
        if partial is None:  # a StreamFn that never started: the message still enters the transcript
            self._add(final, added)
            await emit(MessageStart(final))
        elif final is not partial:  # streamfns returns the partial itself; another stream might not
            _replace(self.messages, partial, final)
            _replace(added, partial, final)
        await emit(MessageEnd(final))
        return final

    async def _run_tools(
        self, reply: AssistantMessage, calls: list[ToolCall], signal: AbortSignal, emit: Emit
    ) -> list[ToolResultMessage]:
        """Answer every call: refused ones at once, the others run concurrently; results in call order."""
        results: list[ToolResultMessage | None] = [None] * len(calls)
        running: list[asyncio.Future[tuple[int, ToolResultMessage, float]]] = []
        listener_errors: list[Exception] = []

        def progress(call: ToolCall) -> OnUpdate:
            async def on_update(partial: str | Sequence[ToolResultContent]) -> None:
                update = ToolExecutionUpdate(call.id, call.name, call.arguments, as_content(partial))
                try:
                    await emit(update)
                except Exception as exc:
                    # The tool sees it too, but it is the listener's failure: it ends the run below,
                    # whatever the tool makes of it.
                    listener_errors.append(exc)
                    raise

            return on_update

        try:
            for index, call in enumerate(calls):
                await emit(ToolExecutionStart(tool_call_id=call.id, tool_name=call.name, arguments=call.arguments))
                if reply.stop_reason == "length":
                    prepared: AgentTool | str = LENGTH_TEXT.format(name=call.name)
                else:
                    prepared = prepare_tool_call(self.tools, call, signal)
                if isinstance(prepared, str):
                    refused = results[index] = error_result(call, prepared)
                    await emit(ToolExecutionEnd(tool_call_id=call.id, tool_name=call.name, result=refused))
                else:
                    work = run_tool_call(prepared, call, signal, progress(call))
                    running.append(asyncio.ensure_future(_timed(index, work)))
            for finished in asyncio.as_completed(running):
                try:
                    index, result, duration_ms = await finished
                except ToolInterrupt:
                    break  # raised as itself below, once the other tools are cancelled and awaited
                results[index] = result
                if listener_errors:
                    raise listener_errors[0]
                end = ToolExecutionEnd(result.tool_call_id, result.tool_name, result, duration_ms=duration_ms)
                await emit(end)
            if listener_errors:
                raise listener_errors[0]
        finally:
            for task in running:
                task.cancel()
            if running:
                await asyncio.wait(running)
            interrupt = _first_interrupt(running)
            if interrupt is not None:
                # As itself, in the run's own task (the first in call order, if several tools raised
                # one); it wins over a listener's exception or a cancellation on its way out, as in
                # run_tool_call.
                raise interrupt.error
        return [result for result in results if result is not None]


def _replace(messages: list[Message], old: Message, new: Message) -> None:
    for index, message in enumerate(messages):
        if message is old:
            messages[index] = new
            return


async def _timed(index: int, work: Awaitable[ToolResultMessage]) -> tuple[int, ToolResultMessage, float]:
    """The call's index, its result and how long it took in milliseconds (a monotonic clock: never < 0)."""
    started = time.perf_counter()
    try:
        result = await work
    except (Exception, asyncio.CancelledError):
        raise
    except BaseException as exc:  # raised as itself it would leave this task through the event loop
        raise ToolInterrupt(exc) from None
    return index, result, (time.perf_counter() - started) * 1000


def _first_interrupt(tasks: list[asyncio.Future[tuple[int, ToolResultMessage, float]]]) -> ToolInterrupt | None:
    """The first interrupt among the finished ``tasks``, in call order; every task's outcome is
    retrieved, so a second interrupt (dropped: one goes through) is never reported as unretrieved."""
    found: ToolInterrupt | None = None
    for task in tasks:
        failure = None if task.cancelled() else task.exception()
        if found is None and isinstance(failure, ToolInterrupt):
            found = failure
    return found
