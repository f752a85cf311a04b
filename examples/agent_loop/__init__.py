"""A small agent loop on streamfns: request → tool calls → results → request, over any StreamFn.

``loop.py`` is the loop (:class:`Agent`), ``hooks.py`` its hooks and bounds, ``events.py`` what it
emits, ``listeners.py`` how events reach the listeners, ``tools.py`` how one tool call is checked and
run, ``progress.py`` a tool's ``on_update``, ``demo_tools.py`` two safe tools, ``round_trips.py`` the
multi-turn recordings bundled in ``cassettes/``, ``render.py`` a terminal listener, and ``cli.py`` the
command that runs it from the shell: ``python -m examples.agent_loop --model provider/id "task"``
(live), ``--replay CASSETTE`` or ``--demo`` (offline).
"""

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
from examples.agent_loop.hooks import (
    CompletedTurn,
    FinishDecision,
    FinishTurn,
    NextTurn,
    PrepareNextTurn,
    PrepareRequest,
    Request,
    finish_turns,
    max_tool_calls,
    max_turns,
)
from examples.agent_loop.listeners import Listener
from examples.agent_loop.loop import LENGTH_TEXT, Agent, QueueMode
from examples.agent_loop.tools import ABORTED_TEXT, AgentTool, OnUpdate, validate_arguments

__all__ = [
    "ABORTED_TEXT",
    "LENGTH_TEXT",
    "Agent",
    "AgentEnd",
    "AgentEvent",
    "AgentStart",
    "AgentTool",
    "CompletedTurn",
    "FinishDecision",
    "FinishTurn",
    "Listener",
    "MessageEnd",
    "MessageStart",
    "MessageUpdate",
    "NextTurn",
    "OnUpdate",
    "PrepareNextTurn",
    "PrepareRequest",
    "QueueMode",
    "Request",
    "ToolExecutionEnd",
    "ToolExecutionStart",
    "ToolExecutionUpdate",
    "TurnEnd",
    "TurnStart",
    "finish_turns",
    "max_tool_calls",
    "max_turns",
    "validate_arguments",
]
