"""An agent loop over any StreamFn, consuming it the way pi-agent-core does.

    agent = Agent(model, tools=[calculator], system_prompt="Be brief.")
    messages = await agent.run("What is 6 * 7?", on_event=print)

The outer loop runs follow-up messages; the inner loop runs one turn per provider request: pending
messages enter the transcript, the reply is streamed (``message_start``, one ``message_update`` per
content event, ``message_end``), its tool calls run, their results enter the transcript. The inner
loop goes on while the reply asked for tools or steering messages wait.

- **Steering** (:meth:`Agent.steer`): delivered after the current turn's tool results, before the
  next request — and it keeps the run going even when the reply asked for nothing.
- **Follow-up** (:meth:`Agent.follow_up`): delivered only when the agent would otherwise stop.
- **Abort** (:meth:`Agent.abort`, at any moment): the stream ends ``aborted`` with its partial
  content, a running tool is stopped and answered ``Operation aborted``, and the next request (if
  any) ends ``aborted`` without being sent.
- A reply ending ``error`` or ``aborted`` ends the run after ``turn_end``; the message stays in the
  transcript (``normalize.transform_messages`` drops it when the transcript is sent again), and
  none of its tool calls run.
- Tool calls run concurrently; their results are appended in the assistant message's order. A
  reply cut by the output limit (``length``) has its calls answered with an error, never run: their
  arguments may be incomplete.

The loop never raises for what a provider or a tool does wrong (the StreamFn is called through
``streamfns.guarded_call``; a tool's ``Exception``, or a ``CancelledError`` it raises by itself, is
an error result the model sees). Three things do end a run by propagating out of :meth:`Agent.run`,
each only after the stream has been closed, the other tools cancelled and awaited (each given
``tools.CLEANUP_S`` to clean up), the run's signal aborted and the agent reset (``running`` is
False, a new run may start):

- an exception raised by the ``on_event`` listener;
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
from collections.abc import Awaitable, Callable, Iterable, Sequence

from examples.agent_loop.events import (
    AgentEnd,
    AgentEvent,
    AgentStart,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    ToolExecutionEnd,
    ToolExecutionStart,
    TurnEnd,
    TurnStart,
)
from examples.agent_loop.tools import AgentTool, ToolInterrupt, error_result, prepare_tool_call, run_tool_call
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
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from streamfns import StreamFn, guarded_call, stream

__all__ = ["LENGTH_TEXT", "Agent", "Listener"]

Listener = Callable[[AgentEvent], object]

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


class Agent:
    """A transcript, a model, tools and a StreamFn (``streamfns.stream`` by default).

    ``messages`` is the transcript; it grows with every run. ``options`` are passed to every
    request (the loop adds its abort signal).
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
    ) -> None:
        self.model = model
        self.tools = {tool.name: tool for tool in tools}
        self.system_prompt = system_prompt
        self.stream_fn = stream_fn
        self.options = options or StreamOptions()
        self.messages: list[Message] = list(messages)
        self._steering: list[Message] = []
        self._follow_ups: list[Message] = []
        self._controller: AbortController | None = None

    # -- controls -------------------------------------------------------------------------------

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
        example after an aborted run, or after messages were added by hand).
        """
        if self._controller is not None:
            raise RuntimeError("the agent is already running; use steer() or follow_up()")
        controller = self._controller = AbortController()
        emit: Listener = on_event or (lambda _event: None)
        added: list[Message] = []
        # Steering that an earlier run ended before delivering (it failed, or was aborted) goes out
        # now, ahead of the new prompt it preceded — never in the middle of this run's tool loop.
        pending, self._steering = [*self._steering, *_as_messages(prompt)], []
        try:
            emit(AgentStart())
            await self._turns(pending, controller.signal, emit, added)
            emit(AgentEnd(messages=added))
        except BaseException as exc:
            # Whatever still holds the signal (a tool that ignored cancellation and was left to finish)
            # learns that the run is over.
            controller.abort(f"the run ended: {type(exc).__name__}")
            raise
        finally:
            self._controller = None
        return added

    async def _turns(self, pending: list[Message], signal: AbortSignal, emit: Listener, added: list[Message]) -> None:
        while True:  # the outer loop: the prompt, then each batch of follow-ups
            while True:  # the inner loop: one provider request per turn
                emit(TurnStart())
                for message in pending:
                    self._add(message, added)
                    emit(MessageStart(message))
                    emit(MessageEnd(message))
                reply = await self._reply(signal, emit, added)
                if reply.stop_reason in ("error", "aborted"):
                    emit(TurnEnd(message=reply, tool_results=[]))
                    return
                calls = [block for block in reply.content if isinstance(block, ToolCall)]
                results = await self._run_tools(reply, calls, signal, emit)
                for result in results:
                    self._add(result, added)
                    emit(MessageStart(result))
                    emit(MessageEnd(result))
                emit(TurnEnd(message=reply, tool_results=results))
                pending, self._steering = self._steering, []
                if not calls and not pending:
                    break  # the model is done and nobody steered: only follow-ups can go on
            pending, self._follow_ups = self._follow_ups, []
            if not pending:
                return

    def _add(self, message: Message, added: list[Message]) -> None:
        self.messages.append(message)
        added.append(message)

    async def _reply(self, signal: AbortSignal, emit: Listener, added: list[Message]) -> AssistantMessage:
        """Stream one assistant reply into the transcript, emitting its message events."""
        context = Context(
            system_prompt=self.system_prompt,
            tools=[tool.declaration for tool in self.tools.values()] or None,
            messages=list(self.messages),
        )
        options = dataclasses.replace(self.options, signal=signal)
        events = guarded_call(self.stream_fn, self.model, context, options)
        partial: AssistantMessage | None = None
        try:
            async for event in events:
                if isinstance(event, StartEvent):
                    partial = event.partial
                    self._add(partial, added)
                    emit(MessageStart(partial))
                elif partial is not None and not isinstance(event, DoneEvent | ErrorEvent):
                    emit(MessageUpdate(message=partial, event=event))
        finally:
            await events.aclose()  # a no-op after the terminal; closes the response if a listener raised
        final = await events.result()
        if partial is None:  # a StreamFn that never started: the message still enters the transcript
            self._add(final, added)
            emit(MessageStart(final))
        elif final is not partial:  # streamfns returns the partial itself; another stream might not
            _replace(self.messages, partial, final)
            _replace(added, partial, final)
        emit(MessageEnd(final))
        return final

    async def _run_tools(
        self, reply: AssistantMessage, calls: list[ToolCall], signal: AbortSignal, emit: Listener
    ) -> list[ToolResultMessage]:
        """Answer every call: refused ones at once, the others run concurrently; results in call order."""
        results: list[ToolResultMessage | None] = [None] * len(calls)
        running: list[asyncio.Future[tuple[int, ToolResultMessage]]] = []
        try:
            for index, call in enumerate(calls):
                emit(ToolExecutionStart(tool_call_id=call.id, tool_name=call.name, arguments=call.arguments))
                if reply.stop_reason == "length":
                    prepared: AgentTool | str = LENGTH_TEXT.format(name=call.name)
                else:
                    prepared = prepare_tool_call(self.tools, call, signal)
                if isinstance(prepared, str):
                    refused = results[index] = error_result(call, prepared)
                    emit(ToolExecutionEnd(tool_call_id=call.id, tool_name=call.name, result=refused))
                else:
                    running.append(asyncio.ensure_future(_indexed(index, run_tool_call(prepared, call, signal))))
            for finished in asyncio.as_completed(running):
                try:
                    index, result = await finished
                except ToolInterrupt:
                    break  # raised as itself below, once the other tools are cancelled and awaited
                results[index] = result
                emit(ToolExecutionEnd(tool_call_id=result.tool_call_id, tool_name=result.tool_name, result=result))
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


async def _indexed(index: int, work: Awaitable[ToolResultMessage]) -> tuple[int, ToolResultMessage]:
    try:
        return index, await work
    except (Exception, asyncio.CancelledError):
        raise
    except BaseException as exc:  # raised as itself it would leave this task through the event loop
        raise ToolInterrupt(exc) from None


def _first_interrupt(tasks: list[asyncio.Future[tuple[int, ToolResultMessage]]]) -> ToolInterrupt | None:
    """The first interrupt among the finished ``tasks``, in call order; every task's outcome is
    retrieved, so a second interrupt (dropped: one goes through) is never reported as unretrieved."""
    found: ToolInterrupt | None = None
    for task in tasks:
        failure = None if task.cancelled() else task.exception()
        if found is None and isinstance(failure, ToolInterrupt):
            found = failure
    return found
