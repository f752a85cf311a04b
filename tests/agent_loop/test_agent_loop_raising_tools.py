"""What the loop does with a tool that raises something other than an ``Exception``.

- a ``CancelledError`` the tool raises by itself (nobody aborted or cancelled the run) is the tool's
  failure, answered with a result that says so — not ``Operation aborted``;
- a real cancellation of the run propagates, after the tools are cancelled and awaited;
- a ``KeyboardInterrupt``, ``SystemExit`` (any ``BaseException`` that is not an ``Exception``)
  propagates from ``await agent.run(...)`` as itself, after the other tools are cancelled and
  awaited and the agent is reset; it never leaves through the event loop, and asyncio never reports
  a "Task exception was never retrieved".

The interrupt tests run the agent on an event loop of their own: before the fix the interrupt left
through the event loop, which in the test's own loop would have ended the pytest session.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from examples.agent_loop import ABORTED_TEXT, Agent, AgentTool, OnUpdate
from examples.agent_loop import tools as agent_tools
from examples.agent_loop.tools import cancelled_text, run_tool_call
from normalize import AbortController, AbortSignal, AssistantMessage, Message, TextContent, ToolCall, ToolResultMessage
from streamfns.faux import faux_message, faux_tool_call
from tests.agent_loop._agent import Recorder, faux, on_own_loop

PROMPT = ["turn_start", "message_start user", "message_end user"]
RESULT = ["message_start toolResult", "message_end toolResult"]
TEXT_REPLY = ["message_start assistant", "update text_start", "update text_delta", "update text_end"]
EMPTY_CALL = ["update toolcall_start", "update toolcall_end"]


#: A bound on runs that, broken, would wait for ever (a regression fails instead of hanging the suite);
#: not a measurement: with the loop working they end at once. ``asyncio.timeout``, not ``wait_for``:
#: on Python 3.11 ``wait_for`` runs the run in a task of its own, which an interrupt would leave
#: through the event loop.
_BOUND_S = 30.0


class _Custom(BaseException):
    """A library's own BaseException (as trio's or gevent's): not a tool failure either."""


def _tool(name: str, execute: Any) -> AgentTool:
    return AgentTool(name=name, description=f"the {name} tool", parameters={"type": "object"}, execute=execute)


def _texts(message: Message) -> str:
    assert isinstance(message, ToolResultMessage | AssistantMessage)
    return "".join(block.text for block in message.content if isinstance(block, TextContent))


def _results(agent: Agent) -> list[ToolResultMessage]:
    return [message for message in agent.messages if isinstance(message, ToolResultMessage)]


def _roles(agent: Agent) -> list[str]:
    return [message.role for message in agent.messages]


# -- a CancelledError the tool raises by itself --------------------------------------------------------


@pytest.mark.parametrize(
    ("raised", "text"),
    [
        (
            asyncio.CancelledError(),
            'Tool "quit" failed: it raised CancelledError, but the run was neither aborted nor cancelled',
        ),
        (
            asyncio.CancelledError("pool closed"),
            'Tool "quit" failed: it raised CancelledError (pool closed), but the run was neither aborted nor cancelled',
        ),
    ],
    ids=["bare", "with-message"],
)
async def test_a_tool_raising_cancelled_error_by_itself_is_a_tool_failure(
    raised: asyncio.CancelledError, text: str
) -> None:
    """Before: answered "Operation aborted" although nothing was aborted."""
    provider = faux()
    seen: list[AbortSignal] = []

    async def quit_(_id: str, _args: dict[str, Any], signal: AbortSignal, _on_update: OnUpdate) -> str:
        seen.append(signal)
        raise raised

    call = faux_tool_call("quit", {})
    provider.set_responses([faux_message([call], stop_reason="toolUse"), faux_message("The tool failed.")])
    agent, recorder = Agent(provider.model(), tools=[_tool("quit", quit_)], stream_fn=provider), Recorder()
    await agent.run("Go", recorder)
    (result,) = _results(agent)
    assert (result.tool_call_id, result.is_error, _texts(result)) == (call.id, True, text)
    assert text == cancelled_text("quit", raised)
    # The run goes on: the model is told, and answers.
    assert recorder.lines == [
        "agent_start",
        *PROMPT,
        "message_start assistant",
        *EMPTY_CALL,
        "message_end assistant toolUse",
        "tool_start quit",
        "tool_end quit error",
        *RESULT,
        "turn_end toolUse results=1",
        "turn_start",
        *TEXT_REPLY,
        "message_end assistant stop",
        "turn_end stop results=0",
        "agent_end messages=4",
    ]
    assert not agent.running
    assert not seen[0].aborted


async def test_run_tool_call_answers_a_tool_cancelled_error_as_a_failure() -> None:
    async def quit_(_id: str, _args: dict[str, Any], _signal: AbortSignal, _on_update: OnUpdate) -> str:
        raise asyncio.CancelledError

    call = ToolCall(id="c1", name="quit", arguments={})
    result = await run_tool_call(_tool("quit", quit_), call, AbortController().signal)
    assert (result.tool_call_id, result.is_error, _texts(result)) == (
        "c1",
        True,
        cancelled_text("quit", asyncio.CancelledError()),
    )


async def test_a_tool_raising_cancelled_error_after_an_abort_is_answered_aborted() -> None:
    provider = faux()
    agent: Agent

    async def stop_on_abort(_id: str, _args: dict[str, Any], signal: AbortSignal, _on_update: OnUpdate) -> str:
        agent.abort()
        assert signal.aborted
        raise asyncio.CancelledError

    provider.set_responses([faux_message([faux_tool_call("work", {})], stop_reason="toolUse")])
    agent = Agent(provider.model(), tools=[_tool("work", stop_on_abort)], stream_fn=provider)
    await agent.run("Go")
    assert _texts(_results(agent)[0]) == ABORTED_TEXT


# -- a real cancellation of the run --------------------------------------------------------------------


async def test_cancelling_the_run_cancels_and_awaits_its_tools_then_propagates() -> None:
    provider = faux()
    started, cleaned = asyncio.Event(), asyncio.Event()
    signals: list[AbortSignal] = []

    async def slow(_id: str, _args: dict[str, Any], signal: AbortSignal, _on_update: OnUpdate) -> str:
        signals.append(signal)
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            cleaned.set()
        return "never"

    provider.set_responses([faux_message([faux_tool_call("slow", {})], stop_reason="toolUse"), faux_message("Again.")])
    agent = Agent(provider.model(), tools=[_tool("slow", slow)], stream_fn=provider)
    run = asyncio.ensure_future(agent.run("Go"))
    await started.wait()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert cleaned.is_set(), "the tool was cancelled and awaited before the cancellation propagated"
    assert asyncio.all_tasks() == {asyncio.current_task()}, "no task of the run is left"
    assert not agent.running
    assert (signals[0].aborted, signals[0].reason) == (True, "the run ended: CancelledError")
    assert _roles(agent) == ["user", "assistant"], "the reply stays; its unanswered call gets a result on replay"
    await agent.run("Once more")
    assert _texts(agent.messages[-1]) == "Again."


# -- KeyboardInterrupt, SystemExit and other BaseExceptions -----------------------------------------


@dataclass
class _Seen:
    caught: BaseException | None = None
    running: bool = True
    cleaned: bool = False
    others: int = -1
    slow_signal_aborted: bool = False
    roles: list[str] = field(default_factory=list[str])
    lines: list[str] = field(default_factory=list[str])
    again: str = ""


_INTERRUPTS: list[Callable[[], BaseException]] = [KeyboardInterrupt, lambda: SystemExit(3), lambda: _Custom("mine")]


@pytest.mark.parametrize("make", _INTERRUPTS, ids=["KeyboardInterrupt", "SystemExit", "custom-BaseException"])
def test_an_interrupt_from_a_tool_propagates_after_cleanup(make: Callable[[], BaseException]) -> None:
    """Before: KeyboardInterrupt and SystemExit left through the event loop, the run suspended in
    ``running`` state with the other tool alive; a custom BaseException became an error result."""
    interrupt = make()

    async def main() -> _Seen:
        seen = _Seen()
        provider = faux()
        started = asyncio.Event()
        signals: list[AbortSignal] = []

        async def slow(_id: str, _args: dict[str, Any], signal: AbortSignal, _on_update: OnUpdate) -> str:
            signals.append(signal)
            started.set()
            try:
                await asyncio.Event().wait()
            finally:
                seen.cleaned = True
            return "never"

        async def stop(_id: str, _args: dict[str, Any], _signal: AbortSignal, _on_update: OnUpdate) -> str:
            await started.wait()
            raise interrupt

        calls = [faux_tool_call("slow", {}), faux_tool_call("stop", {})]
        provider.set_responses([faux_message(calls, stop_reason="toolUse"), faux_message("Again.")])
        agent = Agent(provider.model(), tools=[_tool("slow", slow), _tool("stop", stop)], stream_fn=provider)
        recorder = Recorder()
        try:
            async with asyncio.timeout(_BOUND_S):  # before the fix the custom one left the run waiting on "slow"
                await agent.run("Go", recorder)
        except BaseException as exc:  # the interrupt, caught where the caller awaits the run
            seen.caught = exc
            seen.running = agent.running
            seen.others = len(asyncio.all_tasks() - {asyncio.current_task()})
        seen.slow_signal_aborted = signals[0].aborted
        seen.roles = _roles(agent)
        seen.lines = recorder.lines
        await agent.run("Once more")  # the agent is usable again
        seen.again = _texts(agent.messages[-1])
        return seen

    ran = on_own_loop(main)
    assert ran.escaped is None, f"{ran.escaped!r} left through the event loop"
    assert ran.reported == []
    seen: _Seen = ran.value
    assert seen.caught is interrupt, "the tool's own exception object, raised from agent.run"
    assert (seen.running, seen.cleaned, seen.others) == (False, True, 0)
    assert seen.slow_signal_aborted
    assert seen.roles == ["user", "assistant"], "the reply stays; its unanswered calls get results on replay"
    assert seen.lines == [
        "agent_start",
        *PROMPT,
        "message_start assistant",
        *EMPTY_CALL,
        *EMPTY_CALL,
        "message_end assistant toolUse",
        "tool_start slow",
        "tool_start stop",
    ], "no tool_end, turn_end or agent_end after the interrupt"
    assert seen.again == "Again."


def test_an_interrupt_wins_over_the_abort_it_came_with() -> None:
    async def main() -> BaseException | None:
        provider = faux()
        agent: Agent

        async def stop(_id: str, _args: dict[str, Any], _signal: AbortSignal, _on_update: OnUpdate) -> str:
            agent.abort()
            raise KeyboardInterrupt

        provider.set_responses([faux_message([faux_tool_call("stop", {})], stop_reason="toolUse")])
        agent = Agent(provider.model(), tools=[_tool("stop", stop)], stream_fn=provider)
        try:
            async with asyncio.timeout(_BOUND_S):
                await agent.run("Go")
        except KeyboardInterrupt as exc:
            return exc
        return None

    ran = on_own_loop(main)
    assert ran.escaped is None
    assert isinstance(ran.value, KeyboardInterrupt)
    assert ran.reported == []


def test_two_interrupting_tools_raise_the_first_in_call_order_and_nothing_is_left_unretrieved() -> None:
    first, second = KeyboardInterrupt("first"), SystemExit("second")

    async def main() -> BaseException | None:
        provider = faux()
        both = asyncio.Barrier(2)

        def raising(error: BaseException) -> Any:
            async def execute(_id: str, _args: dict[str, Any], _signal: AbortSignal, _on_update: OnUpdate) -> str:
                await both.wait()  # both raise in the same step of the loop
                raise error

            return execute

        calls = [faux_tool_call("one", {}), faux_tool_call("two", {})]
        provider.set_responses([faux_message(calls, stop_reason="toolUse")])
        tools = [_tool("one", raising(first)), _tool("two", raising(second))]
        agent = Agent(provider.model(), tools=tools, stream_fn=provider)
        try:
            async with asyncio.timeout(_BOUND_S):
                await agent.run("Go")
        except BaseException as exc:  # whichever it is, it is the assertion's subject
            return exc
        return None

    ran = on_own_loop(main)
    assert ran.escaped is None
    assert ran.value is first
    assert ran.reported == []


async def test_run_tool_call_raises_the_interrupt_itself() -> None:
    async def stop(_id: str, _args: dict[str, Any], _signal: AbortSignal, _on_update: OnUpdate) -> str:
        raise _Custom("mine")

    with pytest.raises(_Custom, match=r"^mine$"):
        await run_tool_call(_tool("stop", stop), ToolCall(id="c1", name="stop", arguments={}), AbortController().signal)


def test_an_abandoned_tool_that_interrupts_later_goes_through_the_loop_unreported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A tool that ignored cancellation past the clean-up time was left to finish on its own; when it
    raises an interrupt later nobody awaits it, so it leaves through the event loop, as asyncio sends
    it — and its task is not reported as never retrieved."""
    monkeypatch.setattr(agent_tools, "CLEANUP_S", 0.01)
    interrupt = KeyboardInterrupt("late")

    async def main() -> None:
        provider = faux()
        release = asyncio.Event()
        agent: Agent

        async def deaf(_id: str, _args: dict[str, Any], _signal: AbortSignal, _on_update: OnUpdate) -> str:
            agent.abort()
            while not release.is_set():
                try:
                    await release.wait()
                except asyncio.CancelledError:
                    continue  # ignores cancellation
            raise interrupt

        provider.set_responses([faux_message([faux_tool_call("deaf", {})], stop_reason="toolUse")])
        agent = Agent(provider.model(), tools=[_tool("deaf", deaf)], stream_fn=provider)
        await agent.run("Go")
        assert _texts(_results(agent)[0]) == ABORTED_TEXT
        assert not agent.running
        release.set()
        await asyncio.Event().wait()  # the interrupt ends the loop from here

    ran = on_own_loop(main)
    assert ran.escaped is interrupt
    assert ran.reported == []


# -- a tool that raises because of the abort (issue 23, item 6) -----------------------------------------


def test_a_tool_raising_on_abort_is_answered_aborted_and_nothing_is_left_unretrieved() -> None:
    async def main() -> list[str]:
        provider = faux()
        agent: Agent

        async def on_signal(_id: str, _args: dict[str, Any], signal: AbortSignal, _on_update: OnUpdate) -> str:
            await signal.wait()
            raise RuntimeError("the connection was torn down")  # raised while the abort is being handled

        async def in_cleanup(_id: str, _args: dict[str, Any], _signal: AbortSignal, _on_update: OnUpdate) -> str:
            try:
                agent.abort()
                await asyncio.sleep(_BOUND_S)
            except asyncio.CancelledError:
                raise RuntimeError("cleanup failed") from None
            return "never"

        calls = [faux_tool_call("watch", {}), faux_tool_call("clean", {})]
        provider.set_responses([faux_message(calls, stop_reason="toolUse"), faux_message("never sent")])
        agent = Agent(
            provider.model(), tools=[_tool("watch", on_signal), _tool("clean", in_cleanup)], stream_fn=provider
        )
        async with asyncio.timeout(_BOUND_S):
            await agent.run("Go")
        return [_texts(result) for result in _results(agent)]

    ran = on_own_loop(main)
    assert ran.escaped is None
    assert ran.value == [ABORTED_TEXT, ABORTED_TEXT]
    assert ran.reported == []  # no "Task exception was never retrieved"
