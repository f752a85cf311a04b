"""Tests of anthropic."""
