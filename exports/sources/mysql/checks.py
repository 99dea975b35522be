"""What the loader checks of a MySQL source and of a MySQL type's query."""

from __future__ import annotations

import re
from typing import Final

from exports.declared.model import TypeDecl
from exports.declared.type_facts import caller_bindings
from exports.sources.kind import Fail
from exports.sources.mysql.model import CONNECTION_KEYS, MySqlSource, SslMode
from exports.sources.mysql.sql_text import statement_problem

# Named placeholders, as PyMySQL binds them; a literal % is written %%.
SQL_PLACEHOLDER: Final = re.compile(r"%\(([^)]*)\)s")


def check_connection(fail: Fail, source: MySqlSource) -> None:
    """One way to connect, at most; IAM tokens only over TLS (they travel in clear text)."""
    given = [key for key in sorted(CONNECTION_KEYS) if getattr(source, key) is not None]
    if len(given) > 1:
        raise fail("", f"declare one way to connect, not {given}")
    if source.iam_auth is not None and source.ssl_mode is SslMode.DISABLED:
        raise fail("ssl_mode", "cannot be DISABLED with iam_auth: the token is sent in clear text, so only over TLS")


def check_query(fail: Fail, declared: TypeDecl, query: str) -> None:
    """One reading statement, whose placeholders are the type's parameters and caller values,
    and an order key that names no column twice."""
    if not query.strip():
        raise fail("mysql_query", "is empty")
    problem = statement_problem(query)
    if problem:
        raise fail("mysql_query", problem)
    bound = caller_bindings(declared)
    for parameter in SQL_PLACEHOLDER.findall(query):
        if parameter not in declared.parameters and parameter not in bound:
            raise fail("mysql_query", f"%({parameter})s is not a declared parameter or caller value")
    rest = SQL_PLACEHOLDER.sub("", query).replace("%%", "")
    if "%" in rest:
        raise fail("mysql_query", "use named placeholders such as %(date_from)s, and write a literal % as %%")
    order_key = declared.order_key or []
    if len(set(order_key)) != len(order_key):
        raise fail("order_key", "names a column twice")
