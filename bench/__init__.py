"""Benchmarks, reported as ratios measured in one run (never as timed assertions in tests)."""
