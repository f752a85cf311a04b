"""The agent loop's three hooks: what each receives and returns, and the bounds built on ``finish_turn``.

One turn calls them in the core's order::

    prepare_next_turn(NextTurn, signal)      between turns (after turn_end, before the next turn_start; never
                                             before a run's first): may replace transcript, model, thinking level
    prepare_request(Request, signal)         after the pending messages entered: may replace this request
    finish_turn(CompletedTurn, signal)       after the reply's tools: "end", "continue" or None

Each hook may be a plain or an ``async`` function and returns None (no change, default scheduling) or
its replacement or decision. A hook that raises ends the run with an error reply carrying the
exception's message (see :mod:`examples.agent_loop.loop`).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Awaitable, Callable
from typing import Literal, TypeVar, cast

from normalize import AbortSignal, AssistantMessage, Context, Message, Model, ThinkingLevel, ToolResultMessage

__all__ = [
    "CompletedTurn",
    "FinishDecision",
    "FinishTurn",
    "NextTurn",
    "PrepareNextTurn",
    "PrepareRequest",
    "Request",
    "finish_turns",
    "max_tool_calls",
    "max_turns",
    "resolved",
]

_T = TypeVar("_T")

#: What ``finish_turn`` decides: end the run, or make another request (None: default scheduling).
FinishDecision = Literal["end", "continue"]


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


async def resolved(value: _T | Awaitable[_T]) -> _T:
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
            decision: FinishDecision | None = await resolved(hook(turn, signal))
            if decision is not None:
                return decision
        return None

    return finish
