"""``python -m examples.agent_loop``: the agent loop from the shell (see :mod:`examples.agent_loop.cli`)."""

from examples.agent_loop.cli import main

raise SystemExit(main())
