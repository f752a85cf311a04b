"""Tests of streamfns."""
