"""Runnable, tested examples of streamfns in use."""
