"""A tool's ``on_update``: called plainly or awaited, its updates come out in order, before the tool's end,
none lost, nothing left un-awaited; awaited, it is the listeners' barrier; misused, it fails the tool only."""

from __future__ import annotations

import asyncio
import gc
import warnings
from collections.abc import Awaitable
from typing import Any

from examples.agent_loop import Agent, AgentEvent, AgentTool, OnUpdate
from normalize import AbortSignal, AssistantMessage, Message, TextContent, ToolResultMessage
from streamfns.faux import faux_message, faux_tool_call
from tests.agent_loop._agent import Recorder, faux, loop_errors, on_own_loop

_BOUND_S = 30.0  # bounds runs that, broken, would wait for ever; working, they end at once


def _tool(name: str, execute: Any) -> AgentTool:
    return AgentTool(name=name, description=name, parameters={"type": "object"}, execute=execute)


def _texts(message: Message) -> str:
    assert isinstance(message, ToolResultMessage | AssistantMessage)
    return "".join(block.text for block in message.content if isinstance(block, TextContent))


def _agent(*tools: AgentTool, calls: list[str] | None = None) -> Agent:
    provider = faux()
    names = calls if calls is not None else [tool.name for tool in tools]
    call_reply = faux_message([faux_tool_call(name, {}) for name in names], stop_reason="toolUse")
    provider.set_responses([call_reply, faux_message("Done.")])
    return Agent(provider.model(), tools=tools, stream_fn=provider)


def _tool_lines(recorder: Recorder) -> list[str]:
    return [line for line in recorder.lines if line.startswith("tool_")]


async def test_updates_reported_plainly_are_delivered_in_order_before_the_end_and_nothing_is_unawaited() -> None:
    async def work(_id: str, _args: dict[str, Any], _signal: AbortSignal, on_update: OnUpdate) -> str:
        on_update("one")  # not awaited: the core's tools call onUpdate and go on
        on_update([TextContent(text="two")])
        return "done"

    agent = _agent(_tool("work", work))
    recorder = Recorder()
    with warnings.catch_warnings(record=True) as caught, loop_errors() as reported:
        warnings.simplefilter("always")
        async with asyncio.timeout(_BOUND_S):
            await agent.run("Go", recorder)
        gc.collect()  # an un-awaited coroutine would warn when collected
    assert _tool_lines(recorder) == [
        "tool_start work",
        "tool_update work one",
        "tool_update work two",
        "tool_end work ok",
    ]
    assert ([str(w.message) for w in caught], reported) == ([], [])
    assert _texts(agent.messages[-1]) == "Done."


async def test_plain_and_awaited_updates_mix_in_the_order_they_were_reported() -> None:
    async def work(_id: str, _args: dict[str, Any], _signal: AbortSignal, on_update: OnUpdate) -> str:
        on_update("1")
        await on_update("2")
        on_update("3")
        await asyncio.sleep(0)
        on_update("4")
        return "done"

    agent = _agent(_tool("work", work))
    recorder = Recorder()
    await agent.run("Go", recorder)
    assert _tool_lines(recorder) == [
        "tool_start work",
        *(f"tool_update work {n}" for n in "1234"),
        "tool_end work ok",
    ]


async def test_an_awaited_update_returns_once_every_listener_is_done_a_plain_one_does_not_wait() -> None:
    steps: list[str] = []
    release = asyncio.Event()

    async def work(_id: str, _args: dict[str, Any], _signal: AbortSignal, on_update: OnUpdate) -> str:
        await on_update("awaited")
        steps.append("tool resumed after awaited")
        pending = on_update("plain")
        steps.append("tool went on after plain")
        release.set()
        await pending  # the same barrier, taken later
        steps.append("tool saw plain delivered")
        return "done"

    async def slow_listener(event: AgentEvent) -> None:
        if event.type == "tool_execution_update":
            text = _update_text(event)
            if text == "plain":
                await release.wait()
            for _ in range(3):
                await asyncio.sleep(0)
            steps.append(f"listener done with {text}")
        elif event.type == "tool_execution_end":
            steps.append("tool_end")

    agent = _agent(_tool("work", work))
    async with asyncio.timeout(_BOUND_S):
        await agent.run("Go", slow_listener)
    assert steps == [
        "listener done with awaited",
        "tool resumed after awaited",
        "tool went on after plain",
        "listener done with plain",
        "tool saw plain delivered",
        "tool_end",
    ]


def _update_text(event: AgentEvent) -> str:
    assert event.type == "tool_execution_update"
    return "".join(block.text for block in event.partial_result if isinstance(block, TextContent))


async def test_an_update_after_the_tool_answered_is_dropped() -> None:
    kept: list[OnUpdate] = []

    async def work(_id: str, _args: dict[str, Any], _signal: AbortSignal, on_update: OnUpdate) -> str:
        kept.append(on_update)
        on_update("while running")
        return "done"

    agent = _agent(_tool("work", work))
    recorder = Recorder()
    await agent.run("Go", recorder)
    count = len(recorder.events)
    with loop_errors() as reported:
        late: Awaitable[None] = kept[0]("late")  # after the run: it would follow tool_end
        await late  # already done: nothing to wait for
        await asyncio.sleep(0)
    assert (len(recorder.events), reported) == (count, [])
    assert [line for line in recorder.lines if line.startswith("tool_update")] == ["tool_update work while running"]


async def test_each_parallel_tool_has_its_updates_before_its_own_end() -> None:
    gate = asyncio.Event()

    async def slow(_id: str, _args: dict[str, Any], _signal: AbortSignal, on_update: OnUpdate) -> str:
        on_update("slow 1")
        await gate.wait()
        on_update("slow 2")
        return "slow done"

    async def fast(_id: str, _args: dict[str, Any], _signal: AbortSignal, on_update: OnUpdate) -> str:
        on_update("fast 1")
        await on_update("fast 2")
        gate.set()
        return "fast done"

    agent = _agent(_tool("slow", slow), _tool("fast", fast))
    recorder = Recorder()
    async with asyncio.timeout(_BOUND_S):
        await agent.run("Go", recorder)
    lines = _tool_lines(recorder)
    assert lines[:2] == ["tool_start slow", "tool_start fast"]
    for name in ("slow", "fast"):
        mine = [line for line in lines if f" {name}" in line]
        assert mine == [
            f"tool_start {name}",
            f"tool_update {name} {name} 1",
            f"tool_update {name} {name} 2",
            f"tool_end {name} ok",
        ]
    assert lines.index("tool_end fast ok") < lines.index("tool_end slow ok")  # ends come in completion order
    assert [_texts(message) for message in agent.messages[2:4]] == ["slow done", "fast done"]  # the call order


async def test_progress_that_is_not_text_or_blocks_fails_the_tool_not_the_run() -> None:
    async def work(_id: str, _args: dict[str, Any], _signal: AbortSignal, on_update: OnUpdate) -> str:
        on_update(42)  # pyright: ignore[reportArgumentType] - what an untyped tool may do
        return "not reached"

    agent = _agent(_tool("work", work))
    recorder = Recorder()
    await agent.run("Go", recorder)
    result = agent.messages[2]
    assert isinstance(result, ToolResultMessage)
    assert (result.is_error, _texts(result)) == (True, "on_update got int, not text or a list of text/image blocks")
    assert _tool_lines(recorder) == ["tool_start work", "tool_end work error"]
    assert _texts(agent.messages[-1]) == "Done."


def test_an_interrupt_in_a_listener_of_a_plain_update_propagates_from_run_and_never_through_the_loop() -> None:
    async def main() -> tuple[BaseException | None, bool, list[str]]:
        async def work(_id: str, _args: dict[str, Any], _signal: AbortSignal, on_update: OnUpdate) -> str:
            on_update("progress")
            await asyncio.sleep(0)
            return "done"

        def interrupt(event: AgentEvent) -> None:
            if event.type == "tool_execution_update":
                raise KeyboardInterrupt

        agent = _agent(_tool("work", work))
        recorder = Recorder()
        agent.subscribe(recorder)
        agent.subscribe(interrupt)
        caught: BaseException | None = None
        try:
            async with asyncio.timeout(_BOUND_S):
                await agent.run("Go")
        except KeyboardInterrupt as exc:
            caught = exc
        return caught, agent.running, recorder.lines

    ran = on_own_loop(main)
    assert (ran.escaped, ran.reported) == (None, [])
    caught, running, lines = ran.value
    assert isinstance(caught, KeyboardInterrupt)
    assert running is False
    assert lines[-2:] == ["tool_start work", "tool_update work progress"]  # no tool_end, turn_end, agent_end
