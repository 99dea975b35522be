"""What a declared MySQL query may be: one ``SELECT`` (or ``WITH … SELECT``) that reads.

A scanner of MySQL's lexical structure (``'…'`` and ``"…"`` strings with backslash escapes and
doubled quotes, `` `…` `` identifiers, ``#`` and ``-- `` line comments, ``/* */`` block comments)
blanks strings and comments out of the query; what remains, the code, must hold no ``;``, begin
with ``SELECT``, ``WITH`` or ``(``, and hold none of the clauses with which a ``SELECT`` writes or
locks (``INTO OUTFILE``/``DUMPFILE``/``@variable``, ``FOR UPDATE``, ``FOR SHARE``, ``LOCK IN SHARE
MODE``). Executable comments (``/*! … */``, MariaDB's ``/*M! … */``) are code the server runs:
refused outright. This is the declaration's check, at load (start-up and synth); the read-only
transaction the query runs in is what holds if it were passed (exports/sources/mysql/session.py).
"""

from __future__ import annotations

import re

# Clauses that make a SELECT write a file or a variable, or take locks.
_WRITING = re.compile(
    r"\bINTO\s+(?:OUTFILE|DUMPFILE|@)|\bINTO\s+`?@|\bFOR\s+UPDATE\b|\bFOR\s+SHARE\b|\bLOCK\s+IN\s+SHARE\s+MODE\b",
    re.IGNORECASE,
)
_FIRST_WORD = re.compile(r"\s*(\(|[A-Za-z]+)")


def statement_problem(query: str) -> str | None:
    """Why ``query`` is not one reading statement, or None."""
    code, problem = _code(query)
    if problem:
        return problem
    if ";" in code:
        return "holds a ';' outside a string or comment (it must be one statement: it runs as a subquery)"
    first = _FIRST_WORD.match(code)
    if first is None or first.group(1).upper() not in ("(", "SELECT", "WITH"):
        return "must be a SELECT (or WITH … SELECT): the exports only read"
    writing = _WRITING.search(code)
    if writing:
        return f"holds {' '.join(writing.group(0).split()).upper()!r}, which writes or locks: the exports only read"
    return None


def _code(query: str) -> tuple[str, str | None]:
    """The query with its strings, quoted identifiers and comments replaced by spaces, or the
    problem with them (never closed, an executable comment)."""
    out: list[str] = []
    position = 0
    while position < len(query):
        character = query[position]
        if query.startswith("/*", position):
            if query.startswith(("/*!", "/*M!"), position):
                return "", "holds an executable comment (/*! … */), which the server runs as code"
            end = query.find("*/", position + 2)
            if end < 0:
                return "", "a /* comment is never closed"
            position = end + 2
            out.append(" ")
        elif character == "#" or query.startswith("-- ", position) or query.startswith("--\t", position):
            end = query.find("\n", position)
            position = len(query) if end < 0 else end + 1
            out.append(" ")
        elif character in "'\"`":
            end = _quoted_end(query, position)
            if end < 0:
                what = "a quoted identifier" if character == "`" else "a string"
                return "", f"{what} is never closed"
            position = end
            out.append(" x ")
        else:
            out.append(character)
            position += 1
    return "".join(out), None


def _quoted_end(query: str, start: int) -> int:
    """The position after the string or identifier opening at ``start`` (a doubled quote is one
    quote; in strings a backslash escapes the next character), or -1 if it never closes."""
    quote = query[start]
    position = start + 1
    while position < len(query):
        character = query[position]
        if character == "\\" and quote != "`":
            position += 2
        elif character == quote:
            if query.startswith(quote, position + 1):
                position += 2
            else:
                return position + 1
        else:
            position += 1
    return -1
