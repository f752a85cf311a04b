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
    TurnEnd,
    TurnStart,
)
from examples.agent_loop.loop import LENGTH_TEXT, Agent, Listener
from examples.agent_loop.tools import ABORTED_TEXT, AgentTool, validate_arguments

__all__ = [
    "ABORTED_TEXT",
    "LENGTH_TEXT",
    "Agent",
    "AgentEnd",
    "AgentEvent",
    "AgentStart",
    "AgentTool",
    "Listener",
    "MessageEnd",
    "MessageStart",
    "MessageUpdate",
    "ToolExecutionEnd",
    "ToolExecutionStart",
    "TurnEnd",
    "TurnStart",
    "validate_arguments",
]
