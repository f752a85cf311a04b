"""Tests of the conformance harness, and the deliberately broken and hostile adapters it must judge."""
