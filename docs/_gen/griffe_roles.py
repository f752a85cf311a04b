"""A griffe extension for the API reference: Sphinx roles in docstrings become inline code.

The docstrings cross-reference with ``:class:`normalize.MessageBuilder``` (readable in the source
and in ``help()``); Markdown would show the role name literally, so it is rewritten to
``normalize.MessageBuilder`` in code style (``~pkg.Name`` to ``Name``) before the docstring is parsed.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:class|func|meth|data|mod|attr|exc|obj):`(~?)([^`]+)`")


def _plain(match: re.Match[str]) -> str:
    target = match.group(2)
    return f"`{target.rsplit('.', 1)[-1] if match.group(1) else target}`"


class SphinxRolesAsCode(griffe.Extension):
    """Rewrite ``:role:`target``` to ``target`` in code style in every docstring."""

    def on_instance(self, *, obj: griffe.Object, **_kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _ROLE.sub(_plain, obj.docstring.value)
