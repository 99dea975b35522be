"""That a declared query is one statement.

The check is a scanner of PostgreSQL's lexical structure (string constants, escape
strings, dollar quoting, quoted identifiers, nested block comments, line comments): a ``;``
outside all of them ends a statement, so the query holds more than one. It does not parse SQL:
the database does, and what the scanner passes is still only run inside the read-only
transaction, as a subquery.
"""

from __future__ import annotations

import re

_DOLLAR_TAG = re.compile(r"\$([A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$")
_IDENTIFIER_CHARACTER = re.compile(r"[A-Za-z0-9_$\u0080-\uffff]")


def statement_problem(query: str) -> str | None:
    """Why ``query`` is not exactly one statement, or None: a ``;`` outside string constants,
    quoted identifiers and comments, or a constant or comment that is never closed."""
    position = 0
    while position < len(query):
        if query[position] == ";":
            return "holds a ';' outside a string or comment"
        end, what = _quoted_or_comment_end(query, position)
        if end is None:
            position += 1
        elif end < 0:
            return f"{what} is never closed"
        else:
            position = end
    return None


def _quoted_or_comment_end(query: str, position: int) -> tuple[int | None, str]:
    """Where the comment, constant or quoted identifier that starts at ``position`` ends (-1:
    never), with what it is; None if none starts there."""
    character = query[position]
    if query.startswith("--", position):
        end = query.find("\n", position)
        return (len(query) if end < 0 else end + 1), "a -- comment"
    if query.startswith("/*", position):
        return _block_comment_end(query, position), "a /* comment"
    if character == "'":
        escapes = _escape_string_prefix(query, position)
        return _quoted_end(query, position, "'", backslash=escapes), "a string constant"
    if character == '"':
        return _quoted_end(query, position, '"', backslash=False), "a quoted identifier"
    if character == "$" and (position == 0 or not _IDENTIFIER_CHARACTER.match(query[position - 1])):
        tag = _DOLLAR_TAG.match(query, position)
        if tag is None:
            return None, ""  # $1, a positional parameter
        end = query.find(tag.group(0), tag.end())
        return (end + len(tag.group(0)) if end >= 0 else -1), f"a {tag.group(0)} quoted string"
    return None, ""


def _escape_string_prefix(query: str, quote: int) -> bool:
    """``E'...'`` (or ``e'...'``) takes backslash escapes; ``name'`` is not such a prefix."""
    if quote == 0 or query[quote - 1] not in "eE":
        return False
    return quote == 1 or not _IDENTIFIER_CHARACTER.match(query[quote - 2])


def _quoted_end(query: str, start: int, quote: str, *, backslash: bool) -> int:
    """The position after the constant that opens at ``start`` (a doubled quote is one quote
    character), or -1 if it never closes."""
    position = start + 1
    while position < len(query):
        character = query[position]
        if backslash and character == "\\":
            position += 2
        elif character == quote:
            if query.startswith(quote, position + 1):
                position += 2
            else:
                return position + 1
        else:
            position += 1
    return -1


def _block_comment_end(query: str, start: int) -> int:
    """The position after the block comment at ``start`` (PostgreSQL's nest), or -1."""
    depth, position = 0, start
    while position < len(query):
        if query.startswith("/*", position):
            depth += 1
            position += 2
        elif query.startswith("*/", position):
            depth -= 1
            position += 2
            if depth == 0:
                return position
        else:
            position += 1
    return -1
