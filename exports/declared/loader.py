"""Reading and checking a declaration file. Every mistake is a :class:`DeclarationError` that
names the file, the type (or source) and the key, so start-up, ``cdk synth`` and the tests fail
with a message an operator can act on."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_core import PydanticCustomError

import exports
from exports.config import Declarations as DeclarationSettings
from exports.declared.dynamodb_export import DAY_PLACEHOLDER
from exports.declared.model import (
    DeclarationFile,
    DynamoQueryDecl,
    DynamoSource,
    EachDayDecl,
    ParameterDecl,
    ParameterType,
    PartitionBy,
    PostgresSource,
    TypeDecl,
)
from exports.declared.parameters import (
    COLUMNS_PARAMETER,
    coerce_bound,
    filters_model,
    is_required,
    json_value,
    value_checker,
)
from exports.declared.templates import placeholders

# Named psycopg placeholders; a literal % is written %%.
_SQL_PLACEHOLDER = re.compile(r"%\(([^)]*)\)s")
_BOUNDED = (ParameterType.DATE, ParameterType.DATETIME, ParameterType.INTEGER, ParameterType.DECIMAL)
_TEXTUAL = (ParameterType.STRING,)
# The keys that say how a PostgreSQL source connects (one of them).
CONNECTION_KEYS = frozenset({"url_env", "secret_arn", "iam_auth"})
# What a plugin type may declare besides its factory: the rest is the plugin's own business.
PLUGIN_KEYS = frozenset({"description", "source", "plugin", "options"})


def default_path() -> Path:
    """The declaration the repository ships (and the CDK app packages next to ``exports/``)."""
    return Path(exports.__file__).resolve().parent.parent / DeclarationSettings.DEFAULT_FILE


class DeclarationError(ValueError):
    """A declaration file that cannot be used, with where the problem is."""

    def __init__(self, path: Path | str, where: str, message: str) -> None:
        super().__init__(f"{path}: {where}: {message}" if where else f"{path}: {message}")
        self.path = str(path)
        self.where = where


@dataclass(frozen=True)
class Declarations:
    """A checked declaration file."""

    path: Path
    file: DeclarationFile

    @property
    def base_dir(self) -> Path:
        """Relative paths in the file (CA bundles) are relative to its folder."""
        return self.path.parent


def load_declarations(
    path: Path | str, source_overrides: Mapping[str, Mapping[str, Any]] | None = None
) -> Declarations:
    """Parse and check the file at ``path``. ``source_overrides`` (from the CDK app's context)
    replace keys of named sources, e.g. ``{"shop": {"secret_arn": "arn:..."}}``."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DeclarationError(path, "", "no such declaration file (set EXPORTS_CONFIG to yours)") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise DeclarationError(path, "", f"not a readable TOML file: {error}") from None
    for name, override in (source_overrides or {}).items():
        sources = raw.setdefault("sources", {})
        if name not in sources:
            raise DeclarationError(path, f"sources.{name}", "overridden by the deployment but not declared")
        merged = dict(sources[name])
        if CONNECTION_KEYS & set(override):
            # A connection given by the deployment replaces the file's (e.g. url_env for make run).
            for key in CONNECTION_KEYS:
                merged.pop(key, None)
        sources[name] = {**merged, **override}
    try:
        parsed = DeclarationFile.model_validate(raw)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        raise DeclarationError(path, _where(first["loc"]), first["msg"]) from None
    for source_name, source in parsed.sources.items():
        if isinstance(source, PostgresSource):
            given = [key for key in sorted(CONNECTION_KEYS) if getattr(source, key) is not None]
            if len(given) > 1:
                raise DeclarationError(path, f"sources.{source_name}", f"declare one way to connect, not {given}")
    for type_name, declared in parsed.types.items():
        _check_type(path, parsed, type_name, declared)
    return Declarations(path, parsed)


def _where(location: tuple[Any, ...]) -> str:
    parts = [str(part) for part in location if not str(part).startswith(("function-", "tagged-union"))]
    if len(parts) >= 2 and parts[0] in ("types", "sources"):
        return f"{parts[0]}.{parts[1]}: {'.'.join(parts[2:])}" if len(parts) > 2 else f"{parts[0]}.{parts[1]}"
    return ".".join(parts)


def _check_type(path: Path, file: DeclarationFile, name: str, declared: TypeDecl) -> None:
    def fail(key: str, message: str) -> DeclarationError:
        return DeclarationError(path, f"types.{name}: {key}" if key else f"types.{name}", message)

    _check_source(fail, file, declared)
    if declared.plugin is not None:
        extra = sorted(key for key in declared.model_fields_set if key not in PLUGIN_KEYS)
        if extra:
            raise fail(extra[0], "a plugin type declares only description, source, plugin and options")
        return
    for parameter, spec in declared.parameters.items():
        _check_parameter(fail, f"parameters.{parameter}", spec)
    if declared.selectable_columns and COLUMNS_PARAMETER in declared.parameters:
        raise fail(f"parameters.{COLUMNS_PARAMETER}", "is reserved for selectable_columns")
    _check_ranges(fail, declared)
    _check_columns(fail, declared)
    if declared.order_key is not None and declared.query is None:
        # The order key of a SQL type may also be a result column left out of the file: it is
        # read from the result row, which holds every column the query returns.
        raise fail("order_key", "only SQL types declare an order key (DynamoDB resumes by its own key)")
    names = set(declared.parameters)
    for position, parameter in enumerate(declared.hot_key):
        if parameter not in names:
            raise fail(f"hot_key[{position}]", f"{parameter!r} is not a declared parameter")
    for parameter in placeholders(declared.file_name or ""):
        if parameter not in names:
            raise fail("file_name", f"{{{parameter}}} is not a declared parameter")
    if declared.query is not None:
        _check_query(fail, declared)
    else:
        _check_dynamodb(fail, declared)
    _check_partitions(fail, declared)
    try:
        filters_model(name, declared.parameters, declared.date_ranges, _selectable(declared))
    except (ValueError, TypeError) as error:
        raise fail("parameters", str(error)) from None


def _check_source(fail: Any, file: DeclarationFile, declared: TypeDecl) -> None:
    source = file.sources.get(declared.source)
    if source is None:
        raise fail("source", f"no source {declared.source!r} is declared (known: {', '.join(file.sources) or 'none'})")
    kinds = [key for key in ("query", "dynamodb", "plugin") if getattr(declared, key) is not None]
    if len(kinds) != 1:
        raise fail("", "declare exactly one of query (PostgreSQL), dynamodb or plugin")
    if declared.query is not None and not isinstance(source, PostgresSource):
        raise fail("query", f"source {declared.source!r} is not a PostgreSQL source")
    if declared.dynamodb is not None and not isinstance(source, DynamoSource):
        raise fail("dynamodb", f"source {declared.source!r} is not a DynamoDB source")


def _check_parameter(fail: Any, key: str, spec: ParameterDecl) -> None:
    if spec.type is ParameterType.LIST:
        if spec.items is None:
            raise fail(f"{key}.items", "a list parameter declares what its items are")
        _check_item(fail, f"{key}.items", spec.items)
    else:
        if spec.items is not None or spec.min_items is not None or spec.max_items is not None:
            raise fail(key, "items, min_items and max_items are for list parameters")
        _check_item(fail, key, spec)
    if spec.required and spec.default is not None:
        raise fail(f"{key}.default", "a required parameter has no default")
    if spec.default is not None:
        check = value_checker(spec)
        default = (
            [json_value(item) for item in spec.default] if isinstance(spec.default, list) else json_value(spec.default)
        )
        try:
            check(default)
        except PydanticCustomError as error:
            raise fail(f"{key}.default", str(error)) from None


def _check_item(fail: Any, key: str, spec: Any) -> None:
    if spec.type is ParameterType.ENUM:
        if not spec.values:
            raise fail(f"{key}.values", "an enum parameter lists its allowed values")
    elif spec.values is not None:
        raise fail(f"{key}.values", "values are for enum parameters")
    for bound in ("min", "max"):
        value = getattr(spec, bound)
        if value is None:
            continue
        if spec.type not in _BOUNDED:
            raise fail(f"{key}.{bound}", f"{spec.type.value} parameters have no {bound}")
        try:
            coerce_bound(spec, value)
        except ValueError as error:
            raise fail(f"{key}.{bound}", str(error)) from None
    for option in ("min_length", "max_length", "pattern"):
        if getattr(spec, option) is not None and spec.type not in _TEXTUAL:
            raise fail(f"{key}.{option}", "is for string parameters")
    if spec.pattern is not None:
        try:
            re.compile(spec.pattern)
        except re.error as error:
            raise fail(f"{key}.pattern", f"not a regular expression: {error}") from None


def _check_ranges(fail: Any, declared: TypeDecl) -> None:
    for position, date_range in enumerate(declared.date_ranges):
        kinds = []
        for end in (date_range.start, date_range.end):
            spec = declared.parameters.get(end)
            if spec is None or spec.type not in (ParameterType.DATE, ParameterType.DATETIME):
                raise fail(f"date_ranges[{position}]", f"{end!r} is not a declared date or datetime parameter")
            kinds.append(spec.type)
        if kinds[0] is not kinds[1]:
            raise fail(f"date_ranges[{position}]", "both ends must be of one type")


def _check_columns(fail: Any, declared: TypeDecl) -> None:
    columns = declared.columns
    if columns is None:
        if declared.selectable_columns:
            raise fail("selectable_columns", "needs the columns declared")
        return
    seen: set[str] = set()
    for position, column in enumerate(columns):
        if column.name in seen:
            raise fail(f"columns[{position}].name", f"{column.name!r} is declared twice")
        seen.add(column.name)


def _check_query(fail: Any, declared: TypeDecl) -> None:
    query = declared.query or ""
    if not query.strip():
        raise fail("query", "is empty")
    if query.rstrip().endswith(";"):
        raise fail("query", "must be one statement without a trailing ';' (it runs as a subquery)")
    for parameter in _SQL_PLACEHOLDER.findall(query):
        if parameter not in declared.parameters:
            raise fail("query", f"%({parameter})s is not a declared parameter")
    rest = _SQL_PLACEHOLDER.sub("", query).replace("%%", "")
    if "%" in rest:
        raise fail("query", "use named placeholders such as %(date_from)s, and write a literal % as %%")
    order_key = declared.order_key or []
    if len(set(order_key)) != len(order_key):
        raise fail("order_key", "names a column twice")


def _check_partitions(fail: Any, declared: TypeDecl) -> None:
    """A split needs rows counted up front: SQL types only (a DynamoDB query cannot count a
    range without reading it), by an order key or by a date range of required dates."""
    partitions = declared.partitions
    if partitions is None:
        return
    if declared.query is None:
        raise fail("partitions", "only SQL types are split into partitions")
    if partitions.by is PartitionBy.ORDER_KEY:
        if not declared.order_key:
            raise fail("partitions.by", "order_key partitions need the type's order_key")
        if partitions.date_range is not None:
            raise fail("partitions.date_range", "is for date_range partitions")
        return
    date_range = partition_date_range(declared)
    if date_range is None:
        wanted = partitions.date_range or "one"
        raise fail("partitions.date_range", f"names no date range of the type (declare {wanted} in date_ranges)")
    for end in date_range:
        spec = declared.parameters[end]
        if spec.type is not ParameterType.DATE or not is_required_or_defaulted(spec):
            raise fail("partitions.date_range", f"{end!r} must be a date parameter, required or with a default")


def partition_date_range(declared: TypeDecl) -> tuple[str, str] | None:
    """The (from, to) parameters a date_range split cuts: the range whose ``from`` is
    ``partitions.date_range``, or the type's only range."""
    ranges = [(item.start, item.end) for item in declared.date_ranges]
    wanted = declared.partitions.date_range if declared.partitions else None
    if wanted is not None:
        ranges = [item for item in ranges if item[0] == wanted]
    return ranges[0] if len(ranges) == 1 else None


def _check_dynamodb(fail: Any, declared: TypeDecl) -> None:
    spec = declared.dynamodb
    assert spec is not None
    if (spec.table is None) == (spec.table_env is None):
        raise fail("dynamodb", "declare exactly one of table and table_env")
    if declared.columns is None or not declared.columns:
        raise fail("columns", "a DynamoDB type declares its columns (attribute to column)")
    names = set(declared.parameters)
    if spec.each_day is not None:
        _check_each_day(fail, declared, spec.each_day)
        names.add(DAY_PLACEHOLDER)
    templates = _dynamodb_templates(fail, spec)
    for key, template in templates.items():
        for parameter in placeholders(template):
            if parameter not in names:
                raise fail(key, f"{{{parameter}}} is not a declared parameter")
            spec_of = declared.parameters.get(parameter)
            if spec_of is not None and not is_required_or_defaulted(spec_of):
                raise fail(key, f"{{{parameter}}} is optional: a key condition needs a value")
    for position, item_filter in enumerate(spec.filters):
        if item_filter.parameter not in declared.parameters:
            raise fail(
                f"dynamodb.filters[{position}].parameter", f"{item_filter.parameter!r} is not a declared parameter"
            )


def _check_each_day(fail: Any, declared: TypeDecl, each_day: EachDayDecl) -> None:
    """The day range of a one-query-per-day type: required date parameters, bounded."""
    if DAY_PLACEHOLDER in declared.parameters:
        raise fail(f"parameters.{DAY_PLACEHOLDER}", "is reserved for the day each_day reads")
    bounded = any(
        (date_range.start, date_range.end) == (each_day.start, each_day.end) for date_range in declared.date_ranges
    )
    if not bounded:
        raise fail("dynamodb.each_day", "needs a date_ranges entry over the same parameters (it bounds the queries)")
    for end in (each_day.start, each_day.end):
        kind = declared.parameters.get(end)
        if kind is None or kind.type not in (ParameterType.DATE, ParameterType.DATETIME):
            raise fail("dynamodb.each_day", f"{end!r} is not a declared date parameter")
        if not is_required_or_defaulted(kind):
            raise fail("dynamodb.each_day", f"{end!r} must be required or have a default")


def _dynamodb_templates(fail: Any, spec: DynamoQueryDecl) -> dict[str, str]:
    """The key-condition templates of a DynamoDB type, by their key in the file."""
    templates: dict[str, str] = {"dynamodb.partition_key.value": spec.partition_key.value}
    if spec.sort_key is not None:
        sort = spec.sort_key
        forms = [sort.between is not None, sort.begins_with is not None, sort.start is not None or sort.end is not None]
        if sum(forms) != 1:
            raise fail("dynamodb.sort_key", "declare one of between, begins_with, or from/to")
        for key in ("begins_with", "start", "end"):
            if getattr(sort, key) is not None:
                templates[f"dynamodb.sort_key.{key}"] = getattr(sort, key)
        for position, part in enumerate(sort.between or ()):
            templates[f"dynamodb.sort_key.between[{position}]"] = part
    return templates


def is_required_or_defaulted(spec: ParameterDecl) -> bool:
    """Whether a parameter always has a value after validation."""
    return spec.default is not None or is_required(spec)


def _selectable(declared: TypeDecl) -> list[str]:
    if not declared.selectable_columns or declared.columns is None:
        return []
    return [column.name for column in declared.columns]
