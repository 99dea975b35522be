"""What every export type declares."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta
from enum import StrEnum
from types import MappingProxyType
from typing import TYPE_CHECKING, Annotated, Any, Generic, Protocol, TypeVar

from pydantic import BaseModel, Field

from exports.config.limits import Limits
from exports.domain.caller import Caller
from exports.domain.errors import RetryableError
from exports.domain.locales import DEFAULT_LOCALE, pick
from exports.domain.partitions import PartitionSpec
from exports.domain.task import ExportFormat, Task
from exports.domain.zones import UTC_ZONE

if TYPE_CHECKING:
    import pyarrow as pa


class ColumnKind(StrEnum):
    """How a column's values are typed in the file."""

    STRING = "string"
    INTEGER = "integer"
    DECIMAL = "decimal"
    # Binary floating point (PostgreSQL real and double precision): a double in XLSX and Parquet,
    # shown with every digit it has; decimals keep two.
    FLOAT = "float"
    DATE = "date"
    DATETIME = "datetime"
    BOOLEAN = "boolean"
    # JSON text (PostgreSQL json and jsonb, DynamoDB maps and lists): nested in JSON Lines and
    # Parquet, its text in CSV, XLSX and every other format.
    JSON = "json"


@dataclass(frozen=True)
class Column:
    """One output column: its key in a row, its header and its type."""

    name: str
    header: str
    kind: ColumnKind = ColumnKind.STRING
    width: int = 14
    # A decimal column's numeric(precision, scale) when the source declares it (Parquet types
    # the column with it); None: any number of digits.
    precision: int | None = None
    scale: int | None = None
    # An instant column of an export in another zone than UTC: the zone (Parquet types the
    # column with it; the other formats get values already in it, exports.writers.zones).
    timezone: str | None = None
    # A date-time column without zone (PostgreSQL ``timestamp``, MySQL ``DATETIME``): a wall
    # time, no instant. Set on the file's columns by exports.writers.zones for a format that
    # types it apart (Parquet: ``timestamp(us)`` with no zone); the other formats write it as
    # they write any date-time, with no offset.
    wall_time: bool = False
    # An array column (kind STRING, its values PostgreSQL's array text, ``{vip,q3}``): JSON Lines
    # and Parquet write its values as lists of this kind, the other formats the text itself.
    array_of: ColumnKind | None = None
    # The header in other languages, by locale tag (``{"zh-CN": "订单号"}``); ``header`` is the
    # type's default locale's.
    headers: Mapping[str, str] = field(default_factory=dict, hash=False)

    def in_locale(self, locale: str | None) -> Column:
        """The column with its header in ``locale`` (exports.domain.locales.pick), else as it is."""
        header = pick(self.headers, locale) if locale and self.headers else None
        return self if header is None or header == self.header else replace(self, header=header)


# A date in export filters: ranges are read day by day, so the calendar's edges are out of bounds.
FilterDate = Annotated[date, Field(ge=Limits.EARLIEST_DATE, le=Limits.LATEST_DATE)]
Row = Sequence[Any]
# Where a row source stands, as JSON-ready values: reading from it gives the rows after it.
Cursor = dict[str, Any]
# Rows per page read from a source that pages by count (one DynamoDB query page): the export
# looks at the clock (progress, time budget, disk) once per page. Types take their own as a
# constructor parameter, defaulting to this.
SOURCE_PAGE_ROWS = 1000


@dataclass(frozen=True)
class Page:
    """Rows read together, and where the source stands after them."""

    rows: Sequence[Row]
    # Resume here for the rows after this page; None: the source cannot resume here.
    cursor: Cursor | None = None
    # The share of the work done after this page (0..1), when the source knows it.
    fraction: float | None = None


class CursorInvalid(RetryableError):
    """A saved cursor no longer fits its source (the rows before it changed, or the type cannot
    resume): the export starts over."""

    code = "CURSOR_INVALID"


@dataclass(frozen=True)
class WindowParameters:
    """The date range a schedule's relative window fills (docs/schedules.md): its ``start`` and
    ``end`` parameters, both ``"date"`` or both ``"datetime"``."""

    start: str
    end: str
    kind: str


@dataclass(frozen=True)
class ChangeWindow:
    """The column that says when a row last changed, and the date-time parameters bound to it
    (``start`` included, ``end`` excluded): what a feed schedule (``since_last_run``) fills with
    the span since its last COMPLETED run. ``lag`` is taken off each run's end for rows committed
    late; ``floor`` is where a feed without ``start_at`` begins; ``max_span`` the range's longest
    span (a run that is further behind catches up over several runs)."""

    column: str
    start: str
    end: str
    lag: timedelta = timedelta()
    floor: datetime | None = None
    max_span: timedelta | None = None


@dataclass(frozen=True)
class ClaimsRead:
    """The claims a type binds or its access rule reads (``claims``; None: every claim, for a
    type that cannot say), and whether the rule reads the token's scopes: all a schedule keeps
    of its owner's token to run as them later."""

    claims: frozenset[str] | None = None
    scopes: bool = True


@dataclass(frozen=True)
class SourceLimit:
    """A data source shared by export types, and how many exports may read it at once."""

    source: str
    max_concurrent: int


class RunControl(Protocol):
    """What a running export may ask about its run: a source that blocks (a long SQL query)
    uses it to bound and to cancel what it waits for."""

    @property
    def task_id(self) -> str:
        """The task being exported (databases see it, e.g. in ``application_name``)."""

    def seconds_left(self) -> float | None:
        """Seconds until the run must stop (the task's deadline or the invocation's end,
        whichever is first); None when nothing bounds it."""

    def stop_requested(self) -> bool:
        """Whether the task was cancelled, taken over or timed out meanwhile (safe to call from
        another thread; it may read the task store, so call it every few seconds, not per row)."""


class Unbounded:
    """A :class:`RunControl` for runs outside a worker (tests, benchmarks): no limits."""

    def __init__(self, task_id: str = "local") -> None:
        self._task_id = task_id

    @property
    def task_id(self) -> str:
        """The name given."""
        return self._task_id

    def seconds_left(self) -> float | None:
        """Nothing bounds the run."""
        return None

    def stop_requested(self) -> bool:
        """Never."""
        return False


def ignore_progress(_fraction: float) -> None:
    """The default progress callback."""


class CsvRows(Protocol):
    """A CSV file's data rows as its bytes, written by the source itself (PostgreSQL's COPY):
    :meth:`chunks` gives whole rows, :attr:`rows` counts those given, :meth:`checkpoint` ends
    the read there and gives the cursor to go on from (None: it cannot), :meth:`close` frees it."""

    @property
    def rows(self) -> int: ...

    def chunks(self) -> Iterator[bytes]: ...

    def checkpoint(self) -> Cursor | None: ...

    def close(self) -> None: ...


# The filter model of an export type: what :meth:`ExportType.parse_filters` returns and every
# other method takes.
FiltersT = TypeVar("FiltersT", bound=BaseModel)


class ExportType(ABC, Generic[FiltersT]):
    """A kind of export, generic over its filter model (``class Orders(ExportType[OrdersFilters])``).
    Subclasses set the attributes below (as class attributes, or per instance like declared
    types) and stream rows: :meth:`pages` with cursors for a resumable export (long CSV exports
    continue in a new invocation from the last page's cursor), or just :meth:`rows`."""

    name: str
    description: str
    filters_model: type[FiltersT]
    formats: tuple[ExportFormat, ...] = tuple(ExportFormat)
    # The locale of the headers and the description: a task that asks for none is in it.
    default_locale: str = DEFAULT_LOCALE
    # The description in other locales (a PDF's title), by locale tag.
    titles: Mapping[str, str] = MappingProxyType({})

    # The text at the foot of every PDF page (a company's name, "Confidential"), by locale tag;
    # none: no footer but the page number.
    pdf_footers: Mapping[str, str] = MappingProxyType({})

    def title(self, locale: str | None) -> str:
        """The type's description in ``locale``, else the default one."""
        return (pick(self.titles, locale) if locale else None) or self.description

    def pdf_footer(self, locale: str | None) -> str:
        """The PDF footer in ``locale``, else in the type's default locale, else none."""
        return pick(self.pdf_footers, locale or self.default_locale) or self.pdf_footers.get(self.default_locale, "")

    # The type's own message for an error code (exports.domain.customer_errors), when ours does
    # not suit its customers.
    error_messages: Mapping[str, str] = MappingProxyType({})

    def parse_filters(self, raw: dict[str, Any], bound: Mapping[str, Any] | None = None) -> FiltersT:
        """Validated filters; pydantic's ValidationError names the offending field. ``bound``:
        the caller-bound values (:meth:`bind_caller`), which a type without bindings has none of."""
        return self.filters_model.model_validate(raw)

    def task_filters(self, task: Task) -> FiltersT:
        """The filters ``task`` runs with: its filters and the caller-bound values recorded at
        submit (a claim that changed since does not change a running export)."""
        return self.parse_filters(task.filters, task.caller)

    def allows(self, caller: Caller) -> bool:
        """Whether ``caller`` may see and use this type (default: everyone)."""
        return True

    def bind_caller(self, caller: Caller) -> dict[str, Any]:
        """The values this type binds from the caller's token, JSON-ready (default: none);
        :class:`exports.domain.caller.CallerRefused` when the token lacks a claim it needs."""
        return {}

    def claims_read(self) -> ClaimsRead:
        """The claims :meth:`allows` and :meth:`bind_caller` read (default: every claim and the
        scopes, since a Python type's own rule may read any)."""
        return ClaimsRead()

    def window(self) -> WindowParameters | None:
        """The date range a schedule's relative window fills; None (the default): none."""
        return None

    def changes(self) -> ChangeWindow | None:
        """The change column a feed (``since_last_run``) reads; None (the default): the type
        cannot be a feed."""
        return None

    @abstractmethod
    def columns(self, filters: FiltersT) -> list[Column]:
        """The columns of the file, in order."""

    def rows(self, filters: FiltersT, on_fraction: Callable[[float], None] = ignore_progress) -> Iterator[Row]:
        """The rows, streamed: values in the order of :meth:`columns`. Calls ``on_fraction``
        with the share of the work done (0..1) whenever it knows it. Default: :meth:`pages`
        from the start."""
        if type(self).pages is ExportType.pages:
            raise NotImplementedError(f"{type(self).__name__} must define rows() or pages()")
        for page in self.pages(filters):
            yield from page.rows
            if page.fraction is not None:
                on_fraction(page.fraction)

    def pages(self, filters: FiltersT, cursor: Cursor | None = None) -> Iterator[Page]:
        """The rows in pages from ``cursor`` (None: from the start), each page with the cursor
        after it. Override it to make the export resumable; this default pages :meth:`rows`
        without cursors."""
        if type(self).rows is ExportType.rows:
            raise NotImplementedError(f"{type(self).__name__} must define rows() or pages()")
        if cursor is not None:
            raise CursorInvalid(f"export type {self.name} cannot resume from a cursor")
        done: list[float | None] = [None]
        batch: list[Row] = []
        for row in self.rows(filters, on_fraction=lambda fraction: done.__setitem__(0, fraction)):
            batch.append(row)
            if len(batch) == SOURCE_PAGE_ROWS:
                yield Page(batch, fraction=done[0])
                batch = []
        if batch:
            yield Page(batch, fraction=done[0])

    def stream(self, filters: FiltersT, cursor: Cursor | None, control: RunControl) -> Iterator[Page]:
        """What the worker reads: :meth:`pages`, by default. A type whose source can block for
        long overrides it to honour ``control`` (bound the wait by the time left, give up
        when the task is stopped)."""
        return self.pages(filters, cursor)

    def csv_rows(
        self,
        filters: FiltersT,
        cursor: Cursor | None,
        control: RunControl,
        formula_guard: bool,
        timezone: str = UTC_ZONE,
    ) -> CsvRows | None:
        """The CSV data rows (no header) as bytes from the source, exactly as the CSV writer
        would write :meth:`stream`'s pages with the instant columns in ``timezone``
        (exports.writers.zones); None (the default): the worker writes the pages."""
        return None

    def arrow_batches(
        self, filters: FiltersT, columns: Sequence[Column], control: RunControl, date_texts: bool = False
    ) -> Iterator[pa.RecordBatch] | None:
        """The rows :meth:`stream` gives as Arrow record batches of ``columns`` (an array per
        column, as exports.writers.parquet_arrow and the XLSX engine's arrow_rows take them;
        ``date_texts``: then the text of each date and date-time column's values no Python
        value holds), read whole by the source; None (the default): the worker writes the pages."""
        return None

    def zoned_columns(self, filters: FiltersT, control: RunControl) -> frozenset[str]:
        """The names of the columns whose date-times are instants, which an export in a time
        zone writes in that zone. Default: every date-time column (a type's date-times are UTC
        instants: a naive one is read as UTC); a type that knows which are wall times (a
        PostgreSQL ``timestamp``) overrides it."""
        return frozenset(column.name for column in self.columns(filters) if column.kind is ColumnKind.DATETIME)

    def filters_schema(self) -> dict[str, Any]:
        """The JSON Schema of ``filters`` that the API serves."""
        return self.filters_model.model_json_schema()

    def source_limit(self) -> SourceLimit | None:
        """The source this type shares with others and its limit of concurrent exports; None:
        no shared limit (the workers' own concurrency still bounds it)."""
        return None

    @property
    def resumable(self) -> bool:
        """Whether its pages carry cursors (it overrides :meth:`pages`)."""
        return type(self).pages is not ExportType.pages

    def expected_rows(self, filters: FiltersT) -> int | None:
        """How many rows the export will have, when the type knows it up front (progress is
        then rows written against it); None otherwise."""
        return None

    def count_rows(self, filters: FiltersT, control: RunControl) -> int | None:
        """How many rows the export will have, counted by its source when the run starts (a
        worker measures progress against it when neither :meth:`expected_rows` nor a fan-out
        plan gave a count); None when the source cannot count them cheaper than reading them
        (the default)."""
        return None

    def plan_partitions(
        self, filters: FiltersT, control: RunControl, rows_per_partition: int, max_partitions: int
    ) -> list[PartitionSpec] | None:
        """The partitions an export of ``filters`` is written in, with their row counts (one
        spec: not worth splitting); None when the type does not split (the default)."""
        return None

    def partition_stream(self, filters: FiltersT, spec: PartitionSpec, control: RunControl) -> Iterator[Page]:
        """The pages of one partition of :meth:`plan_partitions`, in the file's order."""
        raise NotImplementedError(f"export type {self.name} does not split into partitions")

    @abstractmethod
    def file_stem(self, filters: FiltersT) -> str:
        """The download's file name without extension."""

    def hot_key(self, filters: FiltersT) -> str | None:
        """What many users exporting at once would hammer together (e.g. type + date range):
        workers rate-limit per key. None: no hot-key limit for this export."""
        return None


# Any export type, whatever its filter model: what registries hold and services are given (they
# pass a type's own parsed filters back to it, so its parameter is not needed there).
AnyExportType = ExportType[Any]
