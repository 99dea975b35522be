"""What every export type declares."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar

from pydantic import BaseModel

from exports.domain.task import ExportFormat


class ColumnKind(StrEnum):
    """How a column's values are typed in the file."""

    STRING = "string"
    INTEGER = "integer"
    DECIMAL = "decimal"
    DATE = "date"
    DATETIME = "datetime"


@dataclass(frozen=True)
class Column:
    """One output column: its key in a row, its header and its type."""

    name: str
    header: str
    kind: ColumnKind = ColumnKind.STRING
    width: int = 14


Row = Sequence[Any]


def ignore_progress(_fraction: float) -> None:
    """The default progress callback."""


class ExportType(ABC):
    """A kind of export. Subclasses set the class attributes and stream rows."""

    name: ClassVar[str]
    description: ClassVar[str]
    filters_model: ClassVar[type[BaseModel]]
    formats: ClassVar[tuple[ExportFormat, ...]] = (ExportFormat.CSV, ExportFormat.XLSX)

    def parse_filters(self, raw: dict[str, Any]) -> BaseModel:
        """Validated filters; pydantic's ValidationError names the offending field."""
        return self.filters_model.model_validate(raw)

    @abstractmethod
    def columns(self, filters: Any) -> list[Column]:
        """The columns of the file, in order."""

    @abstractmethod
    def rows(self, filters: Any, on_fraction: Callable[[float], None] = ignore_progress) -> Iterator[Row]:
        """The rows, streamed: values in the order of :meth:`columns`. Calls ``on_fraction``
        with the share of the work done (0..1) whenever it knows it."""

    @abstractmethod
    def file_stem(self, filters: Any) -> str:
        """The download's file name without extension."""

    def estimate_sec(self, filters: Any) -> int:
        """A rough run time for the 202 answer."""
        return 5
