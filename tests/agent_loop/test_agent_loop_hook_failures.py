"""A hook or a listener that raises: a hook's exception ends the run with an error reply carrying its
message (pi-agent-core's last-resort net, never an exception out of ``run()``, never a hang); a
listener's exception is reported to the event loop's exception handler and the run goes on."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from examples.agent_loop import Agent, AgentEvent, AgentTool, CompletedTurn, NextTurn, OnUpdate, Request
from normalize import AbortSignal, AssistantMessage, Message, TextContent, ToolResultMessage, UserMessage
from streamfns.faux import faux_message, faux_tool_call
from tests.agent_loop._agent import Recorder, faux, loop_errors, on_own_loop

PROMPT = ["turn_start", "message_start user", "message_end user"]
RESULT = ["message_start toolResult", "message_end toolResult"]
EMPTY_CALL = ["update toolcall_start", "update toolcall_end"]
TEXT_REPLY = ["message_start assistant", "update text_start", "update text_delta", "update text_end"]
ERROR_REPLY = ["message_start assistant", "message_end assistant error", "turn_end error results=0"]


async def _echo(_id: str, _args: dict[str, Any], _signal: AbortSignal, _on_update: OnUpdate) -> str:
    return "ok"


ECHO = AgentTool(name="echo", description="echo", parameters={"type": "object"}, execute=_echo)


def _texts(message: Message) -> str:
    if isinstance(message, UserMessage):
        return str(message.content)
    assert isinstance(message, ToolResultMessage | AssistantMessage)
    return "".join(block.text for block in message.content if isinstance(block, TextContent))


def _raising(error: Exception, *, is_async: bool) -> Callable[..., Any]:
    """A hook raising ``error``: a plain function, or an ``async`` one."""

    def plain(*_args: Any) -> None:
        raise error

    async def coroutine(*_args: Any) -> None:
        await asyncio.sleep(0)
        raise error

    return coroutine if is_async else plain


def _error_reply(agent: Agent) -> AssistantMessage:
    reply = agent.messages[-1]
    assert isinstance(reply, AssistantMessage)
    return reply


@pytest.mark.parametrize("is_async", [False, True], ids=["plain", "async"])
async def test_prepare_next_turn_raising_ends_the_run_with_an_error_reply_after_the_turn_it_followed(
    is_async: bool,
) -> None:
    provider = faux()
    provider.set_responses([faux_message([faux_tool_call("echo", {})], stop_reason="toolUse"), faux_message("never")])
    hook = _raising(RuntimeError("compaction failed"), is_async=is_async)
    agent = Agent(provider.model(), tools=[ECHO], stream_fn=provider, prepare_next_turn=hook)
    recorder = Recorder()
    with loop_errors() as reported:
        added = await agent.run("Go", recorder)
    first_turn = [*PROMPT, "message_start assistant", *EMPTY_CALL, "message_end assistant toolUse"]
    tools = ["tool_start echo", "tool_end echo ok", *RESULT, "turn_end toolUse results=1"]
    # The hook runs after the first turn's turn_end; the error reply is the second turn's, which sent nothing.
    second_turn = ["turn_start", *ERROR_REPLY]
    assert recorder.lines == ["agent_start", *first_turn, *tools, *second_turn, "agent_end messages=4"]
    reply = _error_reply(agent)
    assert (reply.stop_reason, reply.error_message, reply.content) == ("error", "compaction failed", [])
    assert reply.error_info is not None
    assert (reply.error_info.kind, reply.model, reply.provider) == ("protocol", "faux-1", "faux")
    assert (added, provider.state.call_count, agent.running, reported) == (agent.messages, 1, False, [])
    assert [_texts(message) for message in agent.messages] == ["Go", "", "ok", ""]


@pytest.mark.parametrize("is_async", [False, True], ids=["plain", "async"])
async def test_prepare_next_turn_never_runs_before_a_runs_first_turn(is_async: bool) -> None:
    provider = faux()
    provider.set_responses([faux_message("Hello."), faux_message("Again.")])
    hook = _raising(RuntimeError("must not be called"), is_async=is_async)
    agent = Agent(provider.model(), stream_fn=provider, prepare_next_turn=hook)
    await agent.run("Hi")
    await agent.run("Hi again")  # a second run starts from the transcript as it is, without the hook
    assert [_texts(message) for message in agent.messages] == ["Hi", "Hello.", "Hi again", "Again."]
    assert provider.state.call_count == 2


async def test_prepare_next_turn_raising_on_a_later_turn_keeps_the_earlier_turns() -> None:
    provider = faux()
    provider.set_responses(
        [
            faux_message([faux_tool_call("echo", {})], stop_reason="toolUse"),
            faux_message([faux_tool_call("echo", {})], stop_reason="toolUse"),
            faux_message("never"),
        ]
    )
    calls = 0

    def fail_second(_turn: NextTurn, _signal: AbortSignal) -> None:
        nonlocal calls
        calls += 1
        if calls == 2:  # between the second and the third turn
            raise ValueError("the summary service is down")

    agent = Agent(provider.model(), tools=[ECHO], stream_fn=provider, prepare_next_turn=fail_second)
    agent.steer("queued while it worked")
    recorder = Recorder()
    await agent.run("Go", recorder)
    assert recorder.lines[-5:] == ["turn_start", *ERROR_REPLY, "agent_end messages=7"]
    assert [_texts(message) for message in agent.messages] == ["Go", "queued while it worked", "", "ok", "", "ok", ""]
    assert (_error_reply(agent).error_message, provider.pending) == ("the summary service is down", 1)


@pytest.mark.parametrize("is_async", [False, True], ids=["plain", "async"])
async def test_prepare_request_raising_ends_the_run_before_anything_is_sent(is_async: bool) -> None:
    provider = faux()
    provider.set_responses([faux_message("never sent")])
    agent = Agent(provider.model(), stream_fn=provider, prepare_request=_raising(KeyError("model"), is_async=is_async))
    recorder = Recorder()
    assert len(await agent.run("Go", recorder)) == 2
    assert recorder.lines == ["agent_start", *PROMPT, *ERROR_REPLY, "agent_end messages=2"]
    assert (_error_reply(agent).error_message, provider.state.call_count) == ("'model'", 0)


@pytest.mark.parametrize("is_async", [False, True], ids=["plain", "async"])
async def test_finish_turn_raising_ends_the_run_after_the_tools_with_an_error_reply(is_async: bool) -> None:
    provider = faux()
    provider.set_responses([faux_message([faux_tool_call("echo", {})], stop_reason="toolUse"), faux_message("never")])
    hook = _raising(ArithmeticError("budget check broke"), is_async=is_async)
    agent = Agent(provider.model(), tools=[ECHO], stream_fn=provider, finish_turn=hook)
    recorder = Recorder()
    await agent.run("Go", recorder)
    assert recorder.lines == [
        "agent_start",
        *PROMPT,
        "message_start assistant",
        *EMPTY_CALL,
        "message_end assistant toolUse",
        "tool_start echo",
        "tool_end echo ok",
        *RESULT,
        "message_start assistant",
        "message_end assistant error",
        "turn_end error results=1",  # the turn's tool results stay with it
        "agent_end messages=4",
    ]
    assert [message.role for message in agent.messages] == ["user", "assistant", "toolResult", "assistant"]
    assert (_error_reply(agent).error_message, provider.pending) == ("budget check broke", 1)


async def test_a_hook_raising_after_an_abort_ends_the_run_with_an_aborted_reply() -> None:
    provider = faux()
    provider.set_responses([faux_message("never sent")])
    agent = Agent(provider.model(), stream_fn=provider)

    def abort_then_fail(_request: Request, _signal: AbortSignal) -> None:
        agent.abort()
        raise OSError("lost the connection to the config store")

    agent.prepare_request = abort_then_fail
    await agent.run("Go")
    reply = _error_reply(agent)
    assert (reply.stop_reason, reply.error_message) == ("aborted", "lost the connection to the config store")
    assert reply.error_info is not None
    assert (reply.error_info.kind, provider.state.call_count) == ("aborted", 0)


async def test_an_exception_without_a_message_is_named_by_its_type() -> None:
    provider = faux()
    provider.set_responses([faux_message("never sent")])

    def fail(_turn: CompletedTurn, _signal: AbortSignal) -> None:
        raise TimeoutError

    provider.set_responses([faux_message("Hi.")])
    agent = Agent(provider.model(), stream_fn=provider, finish_turn=fail)
    await agent.run("Go")
    reply = _error_reply(agent)
    assert reply.error_info is not None
    assert (reply.error_message, reply.error_info.kind, reply.error_info.retryable) == ("TimeoutError", "timeout", True)


async def test_the_agent_runs_again_after_a_hook_failure() -> None:
    provider = faux()
    provider.set_responses([faux_message("Fine.")])
    failures = [RuntimeError("once")]

    def flaky(_request: Request, _signal: AbortSignal) -> None:
        if failures:
            raise failures.pop()

    agent = Agent(provider.model(), stream_fn=provider, prepare_request=flaky)
    await agent.run("Go")
    assert await agent.run("Again") == agent.messages[2:]
    # The error reply stays in the transcript; transform_messages drops it when the transcript is sent.
    assert [_texts(message) for message in agent.messages] == ["Go", "", "Again", "Fine."]


def test_an_interrupt_from_a_hook_propagates_as_itself() -> None:
    async def main() -> tuple[BaseException | None, bool]:
        provider = faux()
        provider.set_responses(
            [faux_message([faux_tool_call("echo", {})], stop_reason="toolUse"), faux_message("never sent")]
        )

        def interrupt(_turn: NextTurn, _signal: AbortSignal) -> None:
            raise KeyboardInterrupt

        agent = Agent(provider.model(), tools=[ECHO], stream_fn=provider, prepare_next_turn=interrupt)
        try:
            await agent.run("Go")
        except KeyboardInterrupt as exc:
            return exc, agent.running
        return None, agent.running

    ran = on_own_loop(main)
    assert (ran.escaped, ran.reported) == (None, [])
    caught, running = ran.value
    assert (isinstance(caught, KeyboardInterrupt), running) == (True, False)


# -- listeners ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("is_async", [False, True], ids=["plain", "async"])
async def test_a_listener_raising_on_every_event_changes_nothing_for_the_run_or_the_other_listeners(
    is_async: bool,
) -> None:
    def make_provider() -> Any:
        provider = faux()
        provider.set_responses([faux_message([faux_tool_call("echo", {})], stop_reason="toolUse"), faux_message("Ok.")])
        return provider

    quiet = make_provider()
    reference = Recorder()
    await Agent(quiet.model(), tools=[ECHO], stream_fn=quiet).run("Go", reference)

    provider = make_provider()
    agent = Agent(provider.model(), tools=[ECHO], stream_fn=provider)
    agent.subscribe(_raising(ZeroDivisionError("listener bug"), is_async=is_async))
    recorder = Recorder()
    with loop_errors() as reported:
        added = await agent.run("Go", recorder)
    assert recorder.lines == reference.lines
    assert recorder.lines[-1] == "agent_end messages=4"
    assert added == agent.messages
    assert len(reported) == len(recorder.events)
    assert {repr(context["exception"]) for context in reported} == {"ZeroDivisionError('listener bug')"}
    assert [str(context["message"]).rsplit(" raised on ", 1)[1] for context in reported] == [
        f"{event.type}; the run goes on" for event in recorder.events
    ]


async def test_a_listener_raising_at_agent_end_still_lets_run_return() -> None:
    provider = faux()
    provider.set_responses([faux_message("Hi.")])
    agent = Agent(provider.model(), stream_fn=provider)

    def fail_at_end(event: AgentEvent) -> None:
        if event.type == "agent_end":
            raise RuntimeError("could not save")

    with loop_errors() as reported:
        added = await agent.run("Go", fail_at_end)
    assert ([_texts(message) for message in added], agent.running) == (["Go", "Hi."], False)
    assert [repr(context["exception"]) for context in reported] == ["RuntimeError('could not save')"]


async def test_with_no_handler_set_a_listener_failure_is_logged_by_asyncio(caplog: pytest.LogCaptureFixture) -> None:
    provider = faux()
    provider.set_responses([faux_message("Hi.")])
    agent = Agent(provider.model(), stream_fn=provider)

    def fail_once(event: AgentEvent) -> None:
        if event.type == "agent_start":
            raise RuntimeError("listener bug")

    await agent.run("Go", fail_once)
    # Only the records about this listener: an earlier test's leftovers, collected now, may log too.
    ours = [record for record in caplog.records if record.getMessage().startswith("agent listener ")]
    assert [(record.name, record.levelname) for record in ours] == [("asyncio", "ERROR")]
    assert ours[0].getMessage().endswith("fail_once raised on agent_start; the run goes on")
    assert ours[0].exc_info is not None
    assert repr(ours[0].exc_info[1]) == "RuntimeError('listener bug')"
