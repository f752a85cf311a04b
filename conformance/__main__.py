"""``python -m conformance``: the command line (see :mod:`conformance.cli`)."""

import sys

from conformance.cli import main

sys.exit(main())
