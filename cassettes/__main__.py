"""`python -m cassettes` runs the command line (see `cassettes.cli`)."""

from cassettes.cli import main

raise SystemExit(main())
