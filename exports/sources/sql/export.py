"""An export type declared as a SQL query over a SQL source (PostgreSQL, MySQL): one class for
every SQL kind, each giving it a reader of its own (``exports.sources.sql.ports.SqlReader``)."""

from __future__ import annotations

import operator
from collections.abc import Iterator, Sequence
from datetime import date
from typing import TYPE_CHECKING, Any, Unpack

from exports.core.errors import ExportFailed, SourceCode
from exports.core.export_type import Column, CsvRows, Cursor, CursorInvalid, Page, RunControl, Unbounded
from exports.core.partitions import PartitionSpec, day_runs, group_runs, keyset_ranges, partition_count
from exports.core.zones import UTC_ZONE
from exports.declared.common import DeclaredExport, DeclaredParts
from exports.declared.parameters import DeclaredFilters, json_value
from exports.sources.sql.ports import (
    INSTANT_TYPE,
    CopiedCsv,
    ResultColumn,
    SqlArrowReader,
    SqlRead,
    SqlReader,
    SqlSession,
)

if TYPE_CHECKING:
    import pyarrow as pa


class DeclaredSqlExport(DeclaredExport):
    """Rows of the declared query: streamed from a server-side cursor, ordered by the unique
    order key when there is one (then a long CSV export resumes after the last row it wrote)."""

    def __init__(
        self,
        *,
        reader: SqlReader,
        query: str,
        order_key: Sequence[str],
        split_by_key: bool = False,
        split_days: tuple[str, str] | None = None,
        role: str | None = None,
        settings: Sequence[tuple[str, str]] = (),
        **common: Unpack[DeclaredParts],
    ) -> None:
        super().__init__(**common)
        self._reader = reader
        # The session set-up: a role, and (setting, caller-bound value's name) pairs.
        self._role = role
        self._settings = tuple(settings)
        self._query = query
        self._order_key = tuple(order_key)
        # How a large export splits (declared partitions): keyset ranges, or the (from, to)
        # parameters of the date range whose days it cuts.
        self._split_by_key = split_by_key
        self._split_days = split_days

    def columns(self, filters: DeclaredFilters) -> list[Column]:
        """The declared columns (or the chosen ones); inferred from the result when undeclared."""
        if self.declared_columns is None:
            described = self._reader.describe(self._read(filters, None), Unbounded())
            return [_inferred(column) for column in described]
        return self.chosen_columns(filters)

    def pages(self, filters: DeclaredFilters, cursor: Cursor | None = None) -> Iterator[Page]:
        """:meth:`stream` with nothing bounding the run."""
        return self.stream(filters, cursor, Unbounded())

    def stream(self, filters: DeclaredFilters, cursor: Cursor | None, control: RunControl) -> Iterator[Page]:
        """Pages of the query's rows; each cursor holds the order key of the page's last row."""
        after = _parse_cursor(cursor, len(self._order_key)) if cursor is not None else None
        if cursor is not None and not self._order_key:
            raise CursorInvalid(f"export type {self.name} has no order key to resume by")
        return self._stream(filters, after, None, control)

    def csv_rows(
        self,
        filters: DeclaredFilters,
        cursor: Cursor | None,
        control: RunControl,
        formula_guard: bool,
        timezone: str = UTC_ZONE,
    ) -> CsvRows | None:
        """The rows :meth:`stream` gives, as CSV from the database's ``COPY`` (``timestamptz``
        columns in ``timezone``); None when COPY cannot write these columns as the CSV writer does."""
        after = _parse_cursor(cursor, len(self._order_key)) if cursor is not None else None
        if cursor is not None and not self._order_key:
            raise CursorInvalid(f"export type {self.name} has no order key to resume by")
        names = None if self.declared_columns is None else [column.name for column in self.chosen_columns(filters)]
        copied = self._reader.copy_csv(self._read(filters, after), names, formula_guard, control, timezone)
        return None if copied is None else _KeysetRows(copied)

    def arrow_batches(
        self, filters: DeclaredFilters, columns: Sequence[Column], control: RunControl, date_texts: bool = False
    ) -> Iterator[pa.RecordBatch] | None:
        """The rows :meth:`stream` gives as Arrow record batches, when the reader reads them so."""
        if not isinstance(self._reader, SqlArrowReader):
            return None
        return self._reader.record_batches(self._read(filters, None), columns, control, date_texts)

    def zoned_columns(self, filters: DeclaredFilters, control: RunControl) -> frozenset[str]:
        """The file's columns the query returns as instants (``timestamptz``, MySQL's
        ``TIMESTAMP``; a ``timestamp`` or ``DATETIME`` is a wall time), found by describing the query."""
        described = self._reader.describe(self._read(filters, None), control)
        instants = {column.name for column in described if column.type_name == INSTANT_TYPE}
        return frozenset(column.name for column in self.columns(filters) if column.name in instants)

    def count_rows(self, filters: DeclaredFilters, control: RunControl) -> int:
        """``count(*)`` of the query: the planner drops the columns it does not need and the
        sort, so the server answers it long before the rows themselves arrive."""
        return self._reader.count(self._read(filters, None), control)

    def plan_partitions(
        self, filters: DeclaredFilters, control: RunControl, rows_per_partition: int, max_partitions: int
    ) -> list[PartitionSpec] | None:
        """Keyset ranges from one numbering query, or runs of days counted one run at a time
        (at most ``max_partitions`` counts), grouped into partitions of about equal rows."""
        if self._split_by_key:
            read = self._read(filters, None)
            return keyset_ranges(self._reader.boundaries(read, rows_per_partition, max_partitions, control))
        if self._split_days is None:
            return None
        start_name, end_name = self._split_days
        runs = day_runs(getattr(filters, start_name), getattr(filters, end_name), max_partitions)
        counts = [
            self._reader.count(self._read(_narrowed(filters, start_name, end_name, run), None), control) for run in runs
        ]
        groups = group_runs(counts, partition_count(sum(counts), rows_per_partition, max_partitions))
        return [
            PartitionSpec(
                sum(counts[index] for index in group),
                filters={start_name: runs[group[0]][0].isoformat(), end_name: runs[group[-1]][1].isoformat()},
            )
            for group in groups
        ]

    def partition_stream(self, filters: DeclaredFilters, spec: PartitionSpec, control: RunControl) -> Iterator[Page]:
        """The rows of one keyset range, or of the export narrowed to a run of days."""
        if spec.filters:
            narrowed = {**filters.model_dump(mode="json"), **spec.filters}
            filters = self.parse_filters(narrowed, filters.bound_values())
        return self._stream(filters, spec.after, spec.until, control)

    def _stream(
        self,
        filters: DeclaredFilters,
        after: Sequence[Any] | None,
        until: Sequence[Any] | None,
        control: RunControl,
    ) -> Iterator[Page]:
        project: Any = None
        key_of: Any = None
        for batch in self._reader.batches(self._read(filters, after, until), control):
            if project is None:
                project, key_of = self._shape(batch.columns, filters)
            rows = [project(row) for row in batch.rows] if project is not _SAME else batch.rows
            page_cursor = {"after": key_cursor(key_of(batch.rows[-1]))} if key_of else None
            yield Page(rows, page_cursor)
        if project is None and self._order_key:
            yield Page([], {"after": list(after)} if after is not None else None)

    @property
    def resumable(self) -> bool:
        """Resumable when it declares an order key."""
        return bool(self._order_key)

    def _read(
        self, filters: DeclaredFilters, after: Sequence[Any] | None, until: Sequence[Any] | None = None
    ) -> SqlRead:
        params = {name: getattr(filters, name) for name in (*self.parameter_names, *filters.bound_names)}
        session = None
        if self._role is not None or self._settings:
            settings = [(setting, getattr(filters, name)) for setting, name in self._settings]
            session = SqlSession(self._role, settings)
        return SqlRead(self._query, params, self._order_key, after, until, session)

    def _shape(self, result: Sequence[ResultColumn], filters: DeclaredFilters) -> tuple[Any, Any]:
        """How to turn a result row into a file row, and how to read its order key."""
        positions = {column.name: position for position, column in enumerate(result)}
        wanted = [column.name for column in self.columns_for(filters, result)]
        missing = [name for name in (*wanted, *self._order_key) if name not in positions]
        if missing:
            raise ExportFailed(
                f"the query of export type {self.name} returns no column {missing[0]!r} (declared in its columns "
                "or order_key)",
                code=SourceCode.QUERY_FAILED,
            )
        indexes = [positions[name] for name in wanted]
        project = _SAME if indexes == list(range(len(result))) else _getter(indexes)
        key_of = _getter([positions[name] for name in self._order_key]) if self._order_key else None
        return project, key_of

    def missing_result_columns(self) -> list[str]:
        """The declared columns and order key columns the query does not return, found by
        describing it (every parameter and caller value NULL, no row read): what local mode
        checks at start-up, before any export can fail on it."""
        names = (*self.parameter_names, *self.filters_model.bound_names)
        described = self._reader.describe(SqlRead(self._query, dict.fromkeys(names)), Unbounded())
        returned = {column.name for column in described}
        wanted = [column.name for column in self.declared_columns or ()]
        return [name for name in dict.fromkeys((*wanted, *self._order_key)) if name not in returned]

    def columns_for(self, filters: DeclaredFilters, result: Sequence[ResultColumn]) -> list[Column]:
        """The file's columns given the result's (inferred ones follow the result)."""
        if self.declared_columns is None:
            return [_inferred(column) for column in result]
        return self.chosen_columns(filters)


class _KeysetRows:
    """COPY's rows with the type's keyset cursor (the order key of the last row given)."""

    def __init__(self, copied: CopiedCsv) -> None:
        self._copied = copied

    @property
    def rows(self) -> int:
        return self._copied.rows

    def chunks(self) -> Iterator[bytes]:
        return self._copied.chunks()

    def checkpoint(self) -> Cursor | None:
        key = self._copied.stop_after()
        return None if key is None else {"after": key_cursor(key)}

    def close(self) -> None:
        self._copied.close()


_SAME = object()


def _narrowed(filters: DeclaredFilters, start_name: str, end_name: str, run: tuple[date, date]) -> DeclaredFilters:
    """The filters with their date range cut to ``run``."""
    return filters.model_copy(update={start_name: run[0], end_name: run[1]})


def _getter(indexes: list[int]) -> Any:
    if len(indexes) == 1:
        single = operator.itemgetter(indexes[0])
        return lambda row: (single(row),)
    return operator.itemgetter(*indexes)


def key_cursor(key: Sequence[Any]) -> list[Any]:
    """An order key's values as the cursor saves them: a float as its shortest text, which the
    server reads as the key column's own type (bound untyped), so a ``real`` key compares equal
    to itself (a float would be bound as ``double precision``, 0.1 widened past ``0.1::real``)."""
    return [repr(value) if value.__class__ is float else json_value(value) for value in key]


def _parse_cursor(cursor: Cursor, size: int) -> list[Any]:
    after = cursor.get("after") if isinstance(cursor, dict) else None
    if not isinstance(after, list) or len(after) != size:
        raise CursorInvalid(f"not a keyset cursor: {cursor!r}")
    if not all(isinstance(value, str | int | float) and not isinstance(value, bool) for value in after):
        raise CursorInvalid(f"not a keyset cursor: {cursor!r}")
    return after


def _inferred(column: ResultColumn) -> Column:
    """A file column typed as the result's column is (its numeric precision and scale too)."""
    return Column(
        column.name,
        column.name,
        column.kind,
        precision=column.precision,
        scale=column.scale,
        array_of=column.array_of,
    )
