"""The harness version, recorded in every report (check ids are stable across versions).

A module of its own so that the runner, which writes it into reports, need not import the
``conformance`` package that re-exports the runner.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
