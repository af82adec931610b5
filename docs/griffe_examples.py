"""A Griffe extension for the API reference: this project's docstrings write their doctests
under ``Example:`` (singular), which Griffe's Google parser reads as an admonition of prose;
as ``Examples:`` they render as code. Loaded by mkdocs.yml (mkdocstrings ``extensions``)."""

from __future__ import annotations

import re
from typing import Any

import griffe

_EXAMPLE = re.compile(r"^(\s*)Example:\s*$", re.MULTILINE)


class ExampleSections(griffe.Extension):
    """Read every ``Example:`` section as Griffe's ``Examples:`` section."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _EXAMPLE.sub(r"\1Examples:", obj.docstring.value)
