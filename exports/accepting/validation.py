"""Turning pydantic validation errors into :class:`InvalidRequest` that names the field."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ValidationError

from exports.core.errors import InvalidRequest


def field_path(location: Sequence[str | int], prefix: str | None = None) -> str | None:
    """``("filters", "date_from")`` -> ``"filters.date_from"``; list positions as ``[n]``."""
    path = prefix or ""
    for part in location:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else part
    return path or None


def invalid_request(error: ValidationError, prefix: str | None = None) -> InvalidRequest:
    """``error`` as an :class:`InvalidRequest`: its first problem, and all of them when there are
    several (a caller who left out three filters hears of the three at once)."""
    problems = tuple(
        (field_path(detail["loc"], prefix), detail["msg"].removeprefix("Value error, "))
        for detail in error.errors(include_url=False)
    )
    field, message = problems[0]
    return InvalidRequest(
        f"{field}: {message}" if field else message, field=field, problems=problems if len(problems) > 1 else ()
    )
