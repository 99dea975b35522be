"""What any SQL source kind offers the SQL export type: result columns, reads, batches, CSV copies."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

from exports.core.export_type import Column, ColumnKind, RunControl
from exports.core.zones import UTC_ZONE

if TYPE_CHECKING:
    import pyarrow as pa


# The type name of a result column whose values are instants, written in an export's time zone
# (exports.running.writers.zones): PostgreSQL's timestamptz, and the name the MySQL reader gives a
# TIMESTAMP (an instant too). ``timestamp`` and MySQL's DATETIME are wall times and stay.
INSTANT_TYPE: Final = "timestamptz"


@dataclass(frozen=True)
class ResultColumn:
    """A column of the query's result: its name, how a file types it, and the source's type."""

    name: str
    kind: ColumnKind
    type_name: str
    # numeric(precision, scale) when the column's type declares them.
    precision: int | None = None
    scale: int | None = None
    # An array's element kind (the column's values are its text, ``kind`` STRING), else None.
    array_of: ColumnKind | None = None


@dataclass(frozen=True)
class SqlSession:
    """What a read sets in its transaction before the query, so the database's row-level
    security sees the caller: a role (``SET LOCAL ROLE``) and custom settings with their
    values (a string, a list of strings as a ``text[]`` literal, a JSON object as JSON text)."""

    role: str | None = None
    settings: Sequence[tuple[str, Any]] = ()


@dataclass(frozen=True)
class SqlRead:
    """One read of a declared query: the SQL text (``%(name)s`` placeholders), its bound values,
    the unique order key it is read by, the key values to read after (resuming, or a
    partition's start), the last key values to read (a partition's end) and the session set-up."""

    query: str
    params: Mapping[str, Any]
    order_key: Sequence[str] = ()
    after: Sequence[Any] | None = None
    until: Sequence[Any] | None = None
    session: SqlSession | None = None


@dataclass(frozen=True)
class Batch:
    """Rows fetched together, as the result's columns hold them (timestamps in naive UTC)."""

    columns: Sequence[ResultColumn]
    rows: list[tuple[Any, ...]]


class CopiedCsv(Protocol):
    """CSV rows a database writes (``COPY``): :meth:`chunks` gives whole rows, :attr:`rows`
    counts those given, :meth:`stop_after` ends the read there and gives the order key of the
    last row given, :meth:`close` frees the connection."""

    @property
    def rows(self) -> int: ...

    def chunks(self) -> Iterator[bytes]: ...

    def stop_after(self) -> Sequence[Any] | None: ...

    def close(self) -> None: ...


# libpq connection keywords, fresh at each connection (rotated secrets, new IAM tokens).
ConnectionSettings = Callable[[], dict[str, Any]]


class SqlReader(Protocol):
    """Runs declared queries against one SQL source."""

    source: str

    def describe(self, read: SqlRead, control: RunControl) -> list[ResultColumn]:
        """The result's columns, without reading a row."""

    def batches(self, read: SqlRead, control: RunControl) -> Iterator[Batch]:
        """The rows in order of ``read.order_key``, after ``read.after`` and up to
        ``read.until``, in pages."""

    def copy_csv(
        self, read: SqlRead, names: Sequence[str] | None, guard: bool, control: RunControl, timezone: str = UTC_ZONE
    ) -> CopiedCsv | None:
        """The result columns ``names`` (None: all) of the read as CSV rows the database
        writes (``timestamptz`` in ``timezone``, default UTC), or None when it cannot write them
        as the CSV writer does."""

    def count(self, read: SqlRead, control: RunControl) -> int:
        """How many rows the read has."""

    def boundaries(self, read: SqlRead, step: int, ranges: int, control: RunControl) -> list[tuple[Sequence[Any], int]]:
        """In one query, the order key and row number (1-based, in key order) of every
        ``max(step, ceil(rows / ranges))``-th row and of the last row: the ends of at most
        ``ranges`` keyset ranges."""


@runtime_checkable
class SqlArrowReader(SqlReader, Protocol):
    """A :class:`SqlReader` that also reads a whole result as Arrow record batches (Parquet, XLSX)."""

    def record_batches(
        self, read: SqlRead, columns: Sequence[Column], control: RunControl, date_texts: bool = False
    ) -> Iterator[pa.RecordBatch] | None:
        """The read's rows in key order as record batches of ``columns`` (with ``date_texts``,
        then PostgreSQL's text of each date and date-time column's values no Python value
        holds); None when the tuple path must write them (a resumed or split read, a column
        typed otherwise than the result's)."""
