"""No request after an abort, wherever it lands before a turn's request (the run ends with ``agent_end``,
the transcript holds no reply that was never asked for, undelivered queued messages wait again); the
queue modes hold across runs; what ``run()`` returns when a hook compacted the transcript."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from examples.agent_loop import Agent, AgentEvent, AgentTool, NextTurn, OnUpdate, QueueMode, Request
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
from tests.agent_loop._agent import Recorder, faux

PROMPT = ["turn_start", "message_start user", "message_end user"]
TEXT_REPLY = ["message_start assistant", "update text_start", "update text_delta", "update text_end"]


async def _echo(_id: str, _args: dict[str, Any], _signal: AbortSignal, _on_update: OnUpdate) -> str:
    return "ok"


ECHO = AgentTool(name="echo", description="echo", parameters={"type": "object"}, execute=_echo)


def _texts(message: Message) -> str:
    if isinstance(message, UserMessage):
        return str(message.content)
    assert isinstance(message, ToolResultMessage | AssistantMessage)
    return "".join(block.text for block in message.content if isinstance(block, TextContent))


def _queued(agent: Agent) -> tuple[list[str], list[str]]:
    steering, follow_ups = agent.queued
    return [_texts(message) for message in steering], [_texts(message) for message in follow_ups]


def _seeing(count: int, seen: list[list[str]]) -> list[FauxResponse]:
    def respond(context: Context, _options: StreamOptions | None, _state: FauxState, _model: Model) -> Any:
        seen.append([_texts(message) for message in context.messages])
        return faux_message(f"reply {len(seen)}")

    return [respond] * count


# -- an abort before the request: nothing sent, nothing invented ------------------------------------------


async def test_an_abort_while_the_prompt_enters_sends_nothing_and_adds_no_reply() -> None:
    provider = faux()
    provider.set_responses([faux_message("never sent")])
    agent = Agent(provider.model(), stream_fn=provider)

    def abort_at_the_prompt(event: AgentEvent) -> None:
        if event.type == "message_end":
            agent.abort()

    recorder = Recorder()
    agent.subscribe(recorder)
    added = await agent.run("Go", abort_at_the_prompt)
    assert recorder.lines == ["agent_start", *PROMPT, "agent_end messages=1"]  # no turn_end: no request was made
    assert (provider.state.call_count, provider.pending) == (0, 1)
    assert [_texts(message) for message in agent.messages] == ["Go"]
    assert added == agent.messages


async def test_an_abort_in_prepare_request_sends_nothing() -> None:
    provider = faux()
    provider.set_responses([faux_message("never sent")])
    agent = Agent(provider.model(), stream_fn=provider)

    def abort(_request: Request, _signal: AbortSignal) -> None:
        agent.abort()

    agent.prepare_request = abort
    recorder = Recorder()
    await agent.run("Go", recorder)
    assert recorder.lines == ["agent_start", *PROMPT, "agent_end messages=1"]
    assert (provider.state.call_count, [message.role for message in agent.messages]) == (0, ["user"])


async def test_an_abort_between_turns_sends_nothing_more() -> None:
    provider = faux()
    provider.set_responses([faux_message([faux_tool_call("echo", {})], stop_reason="toolUse"), faux_message("never")])
    agent = Agent(provider.model(), tools=[ECHO], stream_fn=provider)

    def abort_at_turn_end(event: AgentEvent) -> None:
        if event.type == "turn_end":
            agent.abort()

    recorder = Recorder()
    agent.subscribe(recorder)
    await agent.run("Go", abort_at_turn_end)
    assert recorder.lines[-2:] == ["turn_end toolUse results=1", "agent_end messages=3"]
    assert ([message.role for message in agent.messages], provider.pending) == (["user", "assistant", "toolResult"], 1)


async def test_an_abort_while_an_all_mode_batch_enters_keeps_what_entered_and_requeues_the_rest() -> None:
    provider = faux()
    provider.set_responses([faux_message("never sent")])
    agent = Agent(provider.model(), stream_fn=provider, steering_mode="all")
    agent.steer("accepted")
    agent.steer("pending")
    unsubscribe = agent.subscribe(
        lambda event: agent.abort() if event.type == "message_end" and _texts(event.message) == "accepted" else None
    )
    await agent.run("old")
    assert provider.state.call_count == 0
    assert [_texts(message) for message in agent.messages] == ["old", "accepted"]
    assert _queued(agent) == (["pending"], [])
    unsubscribe()
    seen: list[list[str]] = []
    provider.set_responses(_seeing(1, seen))
    await agent.run("fresh")
    assert seen == [["old", "accepted", "fresh", "pending"]]
    assert _queued(agent) == ([], [])


@pytest.mark.parametrize("kind", ["steer", "follow_up"])
@pytest.mark.parametrize("mode", ["one-at-a-time", "all"])
async def test_queued_messages_survive_an_abort_in_prepare_next_turn_for_the_next_run(
    kind: str, mode: QueueMode
) -> None:
    provider = faux()
    provider.set_responses([faux_message("first"), faux_message("unexpected")])
    agent = Agent(provider.model(), stream_fn=provider, steering_mode=mode, follow_up_mode=mode)
    queue = agent.steer if kind == "steer" else agent.follow_up
    originals = [UserMessage(content="queued-1"), UserMessage(content="queued-2")]

    def queue_at_first_turn_end(event: AgentEvent) -> None:
        if event.type == "turn_end" and not agent.queued[0] and not agent.queued[1]:
            for message in originals:
                queue(message)

    def abort_the_second_turn(_turn: NextTurn, _signal: AbortSignal) -> None:
        agent.abort()  # the hook's first call is between the first and the second turn

    agent.prepare_next_turn = abort_the_second_turn
    subscription = agent.subscribe(queue_at_first_turn_end)
    await agent.run("old")
    subscription()
    assert provider.state.call_count == 1
    assert all(message not in agent.messages for message in originals)
    steering, follow_ups = agent.queued
    assert (steering if kind == "steer" else follow_ups) == originals, "the same objects, in their order"

    agent.prepare_next_turn = None
    seen: list[list[str]] = []
    provider.set_responses(_seeing(4, seen))
    await agent.run("fresh")
    users = [message for message in agent.messages if isinstance(message, UserMessage)]
    assert users[2:] == originals
    assert all(sum(user is original for user in users) == 1 for original in originals)
    assert _queued(agent) == ([], [])


async def test_an_abort_at_a_completed_reply_leaves_steering_queued() -> None:
    provider = faux()
    provider.set_responses([faux_message("completed")])
    agent = Agent(provider.model(), stream_fn=provider)

    def steer_and_abort(event: AgentEvent) -> None:
        if event.type == "message_end" and event.message.role == "assistant":
            agent.steer("pending")
            agent.abort()

    await agent.run("old", steer_and_abort)
    assert (provider.state.call_count, [_texts(m) for m in agent.messages]) == (1, ["old", "completed"])
    assert _queued(agent) == (["pending"], [])


# -- the queue modes hold across runs ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "requests"),
    [
        (
            "one-at-a-time",
            [["second", "steer 1"], ["second", "steer 1", "reply 1", "steer 2"]],
        ),
        ("all", [["second", "steer 1", "steer 2"]]),
    ],
)
async def test_steering_left_over_by_an_earlier_run_is_taken_as_its_mode_says(
    mode: QueueMode, requests: list[list[str]]
) -> None:
    provider = faux()
    provider.set_responses([faux_message("cut", stop_reason="error", error_message="server went away")])
    agent = Agent(provider.model(), stream_fn=provider, steering_mode=mode)

    def steer_during_the_reply(event: AgentEvent) -> None:
        if event.type == "message_start" and event.message.role == "assistant":
            agent.steer("steer 1")
            agent.steer("steer 2")

    await agent.run("first", steer_during_the_reply)
    assert _queued(agent) == (["steer 1", "steer 2"], [])
    seen: list[list[str]] = []
    provider.set_responses(_seeing(len(requests), seen))
    agent.messages.clear()  # only this run's requests matter here
    await agent.run("second")
    assert seen == requests
    assert (_queued(agent), provider.pending) == (([], []), 0)


async def test_a_continuation_takes_one_leftover_steering_message_per_turn() -> None:
    provider = faux()
    seen: list[list[str]] = []
    provider.set_responses(_seeing(2, seen))
    agent = Agent(provider.model(), stream_fn=provider, messages=[UserMessage(content="Hi"), faux_message("Hello.")])
    agent.steer("one")
    agent.steer("two")
    await agent.run([])
    assert seen == [["Hi", "Hello.", "one"], ["Hi", "Hello.", "one", "reply 1", "two"]]


# -- what run() returns --------------------------------------------------------------------------------------


async def test_run_returns_the_new_messages_as_they_stand_after_a_compaction() -> None:
    provider = faux()
    provider.set_responses([faux_message([faux_tool_call("echo", {})], stop_reason="toolUse"), faux_message("Done.")])
    agent = Agent(provider.model(), tools=[ECHO], stream_fn=provider, messages=[UserMessage(content="earlier")])
    summary = UserMessage(content="summary of the earlier conversation")

    def compact(turn: NextTurn, _signal: AbortSignal) -> NextTurn | None:
        if len(turn.context.messages) < 4:
            return None
        kept = [summary, turn.context.messages[-1]]  # drops "earlier", the prompt and the call
        return dataclasses.replace(turn, context=dataclasses.replace(turn.context, messages=kept))

    agent.prepare_next_turn = compact
    ends: list[list[Message]] = []
    added = await agent.run("Go", lambda event: ends.append(event.messages) if event.type == "agent_end" else None)
    assert [_texts(message) for message in agent.messages] == [summary.content, "ok", "Done."]
    assert [_texts(message) for message in added] == ["ok", "Done."], "the summary is the hook's, not the run's"
    assert all(kept is message for kept, message in zip(added, agent.messages[1:], strict=True))
    assert ends == [added]


async def test_run_returns_exactly_what_it_appended_without_a_compaction() -> None:
    provider = faux()
    provider.set_responses([faux_message([faux_tool_call("echo", {})], stop_reason="toolUse"), faux_message("Done.")])
    agent = Agent(provider.model(), tools=[ECHO], stream_fn=provider, messages=[UserMessage(content="earlier")])
    added = await agent.run("Go")
    assert added == agent.messages[1:]
    assert [message.role for message in added] == ["user", "assistant", "toolResult", "assistant"]
