"""``{name}`` templates over parameter values: file names, hot keys, DynamoDB key values.

Only ``{parameter}`` is replaced (no attribute access, no format specs: a template is not
Python's ``str.format``). The loader checks that every name is a declared parameter.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from exports.declared.parameters import json_value

_PLACEHOLDER = re.compile(r"\{([a-z][a-z0-9_]*)\}")
# What may stay in a download's file name; anything else becomes "_".
_UNSAFE_FILE_CHARACTERS = re.compile(r"[^\w.\-]+", re.ASCII)


def placeholders(template: str) -> list[str]:
    """The parameter names ``template`` uses, in order."""
    return _PLACEHOLDER.findall(template)


def render(template: str, values: Mapping[str, Any]) -> str:
    """``template`` with each ``{name}`` replaced by the value's text (empty when absent)."""

    def text(match: re.Match[str]) -> str:
        value = values.get(match.group(1))
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, list):
            return "-".join(str(json_value(item)) for item in value)
        return str(json_value(value))

    return _PLACEHOLDER.sub(text, template)


def file_stem(template: str, values: Mapping[str, Any]) -> str:
    """A download file name without extension: the rendered template in safe characters."""
    stem = _UNSAFE_FILE_CHARACTERS.sub("_", render(template, values)).strip("._")
    return stem[:120] or "export"
