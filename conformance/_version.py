"""The harness version, recorded in every report (check ids are stable across versions).

0.2.0: P2–P4 judge only the recording picked for their own feature (``unsupported``, not examined,
without one; P2 no longer passes on a parallel-calls recording not named for ``tool``), one recording
may serve several features, and the JSON report's ``features`` entries say how each was picked as a
token (``matchedBy``) with a stable ``source``.

A module of its own so that the runner, which writes it into reports, need not import the
``conformance`` package that re-exports the runner.
"""

__all__ = ["__version__"]

__version__ = "0.2.0"
