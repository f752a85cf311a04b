"""Decoders speak to the stream only through the builder's verbs: none reaches into ``builder.message``.

The builder owns the partial message (see :mod:`normalize.builder`): a decoder that edits it directly
can break what the builder promises (a signature rewritten on a block whose end event went out, a
cost multiplied twice). This reads the source of every decoder we ship — the built-in adapters, the
faux provider, the examples written on the public kit — and names each place that does.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.parallel  # clock-blind: no socket, sleep or timeout

ROOT = Path(__file__).resolve().parents[2]
#: The modules that turn vendor events into builder calls.
DECODERS = sorted(
    [
        *ROOT.glob("streamfns/*/decode.py"),
        ROOT / "streamfns" / "faux.py",
        *ROOT.glob("examples/*/adapter.py"),
    ]
)


def _reaches_into_the_message(tree: ast.AST) -> list[int]:
    """Lines where ``<something named like a builder>.message`` is read or written."""
    lines: list[int] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "message":
            owner = node.value
            name = owner.attr if isinstance(owner, ast.Attribute) else owner.id if isinstance(owner, ast.Name) else ""
            if "builder" in name.lower():
                lines.append(node.lineno)
    return lines


def test_the_guard_sees_what_it_looks_for() -> None:
    found = _reaches_into_the_message(ast.parse("x = self._builder.message.usage\nbuilder.message.response_id = 1\n"))
    assert found == [1, 2]
    assert _reaches_into_the_message(ast.parse("builder.response(id=message.id)\n")) == []


def test_no_decoder_touches_builder_message() -> None:
    assert len(DECODERS) >= 7, [path.name for path in DECODERS]  # four adapters, faux, two examples
    offenders = {
        str(path.relative_to(ROOT)): lines
        for path in DECODERS
        if (lines := _reaches_into_the_message(ast.parse(path.read_text(encoding="utf-8"))))
    }
    assert offenders == {}
