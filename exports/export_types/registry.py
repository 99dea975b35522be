"""The export types this deployment offers, by name."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from exports.domain.errors import InvalidRequest
from exports.export_types.base import ExportType


class ExportTypeRegistry:
    """Export types by name; the API lists them and the worker runs them."""

    def __init__(self, types: Iterable[ExportType]) -> None:
        self._types = {export_type.name: export_type for export_type in types}

    def get(self, name: str) -> ExportType:
        """The type called ``name``; :class:`InvalidRequest` naming ``export_type`` otherwise."""
        try:
            return self._types[name]
        except KeyError:
            known = ", ".join(sorted(self._types))
            raise InvalidRequest(
                f"unknown export type {name!r}; known types: {known}",
                field="export_type",
                code="UNKNOWN_EXPORT_TYPE",
            ) from None

    def __iter__(self) -> Iterator[ExportType]:
        return iter(self._types.values())
