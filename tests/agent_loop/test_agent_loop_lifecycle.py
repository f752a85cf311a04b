"""The loop's lifecycle (issue 23): awaited listeners, hooks, bounds, queue modes, tool progress and
duration, clean abort, continuation errors — each driven by the faux provider, asserted on events."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from examples.agent_loop import (
    ABORTED_TEXT,
    Agent,
    AgentEvent,
    AgentTool,
    CompletedTurn,
    FinishDecision,
    NextTurn,
    OnUpdate,
    Request,
    ToolExecutionEnd,
    ToolExecutionUpdate,
    finish_turns,
    max_tool_calls,
    max_turns,
)
from examples.agent_loop.tools import timeout_text
from normalize import (
    AbortSignal,
    AssistantMessage,
    Context,
    Message,
    Model,
    StreamOptions,
    TextContent,
    ToolResultMessage,
    UserMessage,
)
from streamfns.faux import FauxResponse, FauxState, faux_message, faux_tool_call
from tests.agent_loop._agent import Recorder, describe, faux, loop_errors

#: Bounds runs that, broken, would wait for ever; with the loop working they end at once.
_BOUND_S = 30.0
TEXT_REPLY = ["message_start assistant", "update text_start", "update text_delta", "update text_end"]
EMPTY_CALL = ["update toolcall_start", "update toolcall_end"]
PROMPT = ["turn_start", "message_start user", "message_end user"]
RESULT = ["message_start toolResult", "message_end toolResult"]


def _tool(name: str, execute: Any, *, timeout_s: float | None = None) -> AgentTool:
    return AgentTool(name=name, description=name, parameters={"type": "object"}, execute=execute, timeout_s=timeout_s)


async def _echo(_id: str, _args: dict[str, Any], _signal: AbortSignal, _on_update: OnUpdate) -> str:
    return "ok"


ECHO = _tool("echo", _echo)


def _call() -> AssistantMessage:
    return faux_message([faux_tool_call("echo", {})], stop_reason="toolUse")


def _texts(message: Message) -> str:
    assert isinstance(message, ToolResultMessage | AssistantMessage | UserMessage)
    if isinstance(message.content, str):
        return message.content
    return "".join(block.text for block in message.content if isinstance(block, TextContent))


def _seeing(replies: list[str], seen: list[list[str]]) -> list[FauxResponse]:
    """Faux responses that record the texts of the transcript each request carries."""

    def answer(text: str) -> FauxResponse:
        def respond(context: Context, _options: StreamOptions | None, _state: FauxState, _model: Model) -> Any:
            seen.append([_texts(message) for message in context.messages])
            return faux_message(text)

        return respond

    return [answer(text) for text in replies]


# -- 1. awaited listeners --------------------------------------------------------------------------------


async def test_async_listeners_are_awaited_in_registration_order_one_event_at_a_time() -> None:
    provider = faux()
    provider.set_responses([_call(), faux_message("Done.")])
    calls: list[str] = []

    async def tool(_id: str, _args: dict[str, Any], _signal: AbortSignal, _on_update: OnUpdate) -> str:
        calls.append("tool ran")
        return "ok"

    agent = Agent(provider.model(), tools=[_tool("echo", tool)], stream_fn=provider)

    def listener(name: str) -> Any:
        async def on_event(event: AgentEvent) -> None:
            await asyncio.sleep(0)  # gives the loop every chance to move on without us
            await asyncio.sleep(0)
            calls.append(f"{name} {describe(event)}")

        return on_event

    agent.subscribe(listener("first"))
    remove = agent.subscribe(listener("removed"))
    agent.subscribe(listener("second"))
    remove()
    await agent.run("Go", listener("run"))
    # Every event reaches the three listeners in order before the next event is emitted; the tool runs
    # only once every listener has finished with its tool_execution_start.
    start = calls.index("tool ran")
    assert calls[start - 3 : start] == [f"{name} tool_start echo" for name in ("first", "second", "run")]
    without_tool = [line for line in calls if line != "tool ran"]
    events = [line.split(" ", 1)[1] for line in without_tool[::3]]
    assert without_tool == [f"{name} {event}" for event in events for name in ("first", "second", "run")]
    assert events[0] == "agent_start"
    assert events[-1] == "agent_end messages=4"


async def test_the_transcript_is_updated_when_a_listener_sees_message_end() -> None:
    provider = faux()
    provider.set_responses([faux_message("Hello.")])
    agent = Agent(provider.model(), stream_fn=provider)
    persisted: list[list[str]] = []

    async def persist(event: AgentEvent) -> None:
        if event.type == "message_end":
            await asyncio.sleep(0)
            persisted.append([_texts(message) for message in agent.messages])

    await agent.run("Hi", persist)
    assert persisted == [["Hi"], ["Hi", "Hello."]]


# -- 2. hooks and bounds -----------------------------------------------------------------------------------


async def test_hooks_run_in_the_core_order_around_the_turn_events() -> None:
    provider = faux()
    provider.set_responses([_call(), faux_message("Done.")])
    lines: list[str] = []

    def prepare_next_turn(turn: NextTurn, _signal: AbortSignal) -> None:
        lines.append(f"prepare_next_turn pending={len(turn.messages)}")

    async def prepare_request(request: Request, _signal: AbortSignal) -> None:
        lines.append(f"prepare_request messages={len(request.context.messages)}")

    def finish_turn(turn: CompletedTurn, _signal: AbortSignal) -> None:
        lines.append(f"finish_turn {turn.message.stop_reason} results={len(turn.tool_results)}")

    agent = Agent(
        provider.model(),
        tools=[ECHO],
        stream_fn=provider,
        prepare_next_turn=prepare_next_turn,
        prepare_request=prepare_request,
        finish_turn=finish_turn,
    )
    await agent.run("Go", lambda event: lines.append(describe(event)))
    assert lines == [
        "agent_start",
        *PROMPT,  # no prepare_next_turn before a run's first turn: it runs between turns
        "prepare_request messages=1",
        "message_start assistant",
        *EMPTY_CALL,
        "message_end assistant toolUse",
        "tool_start echo",
        "tool_end echo ok",
        *RESULT,
        "finish_turn toolUse results=1",
        "turn_end toolUse results=1",
        "prepare_next_turn pending=0",
        "turn_start",
        "prepare_request messages=3",
        *TEXT_REPLY,
        "message_end assistant stop",
        "finish_turn stop results=0",
        "turn_end stop results=0",
        "agent_end messages=4",
    ]


async def test_prepare_next_turn_replaces_the_state_and_adds_messages() -> None:
    provider = faux()
    seen: list[list[str]] = []
    models: list[tuple[str, str | None]] = []

    def respond(context: Context, options: StreamOptions | None, _state: FauxState, model: Model) -> AssistantMessage:
        seen.append([_texts(message) for message in context.messages])
        models.append((model.id, options.reasoning if options else None))
        return _call() if len(seen) == 1 else faux_message("Done.")

    provider.set_responses([respond, respond])
    agent = Agent(
        provider.model(), tools=[ECHO], stream_fn=provider, messages=[UserMessage(content="old, long history")]
    )

    async def compact(turn: NextTurn, _signal: AbortSignal) -> NextTurn:
        summary = UserMessage(content="summary")
        context = dataclasses.replace(turn.context, messages=[summary])
        model = dataclasses.replace(turn.model, id="faux-other")
        return NextTurn(context, model, "high", [*turn.messages, UserMessage(content="added by the hook")])

    agent.prepare_next_turn = compact
    recorder = Recorder()
    await agent.run("Go", recorder)
    assert seen == [["old, long history", "Go"], ["summary", "added by the hook"]]
    assert models == [("faux-1", None), ("faux-other", "high")]
    assert (agent.model.id, agent.options.reasoning) == ("faux-other", "high")  # the agent's own, from now on
    assert [_texts(message) for message in agent.messages] == ["summary", "added by the hook", "Done."]
    between = recorder.lines.index("turn_end toolUse results=1")
    assert recorder.lines[between + 1 : between + 4] == ["turn_start", "message_start user", "message_end user"]


async def test_prepare_request_replaces_one_request_only() -> None:
    provider = faux()
    seen: list[list[str]] = []
    provider.set_responses([*_seeing(["First."], seen), _call(), *_seeing(["Last."], seen)])
    agent = Agent(provider.model(), tools=[ECHO], stream_fn=provider)
    requests = 0

    def prepare_request(request: Request, _signal: AbortSignal) -> Request | None:
        nonlocal requests
        requests += 1
        if requests != 1:
            return None
        hidden = [*request.context.messages, UserMessage(content="only in the first request")]
        return dataclasses.replace(request, context=dataclasses.replace(request.context, messages=hidden))

    agent.prepare_request = prepare_request
    await agent.run("One")
    await agent.run("Two")
    assert seen == [["One", "only in the first request"], ["One", "First.", "Two", "", "ok"]]
    assert "only in the first request" not in [_texts(message) for message in agent.messages]


async def test_finish_turn_continue_makes_another_request_and_end_stops_after_the_tools() -> None:
    provider = faux()
    provider.set_responses([faux_message("Thinking aloud."), _call(), faux_message("never sent")])
    decisions: list[FinishDecision | None] = ["continue", "end"]

    async def finish_turn(_turn: CompletedTurn, _signal: AbortSignal) -> FinishDecision | None:
        return decisions.pop(0)

    agent = Agent(provider.model(), tools=[ECHO], stream_fn=provider, finish_turn=finish_turn)
    recorder = Recorder()
    await agent.run("Go", recorder)
    assert [line for line in recorder.lines if line.startswith(("turn_", "agent_end"))] == [
        "turn_start",
        "turn_end stop results=0",  # "continue": a request although the model asked for nothing
        "turn_start",
        "turn_end toolUse results=1",  # "end": the tool ran and was answered, nothing more is sent
        "agent_end messages=4",
    ]
    assert provider.pending == 1


async def test_finish_turn_cannot_continue_after_an_error_reply() -> None:
    provider = faux()
    provider.set_responses([faux_message("", stop_reason="error"), faux_message("never sent")])
    turns: list[str] = []

    def finish_turn(turn: CompletedTurn, _signal: AbortSignal) -> FinishDecision:
        turns.append(turn.message.stop_reason)
        return "continue"

    agent = Agent(provider.model(), stream_fn=provider, finish_turn=finish_turn)
    await agent.run("Go")
    assert (turns, provider.pending) == (["error"], 1)


@pytest.mark.parametrize(
    ("finish_turn", "turns"),
    [(max_turns(3), 3), (max_tool_calls(2), 2), (finish_turns(max_tool_calls(5), max_turns(4)), 4)],
    ids=["max_turns", "max_tool_calls", "first-decision"],
)
async def test_bounds_end_a_model_that_always_calls_a_tool(finish_turn: Any, turns: int) -> None:
    provider = faux()
    provider.set_responses([_call() for _ in range(16)])
    agent = Agent(provider.model(), tools=[ECHO], stream_fn=provider, finish_turn=finish_turn)
    recorder = Recorder()
    await agent.run("Loop", recorder)
    assert recorder.lines.count("turn_end toolUse results=1") == turns
    assert recorder.lines[-1] == f"agent_end messages={1 + 2 * turns}"
    assert provider.pending == 16 - turns


async def test_a_run_timeout_aborts_a_hung_tool_and_ends_the_run() -> None:
    provider = faux()
    provider.set_responses([faux_message([faux_tool_call("hang", {})], stop_reason="toolUse"), faux_message("never")])
    started = asyncio.Event()

    async def hang(_id: str, _args: dict[str, Any], _signal: AbortSignal, _on_update: OnUpdate) -> str:
        started.set()
        await asyncio.sleep(_BOUND_S * 2)
        return "too late"

    agent = Agent(provider.model(), tools=[_tool("hang", hang)], stream_fn=provider, timeout_s=0.05)
    recorder = Recorder()
    async with asyncio.timeout(_BOUND_S):
        await agent.run("Go", recorder)
    assert started.is_set()
    assert recorder.lines[-4:] == [*RESULT, "turn_end toolUse results=1", "agent_end messages=3"]
    assert _texts(agent.messages[-1]) == ABORTED_TEXT
    assert (provider.pending, agent.running) == (1, False)


async def test_a_run_timeout_aborts_a_hung_stream() -> None:
    provider = faux(token_size=(1, 1), tokens_per_second=1)  # one character a second: "hung" for the test
    provider.set_responses([faux_message("A reply that would take a minute to stream.")])
    agent = Agent(provider.model(), stream_fn=provider, timeout_s=0.05)
    async with asyncio.timeout(_BOUND_S):
        await agent.run("Go")
    reply = agent.messages[-1]
    assert isinstance(reply, AssistantMessage)
    assert (reply.stop_reason, reply.error_message) == ("aborted", "the run timed out after 0.05 s")


async def test_a_tool_timeout_answers_the_call_and_the_run_goes_on() -> None:
    provider = faux()
    provider.set_responses([faux_message([faux_tool_call("slow", {})], stop_reason="toolUse"), faux_message("OK.")])
    cleaned = asyncio.Event()

    async def slow(_id: str, _args: dict[str, Any], _signal: AbortSignal, _on_update: OnUpdate) -> str:
        try:
            await asyncio.sleep(_BOUND_S * 2)
        finally:
            cleaned.set()
        return "too late"

    agent = Agent(provider.model(), tools=[_tool("slow", slow, timeout_s=0.05)], stream_fn=provider)
    async with asyncio.timeout(_BOUND_S):
        await agent.run("Go")
    result = agent.messages[2]
    assert isinstance(result, ToolResultMessage)
    assert (result.is_error, _texts(result)) == (True, 'Tool "slow" timed out after 0.05 s')
    assert _texts(result) == timeout_text("slow", 0.05)
    assert cleaned.is_set()
    assert _texts(agent.messages[-1]) == "OK."


# -- 3. queue modes ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "requests"),
    [
        ("one-at-a-time", [["Go", "", "ok", "steer 1"], ["Go", "", "ok", "steer 1", "A.", "steer 2"]]),
        ("all", [["Go", "", "ok", "steer 1", "steer 2"]]),
    ],
)
async def test_steering_mode_decides_how_many_messages_a_turn_boundary_takes(
    mode: Any, requests: list[list[str]]
) -> None:
    provider = faux()
    seen: list[list[str]] = []
    provider.set_responses([_call(), *_seeing(["A.", "B."], seen)])
    agent = Agent(provider.model(), tools=[ECHO], stream_fn=provider, steering_mode=mode)

    def steer_during_the_tool(event: AgentEvent) -> None:
        if event.type == "tool_execution_start":
            agent.steer("steer 1")
            agent.steer("steer 2")

    await agent.run("Go", steer_during_the_tool)
    assert seen == requests


@pytest.mark.parametrize(
    ("mode", "requests"),
    [
        ("one-at-a-time", [["Go"], ["Go", "A.", "later 1"], ["Go", "A.", "later 1", "B.", "later 2"]]),
        ("all", [["Go"], ["Go", "A.", "later 1", "later 2"]]),
    ],
)
async def test_follow_up_mode_decides_how_many_messages_wait_for_each_stop(
    mode: Any, requests: list[list[str]]
) -> None:
    provider = faux()
    seen: list[list[str]] = []
    provider.set_responses(_seeing(["A.", "B.", "C."], seen))
    agent = Agent(provider.model(), stream_fn=provider, follow_up_mode=mode)
    agent.follow_up("later 1")
    agent.follow_up("later 2")
    await agent.run("Go")
    assert seen == requests


# -- 4 and 5. duration and progress ------------------------------------------------------------------------


async def test_tool_progress_is_emitted_between_start_and_end_with_a_duration() -> None:
    provider = faux()
    calls = [faux_tool_call("work", {}), faux_tool_call("work", {"bad": 1})]
    provider.set_responses([faux_message(calls, stop_reason="toolUse"), faux_message("Done.")])

    async def work(_id: str, _args: dict[str, Any], _signal: AbortSignal, on_update: OnUpdate) -> str:
        await on_update("half")
        await on_update([TextContent(text="almost")])
        return "done"

    strict = {"type": "object", "additionalProperties": False}
    tool = AgentTool(name="work", description="work", parameters=strict, execute=work)
    agent = Agent(provider.model(), tools=[tool], stream_fn=provider)
    recorder = Recorder()
    await agent.run("Go", recorder)
    tool_lines = [line for line in recorder.lines if line.startswith("tool_")]
    assert tool_lines == [
        "tool_start work",
        "tool_start work",
        "tool_end work error",  # the invalid second call: refused at once, never run
        "tool_update work half",
        "tool_update work almost",
        "tool_end work ok",
    ]
    updates = [event for event in recorder.events if isinstance(event, ToolExecutionUpdate)]
    assert [(u.tool_call_id, u.arguments, u.partial_result) for u in updates] == [
        (calls[0].id, {}, [TextContent(text="half")]),
        (calls[0].id, {}, [TextContent(text="almost")]),
    ]
    refused, ran = [event for event in recorder.events if isinstance(event, ToolExecutionEnd)]
    assert refused.duration_ms is None
    assert ran.duration_ms is not None
    assert ran.duration_ms >= 0


# -- 7. continuation errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("messages", "error"),
    [
        ([], "Cannot continue: no messages in context"),
        ([UserMessage(content="Hi"), faux_message("Hello.")], "Cannot continue from message role: assistant"),
    ],
)
async def test_continuing_with_nothing_to_answer_is_refused_before_anything_is_sent(
    messages: list[Message], error: str
) -> None:
    provider = faux()
    provider.set_responses([faux_message("never sent")])
    agent = Agent(provider.model(), stream_fn=provider, messages=messages)
    recorder = Recorder()
    with pytest.raises(RuntimeError) as raised:
        await agent.run([], recorder)
    assert str(raised.value) == error
    assert (recorder.lines, provider.state.call_count, agent.running, len(agent.messages)) == (
        [],
        0,
        False,
        len(messages),
    )


async def test_continuing_from_an_assistant_message_takes_a_queued_follow_up() -> None:
    provider = faux()
    seen: list[list[str]] = []
    provider.set_responses(_seeing(["Sure."], seen))
    agent = Agent(provider.model(), stream_fn=provider, messages=[UserMessage(content="Hi"), faux_message("Hello.")])
    agent.follow_up("And then?")
    await agent.run([])
    assert seen == [["Hi", "Hello.", "And then?"]]


# -- 9. no request after an abort ---------------------------------------------------------------------------


async def test_an_abort_in_prepare_next_turn_sends_nothing() -> None:
    provider = faux()
    provider.set_responses([_call(), faux_message("never sent")])
    agent = Agent(provider.model(), tools=[ECHO], stream_fn=provider)

    def abort(_turn: NextTurn, _signal: AbortSignal) -> None:
        agent.abort()

    agent.prepare_next_turn = abort
    recorder = Recorder()
    assert [message.role for message in await agent.run("Go", recorder)] == ["user", "assistant", "toolResult"]
    assert recorder.lines[-2:] == ["turn_end toolUse results=1", "agent_end messages=3"]  # no second turn_start
    assert provider.state.call_count == 1


async def test_a_listener_failing_on_a_progress_event_leaves_the_tool_and_the_run_going() -> None:
    provider = faux()
    provider.set_responses([faux_message([faux_tool_call("work", {})], stop_reason="toolUse"), faux_message("Done.")])

    async def work(_id: str, _args: dict[str, Any], _signal: AbortSignal, on_update: OnUpdate) -> str:
        await on_update("half")  # returns normally: the listener's failure is not the tool's
        return "finished"

    def fail_on_progress(event: AgentEvent) -> None:
        if event.type == "tool_execution_update":
            raise ValueError("the listener broke")

    agent = Agent(provider.model(), tools=[_tool("work", work)], stream_fn=provider)
    agent.subscribe(fail_on_progress)
    recorder = Recorder()
    with loop_errors() as reported:
        await agent.run("Go", recorder)
    assert [line for line in recorder.lines if line.startswith("tool_")] == [
        "tool_start work",
        "tool_update work half",  # the listener after the failing one still saw it
        "tool_end work ok",
    ]
    assert [_texts(message) for message in agent.messages] == ["Go", "", "finished", "Done."]
    assert [repr(context["exception"]) for context in reported] == ["ValueError('the listener broke')"]
