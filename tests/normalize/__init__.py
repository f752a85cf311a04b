"""Tests of normalize."""
