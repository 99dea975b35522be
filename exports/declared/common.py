"""What every declared export type shares: its name, filters, columns, file name and limits."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from exports.declared.parameters import COLUMNS_PARAMETER, DeclaredFilters
from exports.declared.templates import file_stem, render
from exports.domain.task import ExportFormat
from exports.export_types.base import Column, ExportType, SourceLimit


class DeclaredExport(ExportType):
    """An export type built from a declaration (see :mod:`exports.declared.loader`)."""

    def __init__(
        self,
        *,
        name: str,
        description: str,
        filters_model: type[DeclaredFilters],
        parameter_names: Sequence[str],
        formats: Sequence[ExportFormat],
        columns: Sequence[Column] | None,
        file_name: str,
        hot_key: Sequence[str],
        source_limit: SourceLimit,
    ) -> None:
        # Instance attributes stand in for the class attributes a Python export type sets.
        self.name = name  # type: ignore[misc]
        self.description = description  # type: ignore[misc]
        self.filters_model = filters_model  # type: ignore[misc]
        self.formats = tuple(formats)  # type: ignore[misc]
        self.parameter_names = tuple(parameter_names)
        self.declared_columns = tuple(columns) if columns is not None else None
        self._by_name = {column.name: column for column in self.declared_columns or ()}
        self._file_name = file_name
        self._hot_key = tuple(hot_key)
        self._source_limit = source_limit

    def chosen_columns(self, filters: DeclaredFilters) -> list[Column]:
        """The declared columns, or those the caller chose, in the caller's order."""
        chosen = getattr(filters, COLUMNS_PARAMETER, None)
        if chosen is None:
            return list(self.declared_columns or ())
        return [self._by_name[name] for name in chosen]

    def file_stem(self, filters: DeclaredFilters) -> str:
        """The declared ``file_name`` template over the filters."""
        return file_stem(self._file_name, _values(filters))

    def hot_key(self, filters: DeclaredFilters) -> str | None:
        """The type and the values of its ``hot_key`` parameters; None when it declares none."""
        if not self._hot_key:
            return None
        values = _values(filters)
        return ":".join([self.name, *(render("{" + name + "}", values) for name in self._hot_key)])

    def source_limit(self) -> SourceLimit:
        """The declared source and its ``max_concurrent_exports``."""
        return self._source_limit


def _values(filters: DeclaredFilters) -> dict[str, Any]:
    return {name: getattr(filters, name) for name in type(filters).model_fields}
