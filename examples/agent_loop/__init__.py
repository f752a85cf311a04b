"""A small agent loop on streamfns: request → tool calls → results → request, over any StreamFn.

``loop.py`` is the loop (:class:`Agent`), ``events.py`` what it emits, ``tools.py`` how one tool call
is checked and run, ``demo_tools.py`` two safe tools, ``round_trips.py`` the multi-turn recordings
bundled in ``cassettes/``, ``render.py`` a terminal listener, and ``cli.py`` the command that runs it
from the shell: ``python -m examples.agent_loop --model provider/id "task"`` (live), ``--replay
CASSETTE`` or ``--demo`` (offline).
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
from examples.agent_loop.loop import (
    LENGTH_TEXT,
    Agent,
    CompletedTurn,
    FinishDecision,
    FinishTurn,
    Listener,
    NextTurn,
    PrepareNextTurn,
    PrepareRequest,
    QueueMode,
    Request,
    finish_turns,
    max_tool_calls,
    max_turns,
)
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
