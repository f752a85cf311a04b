"""The agent loop against the scripted faux provider: exact event orders for every path of a run."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from examples.agent_loop import ABORTED_TEXT, LENGTH_TEXT, Agent, AgentEvent, AgentTool, MessageUpdate, OnUpdate
from examples.agent_loop.demo_tools import CALCULATOR
from normalize import (
    AbortSignal,
    AssistantMessage,
    Context,
    ErrorInfo,
    Message,
    Model,
    StreamOptions,
    TextContent,
    ToolResultMessage,
    UserMessage,
)
from streamfns.faux import FauxState, faux_message, faux_text, faux_tool_call
from tests.agent_loop._agent import Recorder, faux, loop_errors

TEXT_REPLY = [
    "message_start assistant",
    "update text_start",
    "update text_delta",
    "update text_end",
]
TOOL_CALL = ["update toolcall_start", "update toolcall_delta", "update toolcall_end"]
EMPTY_CALL = ["update toolcall_start", "update toolcall_end"]  # ``{}`` arguments stream no fragment
PROMPT = ["turn_start", "message_start user", "message_end user"]
RESULT = ["message_start toolResult", "message_end toolResult"]


def _texts(message: Message) -> str:
    assert isinstance(message, ToolResultMessage | AssistantMessage)
    return "".join(block.text for block in message.content if isinstance(block, TextContent))


def _results(agent: Agent) -> list[ToolResultMessage]:
    return [message for message in agent.messages if isinstance(message, ToolResultMessage)]


def _tool(name: str, execute: Any, parameters: dict[str, Any] | None = None) -> AgentTool:
    schema = parameters or {"type": "object", "properties": {}}
    return AgentTool(name=name, description=f"the {name} tool", parameters=schema, execute=execute)


async def test_a_text_reply_is_one_turn() -> None:
    provider = faux()
    provider.set_responses([faux_message("Hello there.")])
    agent, recorder = Agent(provider.model(), stream_fn=provider), Recorder()
    added = await agent.run("Hi", recorder)
    assert recorder.lines == [
        "agent_start",
        *PROMPT,
        *TEXT_REPLY,
        "message_end assistant stop",
        "turn_end stop results=0",
        "agent_end messages=2",
    ]
    assert added == agent.messages
    assert [message.role for message in agent.messages] == ["user", "assistant"]
    assert _texts(agent.messages[1]) == "Hello there."
    assert not agent.running


async def test_one_tool_round_trip_sends_the_result_back_with_the_call_id() -> None:
    provider = faux()
    call = faux_tool_call("calculator", {"expression": "6 * 7"})
    seen: list[Context] = []

    def answer(context: Context, _options: StreamOptions | None, _state: FauxState, _model: Model) -> AssistantMessage:
        seen.append(context)
        return faux_message("It is 42.")

    provider.set_responses([faux_message([faux_text("Computing."), call], stop_reason="toolUse"), answer])
    agent, recorder = Agent(provider.model(), tools=[CALCULATOR], stream_fn=provider), Recorder()
    await agent.run("What is 6 * 7?", recorder)
    assert recorder.lines == [
        "agent_start",
        *PROMPT,
        *TEXT_REPLY,
        *TOOL_CALL,
        "message_end assistant toolUse",
        "tool_start calculator",
        "tool_end calculator ok",
        *RESULT,
        "turn_end toolUse results=1",
        "turn_start",
        *TEXT_REPLY,
        "message_end assistant stop",
        "turn_end stop results=0",
        "agent_end messages=4",
    ]
    (result,) = _results(agent)
    assert (result.tool_call_id, result.tool_name, result.is_error) == (call.id, "calculator", False)
    assert _texts(result) == "42"
    # The second request carries the whole transcript, the tool result last.
    assert [message.role for message in seen[0].messages] == ["user", "assistant", "toolResult"]
    assert seen[0].messages[-1] is result
    assert [tool.name for tool in seen[0].tools or []] == ["calculator"]


async def test_message_updates_carry_every_stream_event_and_the_live_partial() -> None:
    provider = faux(token_size=(1, 1))  # four characters per delta: several deltas per block
    provider.set_responses([faux_message("A reply long enough to arrive in several pieces.")])
    agent, recorder = Agent(provider.model(), stream_fn=provider), Recorder()
    await agent.run("Hi", recorder)
    updates = [event for event in recorder.events if isinstance(event, MessageUpdate)]
    deltas = [event.event for event in updates if event.event.type == "text_delta"]
    assert len(deltas) == 12
    assert "".join(delta.delta for delta in deltas) == "A reply long enough to arrive in several pieces."  # pyright: ignore[reportAttributeAccessIssue]
    assert all(update.message is agent.messages[1] for update in updates)


async def test_parallel_calls_run_concurrently_and_results_keep_the_message_order() -> None:
    fast_finished = asyncio.Event()

    async def slow(_id: str, _args: dict[str, Any], _signal: AbortSignal, _on_update: OnUpdate) -> str:
        # Finishes only after the fast tool did: this deadlocks (and times out) if tools ran one by one.
        await asyncio.wait_for(fast_finished.wait(), timeout=5)
        return "slow done"

    async def fast(_id: str, _args: dict[str, Any], _signal: AbortSignal, _on_update: OnUpdate) -> str:
        fast_finished.set()
        return "fast done"

    provider = faux()
    calls = [faux_tool_call("slow", {}), faux_tool_call("fast", {})]
    provider.set_responses([faux_message(calls, stop_reason="toolUse"), faux_message("Both done.")])
    agent = Agent(provider.model(), tools=[_tool("slow", slow), _tool("fast", fast)], stream_fn=provider)
    recorder = Recorder()
    await agent.run("Run both", recorder)
    assert recorder.lines[4:16] == [
        "message_start assistant",
        *EMPTY_CALL,
        *EMPTY_CALL,
        "message_end assistant toolUse",
        "tool_start slow",
        "tool_start fast",
        "tool_end fast ok",  # completion order
        "tool_end slow ok",
        *RESULT,  # results in the assistant message's order: slow, then fast
    ]
    assert [(r.tool_call_id, _texts(r)) for r in _results(agent)] == [
        (calls[0].id, "slow done"),
        (calls[1].id, "fast done"),
    ]


def _one_failed_call(name: str, *, with_arguments: bool) -> list[str]:
    """The exact events of a run whose one tool call fails and whose model then answers in text."""
    return [
        "agent_start",
        *PROMPT,
        "message_start assistant",
        *(TOOL_CALL if with_arguments else EMPTY_CALL),
        "message_end assistant toolUse",
        f"tool_start {name}",
        f"tool_end {name} error",
        *RESULT,
        "turn_end toolUse results=1",
        "turn_start",
        *TEXT_REPLY,
        "message_end assistant stop",
        "turn_end stop results=0",
        "agent_end messages=4",
    ]


async def _one_call_run(tool: AgentTool | None, name: str, arguments: dict[str, Any]) -> tuple[Recorder, Agent, str]:
    provider = faux()
    call = faux_tool_call(name, arguments)
    provider.set_responses([faux_message([call], stop_reason="toolUse"), faux_message("Understood.")])
    agent = Agent(provider.model(), tools=[tool] if tool else [], stream_fn=provider)
    recorder = Recorder()
    await agent.run("Go", recorder)
    return recorder, agent, call.id


async def test_arguments_that_break_the_schema_are_refused_and_execute_never_runs() -> None:
    ran: list[dict[str, Any]] = []

    async def read(_id: str, args: dict[str, Any], _signal: AbortSignal, _on_update: OnUpdate) -> str:
        ran.append(args)
        return "contents"

    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    recorder, agent, call_id = await _one_call_run(_tool("read", read, schema), "read", {"file": "a.txt"})
    assert ran == []
    assert recorder.lines == _one_failed_call("read", with_arguments=True)
    (result,) = _results(agent)
    assert (result.tool_call_id, result.is_error) == (call_id, True)
    assert _texts(result) == (
        'Validation failed for tool "read":\n  - path: is required\n\nReceived arguments:\n{\n  "file": "a.txt"\n}'
    )


async def test_an_exception_in_execute_becomes_an_error_result_with_its_message() -> None:
    async def explode(_id: str, _args: dict[str, Any], _signal: AbortSignal, _on_update: OnUpdate) -> str:
        raise RuntimeError("disk on fire")

    recorder, agent, call_id = await _one_call_run(_tool("burn", explode), "burn", {})
    (result,) = _results(agent)
    assert (result.tool_call_id, result.is_error, _texts(result)) == (call_id, True, "disk on fire")
    assert recorder.lines == _one_failed_call("burn", with_arguments=False)  # the model saw the error


async def test_a_tool_returning_something_unusable_is_an_error_not_a_crash() -> None:
    async def odd(_id: str, _args: dict[str, Any], _signal: AbortSignal, _on_update: OnUpdate) -> Any:
        return {"not": "content"}

    _recorder, agent, _call_id = await _one_call_run(_tool("odd", odd), "odd", {})
    (result,) = _results(agent)
    assert result.is_error
    assert _texts(result) == "the tool returned dict, not text or a list of text/image blocks"


async def test_an_unknown_tool_is_answered_not_found() -> None:
    recorder, agent, call_id = await _one_call_run(None, "nope", {"x": 1})
    (result,) = _results(agent)
    assert (result.tool_call_id, result.tool_name, result.is_error, _texts(result)) == (
        call_id,
        "nope",
        True,
        "Tool nope not found",
    )
    assert recorder.lines == _one_failed_call("nope", with_arguments=True)


async def test_an_abort_while_a_tool_runs_fails_the_tool_and_ends_the_run() -> None:
    provider = faux()
    agent: Agent

    async def cooperative(_id: str, _args: dict[str, Any], signal: AbortSignal, _on_update: OnUpdate) -> str:
        agent.abort()
        assert signal.aborted
        return "finished anyway"  # a success after an abort must not count

    call = faux_tool_call("work", {})
    provider.set_responses([faux_message([call], stop_reason="toolUse"), faux_message("never sent")])
    agent = Agent(provider.model(), tools=[_tool("work", cooperative)], stream_fn=provider)
    recorder = Recorder()
    await agent.run("Go", recorder)
    assert recorder.lines == [
        "agent_start",
        *PROMPT,
        "message_start assistant",
        *EMPTY_CALL,
        "message_end assistant toolUse",
        "tool_start work",
        "tool_end work error",
        *RESULT,
        "turn_end toolUse results=1",
        "agent_end messages=3",  # no further request: the StreamFn is not called after an abort
    ]
    (result,) = _results(agent)
    assert (result.tool_call_id, result.is_error, _texts(result)) == (call.id, True, ABORTED_TEXT)
    assert agent.messages[-1] is result
    assert (provider.state.call_count, provider.pending) == (1, 1)  # "never sent" is still scripted


async def test_an_abort_stops_a_tool_that_ignores_the_signal() -> None:
    provider = faux()
    cleaned_up = asyncio.Event()

    async def stubborn(_id: str, _args: dict[str, Any], _signal: AbortSignal, _on_update: OnUpdate) -> str:
        try:
            await asyncio.sleep(30)
        finally:
            cleaned_up.set()
        return "too late"

    provider.set_responses([faux_message([faux_tool_call("stubborn", {})], stop_reason="toolUse")])
    agent = Agent(provider.model(), tools=[_tool("stubborn", stubborn)], stream_fn=provider)

    def abort_once_running(event: AgentEvent) -> None:
        if event.type == "tool_execution_start":
            asyncio.get_running_loop().call_later(0.05, agent.abort)

    await asyncio.wait_for(agent.run("Go", abort_once_running), timeout=5)
    assert cleaned_up.is_set()
    assert _texts(_results(agent)[0]) == ABORTED_TEXT


async def test_an_abort_during_the_stream_keeps_the_partial_reply_and_ends_the_run() -> None:
    provider = faux(token_size=(1, 1))
    provider.set_responses([faux_message("One, two, three, four, five."), faux_message("never sent")])
    agent = Agent(provider.model(), stream_fn=provider)
    agent.follow_up("and then?")  # an aborted run does not go on with follow-ups
    recorder = Recorder()

    def abort_at_second_delta(event: AgentEvent) -> None:
        recorder(event)
        deltas = [e for e in recorder.events if isinstance(e, MessageUpdate) and e.event.type == "text_delta"]
        if len(deltas) == 2:
            agent.abort()

    await agent.run("Count", abort_at_second_delta)
    assert recorder.lines == [
        "agent_start",
        *PROMPT,
        "message_start assistant",
        "update text_start",
        "update text_delta",
        "update text_delta",
        "message_end assistant aborted",
        "turn_end aborted results=0",
        "agent_end messages=2",
    ]
    final = agent.messages[-1]
    assert isinstance(final, AssistantMessage)
    assert _texts(final) == "One, two"  # the partial content survives
    assert final.error_info is not None
    assert final.error_info.kind == "aborted"
    assert provider.pending == 1


async def test_a_provider_error_ends_the_run_and_its_tool_calls_never_run() -> None:
    ran: list[str] = []

    async def record(_id: str, _args: dict[str, Any], _signal: AbortSignal, _on_update: OnUpdate) -> str:
        ran.append("ran")
        return "ok"

    provider = faux()
    failed = faux_message(
        [faux_text("Partial"), faux_tool_call("record", {})],
        stop_reason="error",
        error_message="Anthropic API error 529 overloaded_error: Overloaded",
        error_info=ErrorInfo.of("overloaded", status=529),
    )
    provider.set_responses([failed, faux_message("never sent")])
    agent = Agent(provider.model(), tools=[_tool("record", record)], stream_fn=provider)
    agent.follow_up("next")
    recorder = Recorder()
    await agent.run("Go", recorder)
    assert recorder.lines == [
        "agent_start",
        *PROMPT,
        *TEXT_REPLY,
        *EMPTY_CALL,
        "message_end assistant error",  # no tool_execution events: an errored reply's calls never run
        "turn_end error results=0",
        "agent_end messages=2",
    ]
    assert ran == []
    final = agent.messages[-1]
    assert isinstance(final, AssistantMessage)
    assert (final.stop_reason, final.error_message) == ("error", "Anthropic API error 529 overloaded_error: Overloaded")
    assert provider.pending == 1  # the follow-up was not sent


async def test_a_reply_cut_by_the_output_limit_has_its_calls_refused() -> None:
    ran: list[str] = []

    async def write(_id: str, _args: dict[str, Any], _signal: AbortSignal, _on_update: OnUpdate) -> str:
        ran.append("ran")
        return "written"

    provider = faux()
    call = faux_tool_call("write", {"path": "a"})
    provider.set_responses([faux_message([call], stop_reason="length"), faux_message("Retrying later.")])
    agent = Agent(provider.model(), tools=[_tool("write", write)], stream_fn=provider)
    recorder = Recorder()
    await agent.run("Go", recorder)
    assert ran == []
    (result,) = _results(agent)
    assert (result.tool_call_id, result.is_error, _texts(result)) == (call.id, True, LENGTH_TEXT.format(name="write"))
    assert "turn_end length results=1" in recorder.lines


async def test_steering_is_delivered_after_the_tool_results_before_the_next_request() -> None:
    provider = faux()
    agent: Agent
    requests: list[list[str]] = []

    async def lookup(_id: str, _args: dict[str, Any], _signal: AbortSignal, _on_update: OnUpdate) -> str:
        agent.steer("Use metric units.")  # arrives while the tool runs
        return "12 degrees"

    def answer(context: Context, _options: StreamOptions | None, _state: FauxState, _model: Model) -> AssistantMessage:
        requests.append([message.role for message in context.messages])
        return faux_message("12 °C.")

    provider.set_responses([faux_message([faux_tool_call("lookup", {})], stop_reason="toolUse"), answer])
    agent = Agent(provider.model(), tools=[_tool("lookup", lookup)], stream_fn=provider)
    recorder = Recorder()
    await agent.run("Weather?", recorder)
    assert recorder.lines == [
        "agent_start",
        *PROMPT,
        "message_start assistant",
        *EMPTY_CALL,
        "message_end assistant toolUse",
        "tool_start lookup",
        "tool_end lookup ok",
        *RESULT,
        "turn_end toolUse results=1",
        "turn_start",
        "message_start user",  # the steering message, after the results, before the request
        "message_end user",
        *TEXT_REPLY,
        "message_end assistant stop",
        "turn_end stop results=0",
        "agent_end messages=5",
    ]
    assert requests == [["user", "assistant", "toolResult", "user"]]


async def test_steering_keeps_a_run_going_when_the_model_had_stopped() -> None:
    provider = faux()
    provider.set_responses([faux_message("First answer."), faux_message("Second answer.")])
    agent = Agent(provider.model(), stream_fn=provider)

    def steer_during_the_reply(event: AgentEvent) -> None:
        recorder(event)
        if event.type == "message_update" and event.event.type == "text_start" and len(agent.messages) == 2:
            agent.steer("Actually, shorter.")  # during the first reply only

    recorder = Recorder()
    await agent.run("Tell me", steer_during_the_reply)
    assert recorder.lines == [
        "agent_start",
        *PROMPT,
        *TEXT_REPLY,
        "message_end assistant stop",
        "turn_end stop results=0",
        "turn_start",
        "message_start user",
        "message_end user",
        *TEXT_REPLY,
        "message_end assistant stop",
        "turn_end stop results=0",
        "agent_end messages=4",
    ]
    assert _texts(agent.messages[-1]) == "Second answer."


async def test_follow_ups_wait_until_the_agent_would_stop() -> None:
    provider = faux()
    call = faux_tool_call("calculator", {"expression": "2 + 2"})
    provider.set_responses(
        [faux_message([call], stop_reason="toolUse"), faux_message("4."), faux_message("You're welcome.")]
    )
    agent = Agent(provider.model(), tools=[CALCULATOR], stream_fn=provider)
    agent.follow_up(UserMessage(content="Thanks!"))  # queued before the run: still waits for the tool round trip
    recorder = Recorder()
    await agent.run("2 + 2?", recorder)
    assert recorder.lines == [
        "agent_start",
        *PROMPT,
        "message_start assistant",
        *TOOL_CALL,
        "message_end assistant toolUse",
        "tool_start calculator",
        "tool_end calculator ok",
        *RESULT,
        "turn_end toolUse results=1",
        "turn_start",
        *TEXT_REPLY,
        "message_end assistant stop",
        "turn_end stop results=0",
        *PROMPT,  # the follow-up: a new turn only once the agent had stopped
        *TEXT_REPLY,
        "message_end assistant stop",
        "turn_end stop results=0",
        "agent_end messages=6",
    ]
    roles = [message.role for message in agent.messages]
    assert roles == ["user", "assistant", "toolResult", "assistant", "user", "assistant"]
    assert [_texts(agent.messages[i]) for i in (2, 3, 5)] == ["4", "4.", "You're welcome."]


async def test_a_raising_stream_fn_ends_the_run_with_an_error_message() -> None:
    def broken(_model: Model, _context: Context, _options: StreamOptions | None = None) -> Any:
        raise ValueError("bad adapter")

    agent = Agent(Model(id="m", api="broken", provider="p"), stream_fn=broken)
    recorder = Recorder()
    await agent.run("Hi", recorder)
    assert recorder.lines == [
        "agent_start",
        *PROMPT,
        "message_start assistant",
        "message_end assistant error",
        "turn_end error results=0",
        "agent_end messages=2",
    ]
    final = agent.messages[-1]
    assert isinstance(final, AssistantMessage)
    assert final.error_message == "ValueError: bad adapter"


async def test_a_raising_listener_neither_stops_the_run_nor_the_listeners_after_it() -> None:
    provider = faux()
    provider.set_responses([faux_message("Hello.")])
    agent = Agent(provider.model(), stream_fn=provider)

    def fragile(event: AgentEvent) -> None:
        if event.type == "message_update":
            raise LookupError("listener bug")

    agent.subscribe(fragile)
    recorder = Recorder()
    with loop_errors() as reported:
        added = await agent.run("Hi", recorder)
    assert recorder.lines == [
        "agent_start",
        *PROMPT,
        *TEXT_REPLY,
        "message_end assistant stop",
        "turn_end stop results=0",
        "agent_end messages=2",
    ], "every event reached the listener after the failing one"
    assert (added, agent.running) == (agent.messages, False)
    name = f"{test_a_raising_listener_neither_stops_the_run_nor_the_listeners_after_it.__name__}.<locals>.fragile"
    assert [(context["message"], repr(context["exception"])) for context in reported] == [
        (f"agent listener {name} raised on message_update; the run goes on", "LookupError('listener bug')")
    ] * 3  # text_start, text_delta, text_end


async def test_a_second_concurrent_run_is_refused() -> None:
    provider = faux(tokens_per_second=50)
    provider.set_responses([faux_message("A slow reply that takes a while.")])
    agent = Agent(provider.model(), stream_fn=provider)
    first = asyncio.ensure_future(agent.run("Hi"))
    await asyncio.sleep(0.01)
    with pytest.raises(RuntimeError, match="already running"):
        await agent.run("Hi")
    agent.abort()
    await first


async def test_an_empty_prompt_continues_from_the_transcript() -> None:
    provider = faux()
    seen: list[list[str]] = []

    def answer(context: Context, _options: StreamOptions | None, _state: FauxState, _model: Model) -> AssistantMessage:
        seen.append([message.role for message in context.messages])
        return faux_message("Continuing.")

    provider.set_responses([answer])
    agent = Agent(provider.model(), stream_fn=provider, messages=[UserMessage(content="Earlier question")])
    recorder = Recorder()
    added = await agent.run([], recorder)
    assert recorder.lines == [
        "agent_start",
        "turn_start",
        *TEXT_REPLY,
        "message_end assistant stop",
        "turn_end stop results=0",
        "agent_end messages=1",
    ]
    assert seen == [["user"]]
    assert added == agent.messages[1:]


async def test_steering_left_over_from_a_failed_run_goes_out_with_the_next_prompt_after_it() -> None:
    provider = faux()
    seen: list[list[str]] = []

    def reply(context: Context, *_rest: Any) -> AssistantMessage:
        seen.append([_texts(m) if not isinstance(m, UserMessage) else str(m.content) for m in context.messages])
        if len(seen) == 1:
            return faux_message("x", stop_reason="error", error_message="boom", error_info=ErrorInfo.of("server"))
        return faux_message("fine")

    provider.set_responses([reply, reply])
    agent = Agent(provider.model(), stream_fn=provider)

    def steer_during_the_reply(event: AgentEvent) -> None:
        if event.type == "message_start" and getattr(event.message, "role", "") == "assistant":
            agent.steer("STEER from run 1")

    await agent.run("first", steer_during_the_reply)
    steering, follow_ups = agent.queued
    assert ([getattr(message, "content", None) for message in steering], follow_ups) == (["STEER from run 1"], [])
    await agent.run("second")
    assert len(seen) == 2, "no extra request for the leftover steering"
    assert seen[1][-2:] == ["second", "STEER from run 1"], "the run's prompt, then the steering poll (the core's)"
    assert agent.queued == ([], [])


async def test_an_abort_does_not_wait_for_a_tool_that_ignores_cancellation() -> None:
    provider = faux()
    release = asyncio.Event()

    async def deaf(_id: str, _args: dict[str, Any], _signal: AbortSignal, _on_update: OnUpdate) -> str:
        while not release.is_set():
            try:
                await release.wait()
            except asyncio.CancelledError:
                continue  # a tool that swallows cancellation
        return "finally"

    provider.set_responses([faux_message([faux_tool_call("deaf", {})], stop_reason="toolUse")])
    agent = Agent(provider.model(), tools=[_tool("deaf", deaf)], stream_fn=provider)

    def abort_once_running(event: AgentEvent) -> None:
        if event.type == "tool_execution_start":
            asyncio.get_running_loop().call_later(0.05, agent.abort)

    try:
        await asyncio.wait_for(agent.run("Go", abort_once_running), timeout=10)
        assert _texts(_results(agent)[0]) == ABORTED_TEXT
    finally:
        release.set()
        await asyncio.sleep(0)


@pytest.mark.parametrize(
    ("schema", "value"),
    [({"const": True}, 1), ({"enum": [0, 1]}, False), ({"const": [True]}, [1]), ({"enum": [{"a": 1}]}, {"a": True})],
)
def test_const_and_enum_do_not_confuse_booleans_with_numbers(schema: dict[str, Any], value: object) -> None:
    from examples.agent_loop.tools import validate_arguments

    assert validate_arguments(value, schema) != []
    assert validate_arguments(1.0, {"const": 1}) == []
