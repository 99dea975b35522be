"""What the loader checks of a PostgreSQL source and of a SQL type's query."""

from __future__ import annotations

import re
from typing import Final

from exports.declared.model import TypeDecl
from exports.declared.type_facts import caller_bindings
from exports.sources.kind import Fail
from exports.sources.postgres.model import CONNECTION_KEYS, PostgresSource
from exports.sources.postgres.sql_text import statement_problem

# Named psycopg placeholders; a literal % is written %%.
SQL_PLACEHOLDER: Final = re.compile(r"%\(([^)]*)\)s")


def check_connection(fail: Fail, source: PostgresSource) -> None:
    """One way to connect, at most (none: the deployment gives it, or the types are left out)."""
    given = [key for key in sorted(CONNECTION_KEYS) if getattr(source, key) is not None]
    if len(given) > 1:
        raise fail("", f"declare one way to connect, not {given}")


def check_query(fail: Fail, declared: TypeDecl, query: str) -> None:
    """One statement, whose placeholders are the type's parameters and caller values, and an
    order key that names no column twice."""
    if not query.strip():
        raise fail("query", "is empty")
    problem = statement_problem(query)
    if problem:
        raise fail("query", f"must be one statement (it runs as a subquery): it {problem}")
    bound = caller_bindings(declared)
    for parameter in SQL_PLACEHOLDER.findall(query):
        if parameter not in declared.parameters and parameter not in bound:
            raise fail("query", f"%({parameter})s is not a declared parameter or caller value")
    rest = SQL_PLACEHOLDER.sub("", query).replace("%%", "")
    if "%" in rest:
        raise fail("query", "use named placeholders such as %(date_from)s, and write a literal % as %%")
    order_key = declared.order_key or []
    if len(set(order_key)) != len(order_key):
        raise fail("order_key", "names a column twice")
