"""Checks on the text an operator declares that no value check can make: that a query is one
statement, and that a string parameter's pattern cannot backtrack without end.

The query check is a scanner of PostgreSQL's lexical structure (string constants, escape
strings, dollar quoting, quoted identifiers, nested block comments, line comments): a ``;``
outside all of them ends a statement, so the query holds more than one. It does not parse SQL;
the database does, with the extended protocol, which runs one statement whatever the scanner saw.
"""

from __future__ import annotations

import re

# The standard library's own regular expression parser (what re.compile runs); its tree is
# the same in Python 3.11 and 3.12, the versions the service and its functions run on.
from re import _constants as sre_constants  # type: ignore[attr-defined]
from re import _parser as sre_parser  # type: ignore[attr-defined]
from typing import Any

_DOLLAR_TAG = re.compile(r"\$([A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$")
_IDENTIFIER_CHARACTER = re.compile(r"[A-Za-z0-9_$\u0080-\uffff]")
# A repeated group may hold choices (an alternation, an optional or variable repeat) only if it
# repeats at most this often: (\d{1,3}\.){3} tries 3**3 splits, (a+)+ tries 2**n.
_MAX_REPEAT_OF_CHOICES = 4


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


def pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` cannot be a parameter's pattern, or None.

    Python's engine backtracks: a repeated group that can match the same text in more than one
    way (``(a+)+$``, ``(a|aa)*``, ``(a?){30}``) takes time exponential in the value's length,
    and a value of 24 characters already takes seconds. Such a group is refused, as are
    backreferences; possessive quantifiers and atomic groups (which never give text back) are
    allowed, so ``(?:foo|bar)++`` is the way to repeat an alternation.
    """
    try:
        tree = sre_parser.parse(pattern)
    except re.error as error:
        return f"not a regular expression: {error}"
    except RecursionError:
        return "not a regular expression: it is nested too deeply"
    return _unsafe(list(tree))


def _unsafe(items: list[tuple[Any, Any]]) -> str | None:
    for op, value in items:
        if op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT):
            _low, high, sub = value
            if high > _MAX_REPEAT_OF_CHOICES and _has_choices(list(sub)):
                return (
                    "repeats a group that can match the same text in several ways (as in (a+)+ or (a|aa)*),"
                    " which can take exponential time: make the inner part fixed, or the repetition"
                    " possessive (++, *+) or atomic ((?>...))"
                )
        if op in (sre_constants.GROUPREF, sre_constants.GROUPREF_EXISTS):
            return "uses a backreference, which can take exponential time"
        for sub in _children(op, value):
            problem = _unsafe(sub)
            if problem:
                return problem
    return None


def _has_choices(items: list[tuple[Any, Any]]) -> bool:
    """Whether the subpattern may match in more than one way: an alternation or a repeat of
    variable length that can give text back (possessive repeats and atomic groups cannot)."""
    for op, value in items:
        if op is sre_constants.BRANCH:
            return True
        if op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT) and value[0] != value[1]:
            return True
        if op in (sre_constants.POSSESSIVE_REPEAT, sre_constants.ATOMIC_GROUP):
            continue
        if any(_has_choices(sub) for sub in _children(op, value)):
            return True
    return False


def _children(op: Any, value: Any) -> list[list[tuple[Any, Any]]]:
    """The subpatterns of one node of the parse tree."""
    if op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, sre_constants.POSSESSIVE_REPEAT):
        return [list(value[2])]
    if op is sre_constants.SUBPATTERN:
        return [list(value[3])]
    if op is sre_constants.BRANCH:
        return [list(branch) for branch in value[1]]
    if op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
        return [list(value[1])]
    if op is sre_constants.ATOMIC_GROUP:
        return [list(value)]
    if op is sre_constants.GROUPREF_EXISTS:
        return [list(part) for part in value[1:] if part is not None]
    return []
