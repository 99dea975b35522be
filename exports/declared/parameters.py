"""Declared parameters as a pydantic model: strict validation at submit, and the JSON Schema
that ``GET /v1/export-types`` serves.

Values are never coerced from another JSON type: a date is a ``YYYY-MM-DD`` string (not ``0``,
not a datetime), an integer is a JSON integer (not ``true``, not ``"60"``), a datetime is an ISO
8601 string with its offset. Validated values are Python values (``date``, aware UTC
``datetime``, ``int``, ``Decimal``, ``str``, lists of those); ``model_dump(mode="json")`` gives
back strings that validate to the same values, which is how a task stores its filters.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any, ClassVar, Final

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, ValidationError, WithJsonSchema, create_model
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import InitErrorDetails, PydanticCustomError

from exports.core.caller import BindingKind
from exports.core.config.limits import Limits
from exports.declared.model import DateRangeDecl, ItemDecl, ParameterDecl, ParameterType

# A declared string parameter without max_length accepts at most this many characters.
STRING_MAX_LENGTH: Final = 200
# A declared list parameter without max_items accepts at most this many values.
LIST_MAX_ITEMS: Final = 100

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
# ISO 8601 with an explicit offset (or Z): a time without a zone means nothing to a server.
_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})")
_DECIMAL = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
COLUMNS_PARAMETER = "columns"
# The years every date and date-time parameter takes (Limits.EARLIEST_DATE to LATEST_DATE), as
# the schema states them: a format alone allows year 0001 to 9999.
_YEARS_PATTERN: Final = "^(?:19[0-9]{2}|2[0-9]{3})-"
assert (Limits.EARLIEST_DATE.year, Limits.LATEST_DATE.year) == (1900, 2999), "restate _YEARS_PATTERN"


def _fail(message: str) -> PydanticCustomError:
    return PydanticCustomError("value_error", message)


def _parse_date(value: Any) -> date:
    if not isinstance(value, str) or not _DATE.fullmatch(value):
        raise _fail("must be a date as YYYY-MM-DD")
    try:
        parsed = date.fromisoformat(value)
    except ValueError:
        raise _fail("is not a calendar date") from None
    if not Limits.EARLIEST_DATE <= parsed <= Limits.LATEST_DATE:
        raise _fail(f"must be between {Limits.EARLIEST_DATE} and {Limits.LATEST_DATE}")
    return parsed


def _parse_datetime(value: Any) -> datetime:
    if not isinstance(value, str) or not _DATETIME.fullmatch(value):
        raise _fail("must be an ISO 8601 date and time with its UTC offset, e.g. 2026-01-31T09:30:00Z")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise _fail("is not a valid date and time") from None
    # The local date first (converting year 1 or 9999 to UTC could overflow), then the UTC
    # moment the worker binds: 1900-01-01T00:00+14:00 is 1899-12-31 in UTC.
    if not Limits.EARLIEST_DATE <= parsed.date() <= Limits.LATEST_DATE:
        raise _fail(f"must be between {Limits.EARLIEST_DATE} and {Limits.LATEST_DATE}")
    moment = parsed.astimezone(UTC)
    if not Limits.EARLIEST_DATE <= moment.date() <= Limits.LATEST_DATE:
        raise _fail(f"must be between {Limits.EARLIEST_DATE} and {Limits.LATEST_DATE} in UTC")
    return moment


def _parse_integer(value: Any) -> int:
    # An integer of more digits than Python reads as an int arrives as its Decimal (strict_json).
    huge = isinstance(value, Decimal) and value.is_finite() and value == value.to_integral_value()
    if type(value) is not int and not huge:
        raise _fail("must be an integer")
    if huge or not Limits.INTEGER_MIN <= value <= Limits.INTEGER_MAX:
        raise _fail(f"must be between {Limits.INTEGER_MIN} and {Limits.INTEGER_MAX} (a 64-bit integer)")
    return int(value)


def _parse_decimal(value: Any) -> Decimal:
    if isinstance(value, Decimal):  # a declared bound or default (TOML numbers)
        value = str(value)
    if type(value) is int or type(value) is float:
        value = repr(value)
    if not isinstance(value, str) or not _DECIMAL.fullmatch(value):
        raise _fail('must be a decimal number (a JSON number or a string such as "12.50")')
    try:
        parsed = Decimal(value)
    except InvalidOperation:
        raise _fail("is not a decimal number") from None
    if not parsed.is_finite():
        raise _fail("must be a finite number")
    exponent = int(parsed.as_tuple().exponent)
    integer_digits = max(0, parsed.adjusted() + 1) if parsed else 0
    if integer_digits > Limits.DECIMAL_MAX_INTEGER_DIGITS or -exponent > Limits.DECIMAL_MAX_FRACTION_DIGITS:
        raise _fail(
            f"must have at most {Limits.DECIMAL_MAX_INTEGER_DIGITS} digits before the point"
            f" and {Limits.DECIMAL_MAX_FRACTION_DIGITS} after it"
        )
    return parsed


def check_text(value: str) -> str | None:
    """Why ``value`` cannot be stored and bound as text, or None: a lone UTF-16 surrogate
    (JSON's ``"\\ud800"``) has no UTF-8 form, and PostgreSQL text cannot hold NUL. One rule for
    every string a request carries (submit and the worker's re-validation both apply it)."""
    if "\x00" in value:
        return "must not contain NUL characters"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "must be valid Unicode (it holds a lone surrogate)"
    return None


def _parse_string(value: Any) -> str:
    if not isinstance(value, str):
        raise _fail("must be a string")
    problem = check_text(value)
    if problem:
        raise _fail(problem)
    return value


def _parse_boolean(value: Any) -> bool:
    if type(value) is not bool:
        raise _fail("must be true or false")
    return value


_PARSERS: dict[ParameterType, Callable[[Any], Any]] = {
    ParameterType.DATE: _parse_date,
    ParameterType.DATETIME: _parse_datetime,
    ParameterType.INTEGER: _parse_integer,
    ParameterType.DECIMAL: _parse_decimal,
    ParameterType.STRING: _parse_string,
    ParameterType.ENUM: _parse_string,
    ParameterType.BOOLEAN: _parse_boolean,
}


def coerce_bound(declared: ItemDecl, bound: Any) -> Any:
    """A declared ``min``/``max``/``default`` as the parameter's own kind of value (a TOML date
    or a string for dates, a number or string for decimals); ValueError if it is not one."""
    kind = declared.type
    if kind is ParameterType.DATE and isinstance(bound, date) and not isinstance(bound, datetime):
        return bound
    if kind is ParameterType.DATETIME and isinstance(bound, datetime):
        if bound.tzinfo is None:
            raise ValueError("a datetime needs its UTC offset")
        return bound.astimezone(UTC)
    try:
        return _PARSERS[kind](bound)
    except PydanticCustomError as error:
        raise ValueError(str(error)) from None


def compile_pattern(pattern: str) -> Any:
    """A declared ``pattern`` compiled by RE2, which matches in time linear in the value's
    length: ``(a+)+$`` cannot make a submit backtrack for seconds, as Python's engine would.
    RE2's syntax has no backreferences and no lookarounds, and its ``\\w``, ``\\d`` and ``\\s``
    are ASCII. ValueError names what RE2 refused."""
    import re2

    options = re2.Options()
    options.log_errors = False  # the loader reports it; RE2 would also print it to stderr
    try:
        return re2.compile(pattern, options)
    except re2.error as error:
        reason = error.args[0].decode() if error.args and isinstance(error.args[0], bytes) else str(error)
        raise ValueError(f"not a pattern RE2 accepts: {reason}") from None


def item_checker(declared: ItemDecl) -> Callable[[Any], Any]:
    """Parse one value and check it against the declared enum, bounds, length and pattern."""
    parse = _PARSERS[declared.type]
    low = coerce_bound(declared, declared.min) if declared.min is not None else None
    high = coerce_bound(declared, declared.max) if declared.max is not None else None
    allowed = tuple(declared.values or ())
    pattern = compile_pattern(declared.pattern) if declared.pattern else None
    max_length = declared.max_length or STRING_MAX_LENGTH

    def check(value: Any) -> Any:
        parsed = parse(value)
        if allowed and parsed not in allowed:
            raise _fail(f"must be one of: {', '.join(allowed)}")
        if low is not None and parsed < low:
            raise _fail(f"must be at least {low}")
        if high is not None and parsed > high:
            raise _fail(f"must be at most {high}")
        if isinstance(parsed, str) and not allowed:
            if len(parsed) > max_length:
                raise _fail(f"must be at most {max_length} characters long")
            if declared.min_length is not None and len(parsed) < declared.min_length:
                raise _fail(f"must be at least {declared.min_length} characters long")
            if pattern is not None and not pattern.fullmatch(parsed):
                raise _fail(f"must match {declared.pattern}")
        return parsed

    return check


def list_checker(declared: ParameterDecl) -> Callable[[Any], Any]:
    assert declared.items is not None  # checked by the loader
    check_item = item_checker(declared.items)
    max_items = declared.max_items or LIST_MAX_ITEMS
    min_items = declared.min_items or 1

    def check(value: Any) -> list[Any]:
        if not isinstance(value, list):
            raise _fail("must be a list")
        if not min_items <= len(value) <= max_items:
            raise _fail(f"must hold {min_items} to {max_items} values")
        parsed = []
        for position, item in enumerate(value):
            try:
                parsed.append(check_item(item))
            except PydanticCustomError as error:
                raise _fail(f"value {position + 1}: {error}") from None
        if len(set(parsed)) != len(parsed):
            raise _fail("must not repeat a value")
        return parsed

    return check


def value_checker(declared: ParameterDecl) -> Callable[[Any], Any]:
    """Parse and check one value of the parameter (a list for list parameters)."""
    return list_checker(declared) if declared.type is ParameterType.LIST else item_checker(declared)


def _item_schema(declared: ItemDecl | ParameterDecl) -> dict[str, Any]:
    schema: dict[str, Any]
    # ParameterDecl widens ItemDecl's type (a parameter may be a boolean): compare the wider one.
    kind: ParameterType = declared.type
    if kind is ParameterType.DATE:
        schema = {"type": "string", "format": "date", "pattern": _YEARS_PATTERN}
    elif kind is ParameterType.DATETIME:
        schema = {"type": "string", "format": "date-time", "pattern": _YEARS_PATTERN}
    elif kind is ParameterType.INTEGER:
        bounds = {"minimum": declared.min, "maximum": declared.max}
        schema = {"type": "integer"} | {
            keyword: int(coerce_bound(declared, bound)) for keyword, bound in bounds.items() if bound is not None
        }
    elif kind is ParameterType.DECIMAL:
        schema = {"type": ["number", "string"], "format": "decimal"}
    elif kind is ParameterType.ENUM:
        schema = {"type": "string", "enum": list(declared.values or ())}
    elif kind is ParameterType.BOOLEAN:
        schema = {"type": "boolean"}
    else:
        schema = {"type": "string", "maxLength": declared.max_length or STRING_MAX_LENGTH}
        if declared.min_length is not None:
            schema["minLength"] = declared.min_length
        if declared.pattern:
            # The whole value must match; a JSON Schema pattern matches anywhere unless anchored.
            schema["pattern"] = f"^(?:{declared.pattern})$"
    if declared.type in (ParameterType.DATE, ParameterType.DATETIME, ParameterType.DECIMAL):
        schema.update(_extension_bounds(declared))
    return schema


def _extension_bounds(declared: ItemDecl) -> dict[str, str]:
    """JSON Schema bounds numbers only: dates and decimals get extension keywords that clients
    (such as exportctl) can show."""
    bounds = {"x-minimum": declared.min, "x-maximum": declared.max}
    return {keyword: str(coerce_bound(declared, bound)) for keyword, bound in bounds.items() if bound is not None}


def parameter_schema(declared: ParameterDecl) -> dict[str, Any]:
    """The JSON Schema of one parameter."""
    if declared.type is ParameterType.LIST:
        assert declared.items is not None
        schema: dict[str, Any] = {
            "type": "array",
            "items": _item_schema(declared.items),
            "minItems": declared.min_items or 1,
            "maxItems": declared.max_items or LIST_MAX_ITEMS,
            "uniqueItems": True,
        }
    else:
        schema = _item_schema(declared)
    if declared.description:
        schema["description"] = declared.description
    if declared.default is not None:
        schema["default"] = _json_default(declared)
    if declared.example is not None:
        schema["examples"] = [_json_default(declared, declared.example)]
    return schema


def _json_default(declared: ParameterDecl, value: Any = None) -> Any:
    """The default (or ``value``, another value of the parameter) as it travels in JSON."""
    value = declared.default if value is None else value
    items = value if isinstance(value, list) else [value]
    rendered = [json_value(item) for item in items]
    return rendered if isinstance(value, list) else rendered[0]


def json_value(value: Any) -> Any:
    """A parameter value as it travels in JSON: dates and datetimes in ISO 8601, decimals as
    strings (no float rounding), the rest as it is."""
    if isinstance(value, datetime):
        # Naive values are UTC wall-clock times (timestamps are read so), never local time.
        moment = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        return moment.isoformat().replace("+00:00", "Z")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    return value


def is_required(declared: ParameterDecl) -> bool:
    """Required unless it says otherwise or has a default."""
    if declared.required is not None:
        return declared.required
    return declared.default is None


def _bound_checker(kind: BindingKind) -> Callable[[Any], Any]:
    """A caller-bound value as :func:`exports.core.caller.bind_caller` makes it (and a task
    records it): a string, a list of strings, or the claims object."""

    def check(value: Any) -> Any:
        if kind is BindingKind.STRING and isinstance(value, str):
            return value
        if kind is BindingKind.LIST and isinstance(value, list) and all(isinstance(item, str) for item in value):
            return value
        if kind is BindingKind.CLAIMS and isinstance(value, dict):
            return value
        raise _fail(f"is not a caller-bound {kind.value}")

    return check


class DeclaredFilters(BaseModel):
    """Base of every declared type's filters model; subclasses set ``date_ranges`` and
    ``bound_names`` (the caller-bound fields: set from the token, left out of the schema and of
    the dumped filters, refused in a request's filters)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    date_ranges: ClassVar[Sequence[DateRangeDecl]] = ()
    bound_names: ClassVar[tuple[str, ...]] = ()

    def bound_values(self) -> dict[str, Any]:
        """The caller-bound values, as the task records them."""
        return {name: getattr(self, name) for name in self.bound_names}

    def model_post_init(self, context: Any, /) -> None:
        """Check each declared date range: in order, and no longer than its ``max_days``."""
        for declared in self.date_ranges:
            start, end = getattr(self, declared.start), getattr(self, declared.end)
            if start is None or end is None:
                continue
            days = _days_between(start, end)
            if days < 0:
                raise_at(declared.end, f"must not be before {declared.start}", end)
            if days + 1 > declared.max_days:
                raise_at(declared.end, f"the range from {declared.start} must not exceed {declared.max_days} days", end)


def _days_between(start: date, end: date) -> int:
    if isinstance(start, datetime) and isinstance(end, datetime):
        if end < start:
            return -1
        return (end - start).days
    return (end - start).days


def raise_at(field: str, message: str, value: Any) -> None:
    """Raise pydantic's ValidationError for filter ``field`` (what submit turns into a 422
    naming ``filters.<field>``)."""
    error = InitErrorDetails(type=PydanticCustomError("value_error", message), loc=(field,), input=str(value))
    raise ValidationError.from_exception_data("filters", [error])


def filters_model(
    type_name: str,
    parameters: dict[str, ParameterDecl],
    date_ranges: Sequence[DateRangeDecl],
    selectable: Sequence[str],
    bound: Mapping[str, BindingKind] | None = None,
) -> type[DeclaredFilters]:
    """The pydantic model of a declared type's ``filters``; with ``selectable`` column names, a
    ``columns`` parameter chooses and orders them; ``bound`` names the caller-bound values."""
    fields: dict[str, Any] = {}
    ends = {date_range.end: date_range for date_range in date_ranges}
    for name, kind in (bound or {}).items():
        bound_value = Annotated[Any, PlainValidator(_bound_checker(kind)), SkipJsonSchema()]
        fields[name] = (bound_value, Field(..., exclude=True))
    for name, declared in parameters.items():
        check = value_checker(declared)
        schema = parameter_schema(declared)
        if name in ends:
            schema = range_end_schema(schema, ends[name], declared.type)
        annotation = Annotated[Any, PlainValidator(check), WithJsonSchema(schema)]
        if is_required(declared):
            fields[name] = (annotation, Field(...))
        else:
            default = None if declared.default is None else check(_json_default(declared))
            fields[name] = (annotation, Field(default=default, json_schema_extra=_no_null_default))
    if selectable:
        columns = ParameterDecl(
            type=ParameterType.LIST,
            description="Columns to include, in this order (default: all).",
            items=ItemDecl(type=ParameterType.ENUM, values=list(selectable)),
            max_items=len(selectable),
            required=False,
        )
        chooser = Annotated[Any, PlainValidator(list_checker(columns)), WithJsonSchema(parameter_schema(columns))]
        fields[COLUMNS_PARAMETER] = (chooser, Field(default=None, json_schema_extra=_no_null_default))
    model = create_model(f"{_camel(type_name)}Filters", __base__=DeclaredFilters, **fields)
    model.date_ranges = tuple(date_ranges)
    model.bound_names = tuple(bound or ())
    return model


# The extension keyword of a range's end in a filters schema: its start and longest span, which
# no JSON Schema keyword can state (none compares two values of an instance).
DATE_RANGE_KEYWORD: Final = "x-date-range"


def range_end_schema(schema: dict[str, Any], date_range: DateRangeDecl, kind: ParameterType) -> dict[str, Any]:
    """``schema`` of ``date_range``'s end saying the rule :meth:`DeclaredFilters.model_post_init`
    checks: for clients in :data:`DATE_RANGE_KEYWORD` (``from``, ``max_days``) and for people
    in the description. A validator reads neither: a range out of order or too long is
    schema-valid and a 422 naming this end."""
    start, days = date_range.start, date_range.max_days
    span = (
        f"less than {days} days after `{start}`"
        if kind is ParameterType.DATETIME
        else f"at most {days} days from `{start}`, both included"
    )
    rule = f"Not before `{start}`, and {span} (422 on this filter otherwise)."
    described = f"{schema['description']} {rule}" if schema.get("description") else rule
    return {**schema, "description": described, DATE_RANGE_KEYWORD: {"from": start, "max_days": days}}


def _no_null_default(schema: dict[str, Any]) -> None:
    """Leave out the ``"default": null`` of an optional parameter without a default: ``null`` is
    no value of the parameter (it is refused in ``filters``), so the schema must not offer it."""
    if "default" in schema and schema["default"] is None:
        del schema["default"]


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))
