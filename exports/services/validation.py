"""Turning pydantic validation errors into :class:`InvalidRequest` that names the field."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ValidationError

from exports.domain.errors import InvalidRequest


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
    """The first problem of ``error`` as an :class:`InvalidRequest`."""
    first = error.errors(include_url=False)[0]
    field = field_path(first["loc"], prefix)
    message = first["msg"].removeprefix("Value error, ")
    return InvalidRequest(f"{field}: {message}" if field else message, field=field)
