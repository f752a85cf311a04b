"""The harness version, recorded in every report (check ids are stable across versions)."""

__version__ = "0.1.0"
