"""Cell-level rules shared by every writer."""

from __future__ import annotations

import re
from typing import Any

# A spreadsheet treats text starting with these as a formula (CSV/formula injection, OWASP).
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


# XML 1.0 cannot carry these: control characters (the set openpyxl refuses), and lone
# surrogates, U+FFFE and U+FFFF (lxml refuses them: one in a value failed the export).
ILLEGAL_XML_CHARACTERS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_safe(value: Any) -> Any:
    """Text without the characters a spreadsheet cannot hold; other values unchanged."""
    if isinstance(value, str):
        return ILLEGAL_XML_CHARACTERS.sub("", value)
    return value


def neutralise(value: Any) -> Any:
    """Text that a spreadsheet would run as a formula gets a leading apostrophe; other values
    pass through unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_TRIGGERS):
        return "'" + value
    return value
