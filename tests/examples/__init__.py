"""Tests of examples."""
