"""What the loader checks of a DynamoDB type: its table, its columns, its key conditions and
filters over declared parameters and caller values."""

from __future__ import annotations

from exports.core.caller import BindingKind
from exports.declared.model import ParameterType, TypeDecl
from exports.declared.templates import placeholders
from exports.declared.type_facts import caller_bindings, is_required_or_defaulted
from exports.sources.dynamodb.model import DAY_PLACEHOLDER, DynamoQueryDecl, EachDayDecl
from exports.sources.kind import Fail


def check_read(fail: Fail, declared: TypeDecl, spec: DynamoQueryDecl) -> None:
    """One table, declared columns, key conditions that always have a value, filters on
    declared values."""
    if (spec.table is None) == (spec.table_env is None):
        raise fail("dynamodb", "declare exactly one of table and table_env")
    if declared.columns is None or not declared.columns:
        raise fail("columns", "a DynamoDB type declares its columns (attribute to column)")
    for column in declared.columns:
        if column.array_of is not None:
            # A DynamoDB list is kind = "json": nested in JSON Lines and Parquet already.
            raise fail(f"columns.{column.name}.array_of", 'is for PostgreSQL arrays; a DynamoDB list is kind = "json"')
    names = set(declared.parameters)
    if spec.each_day is not None:
        _check_each_day(fail, declared, spec.each_day)
        names.add(DAY_PLACEHOLDER)
    bound = caller_bindings(declared)
    for key, template in key_templates(fail, spec).items():
        for parameter in placeholders(template):
            if bound.get(parameter) is BindingKind.STRING:
                continue  # a caller value always has one
            if parameter not in names:
                raise fail(key, f"{{{parameter}}} is not a declared parameter or string caller value")
            spec_of = declared.parameters.get(parameter)
            if spec_of is not None and not is_required_or_defaulted(spec_of):
                raise fail(key, f"{{{parameter}}} is optional: a key condition needs a value")
    for position, item_filter in enumerate(spec.filters):
        parameter = item_filter.parameter
        if parameter not in declared.parameters and bound.get(parameter) not in (BindingKind.STRING, BindingKind.LIST):
            raise fail(
                f"dynamodb.filters[{position}].parameter",
                f"{parameter!r} is not a declared parameter or string or list caller value",
            )


def _check_each_day(fail: Fail, declared: TypeDecl, each_day: EachDayDecl) -> None:
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


def key_templates(fail: Fail, spec: DynamoQueryDecl) -> dict[str, str]:
    """The key-condition templates of a DynamoDB type, by their key in the file."""
    templates: dict[str, str] = {"dynamodb.partition_key.value": spec.partition_key.value}
    if spec.sort_key is not None:
        sort = spec.sort_key
        forms = [sort.between is not None, sort.begins_with is not None, sort.start is not None or sort.end is not None]
        if sum(forms) != 1:
            raise fail("dynamodb.sort_key", "declare one of between, begins_with, or from/to")
        for key, value in (("begins_with", sort.begins_with), ("start", sort.start), ("end", sort.end)):
            if value is not None:
                templates[f"dynamodb.sort_key.{key}"] = value
        for position, part in enumerate(sort.between or ()):
            templates[f"dynamodb.sort_key.between[{position}]"] = part
    return templates
