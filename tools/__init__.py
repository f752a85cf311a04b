"""Maintainers' tools that work on the repository itself (not installed with the package)."""
