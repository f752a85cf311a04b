"""``python -m streamfns``: the same as the ``streamfns`` command."""

from streamfns.cli import main

raise SystemExit(main())
