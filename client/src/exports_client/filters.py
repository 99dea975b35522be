"""An export type's filters, read from the JSON Schema the service serves for it.

``exportctl`` builds the ``filters`` of a submission from ``--filter key=value`` (each value
typed by its property's schema), ``--filters JSON`` and the ``--from``/``--to`` shortcuts, then
checks them here against the same schema, so a mistake is named before any request. The schema
is the service's (``GET /v1/export-types``), so a limit still changes in one place; checks are
never stricter than JSON Schema says, and the service has the last word.

The subset understood is what declared types serve: ``string`` (``format`` ``date`` or
``date-time``, ``enum``, ``pattern``, ``minLength``/``maxLength``), ``integer`` and ``number``
(``minimum``/``maximum``), decimals (``type: ["number", "string"]``, ``format: decimal``),
``boolean``, ``array`` (``items``, ``minItems``/``maxItems``, ``uniqueItems``), ``x-minimum`` and
``x-maximum`` on dates and decimals, ``required`` and ``additionalProperties``; ``$ref`` into
``$defs`` and ``anyOf`` with ``null`` are resolved.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any, Final

_INTEGER: Final = re.compile(r"[+-]?\d+")
_DATE: Final = re.compile(r"\d{4}-\d{2}-\d{2}")
_TRUE: Final = frozenset({"true", "yes", "on", "1"})
_FALSE: Final = frozenset({"false", "no", "off", "0"})
# (from, to) name suffixes that make two date properties a range, in order of preference.
_RANGE_SUFFIXES: Final = (("from", "to"), ("start", "end"), ("after", "before"))
_DATE_FORMATS: Final = frozenset({"date", "date-time"})
#: The relative windows a schedule's window filter may take, resolved at each firing in the
#: schedule's zone (docs/schedules.md); ``last_n_days:N`` takes a whole number N of at least 1.
RELATIVE_WINDOWS: Final = (
    "previous_day",
    "previous_week",
    "previous_month",
    "month_to_date",
    # A feed: the changes since the previous COMPLETED run (types that declare a change column).
    "since_last_run",
    "last_n_days:N",
)
_LAST_N_DAYS: Final = re.compile(r"last_n_days:([1-9]\d*)")


class FilterError(ValueError):
    """A filter the export type's schema refuses; ``name`` is the filter (or option) at fault."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"filter {name}: {message}")
        self.name = name
        self.message = message


def _types(schema: Mapping[str, Any]) -> list[str]:
    kind = schema.get("type")
    if kind is None:
        return []
    return [kind] if isinstance(kind, str) else list(kind)


def _is_decimal(schema: Mapping[str, Any]) -> bool:
    return schema.get("format") == "decimal" or {"number", "string"} <= set(_types(schema))


_PLACEHOLDERS: Final = (
    (lambda schema: schema.get("format") == "date", "YYYY-MM-DD"),
    (lambda schema: schema.get("format") == "date-time", "YYYY-MM-DDTHH:MM:SSZ"),
    (_is_decimal, "12.50"),
    (lambda schema: "integer" in _types(schema), "N"),
    (lambda schema: "number" in _types(schema), "1.5"),
    (lambda schema: "boolean" in _types(schema), "true"),
)


def placeholder(schema: Mapping[str, Any]) -> str:
    """What a value of ``schema`` looks like on the command line (for hints and ``types``)."""
    if schema.get("enum"):
        return str(schema["enum"][0])
    if "array" in _types(schema):
        values = (schema.get("items") or {}).get("enum") or []
        return ",".join(str(value) for value in values[:2]) if len(values) >= 2 else "A,B"
    return next((text for matches, text in _PLACEHOLDERS if matches(schema)), "TEXT")


def type_name(schema: Mapping[str, Any]) -> str:
    """A short name of what ``schema`` accepts: ``date``, ``integer``, ``decimal``, ``list of string``..."""
    kinds = _types(schema)
    if "array" in kinds:
        return f"list of {type_name(schema.get('items') or {})}"
    if schema.get("format") in _DATE_FORMATS:
        return str(schema["format"])
    if _is_decimal(schema):
        return "decimal"
    return " or ".join(kinds) if kinds else "any"


def constraints(schema: Mapping[str, Any]) -> str:
    """The limits of ``schema`` in a few words: its enum, bounds, pattern, length or item count."""
    parts: list[str] = []
    if schema.get("enum"):
        parts.append(", ".join(str(value) for value in schema["enum"]))
    low = schema.get("minimum", schema.get("x-minimum"))
    high = schema.get("maximum", schema.get("x-maximum"))
    if low is not None and high is not None:
        parts.append(f"{low}..{high}")
    elif low is not None:
        parts.append(f"at least {low}")
    elif high is not None:
        parts.append(f"at most {high}")
    if schema.get("pattern") and schema.get("format") not in _DATE_FORMATS:
        parts.append(f"matching {shown_pattern(schema['pattern'])}")
    if "array" in _types(schema):
        low_items, high_items = schema.get("minItems"), schema.get("maxItems")
        if high_items is not None:
            several = low_items is not None and low_items > 1
            parts.append(f"{low_items}-{high_items} values" if several else f"up to {high_items}")
        item_schema = schema.get("items") or {}
        item = constraints(item_schema)
        if item:
            parts.append(f"each {'one of ' if item_schema.get('enum') else ''}{item}")
    return "; ".join(parts)


class FilterSchema:
    """The filters of one export type, as its served JSON Schema declares them."""

    def __init__(self, export_type: str, schema: Mapping[str, Any]) -> None:
        self.export_type = export_type
        self._defs: Mapping[str, Any] = schema.get("$defs") or schema.get("definitions") or {}
        self.properties: dict[str, dict[str, Any]] = {
            name: self._resolve(spec) for name, spec in (schema.get("properties") or {}).items()
        }
        self.required: list[str] = [name for name in schema.get("required", []) if isinstance(name, str)]
        self.closed = schema.get("additionalProperties", True) is False

    def _resolve(self, schema: Any) -> dict[str, Any]:
        """``schema`` with ``$ref`` followed and a nullable ``anyOf`` reduced to its one option."""
        if not isinstance(schema, Mapping):
            return {}
        if "$ref" in schema:
            target = self._defs.get(str(schema["$ref"]).rsplit("/", 1)[-1], {})
            return self._resolve({**target, **{k: v for k, v in schema.items() if k != "$ref"}})
        for combinator in ("anyOf", "oneOf"):
            options = [option for option in schema.get(combinator, []) if _types(option) != ["null"]]
            if len(options) == 1:
                merged = {**{k: v for k, v in schema.items() if k != combinator}, **self._resolve(options[0])}
                return merged
        resolved = dict(schema)
        if "items" in resolved:
            resolved["items"] = self._resolve(resolved["items"])
        return resolved

    @property
    def names(self) -> list[str]:
        """The filters' names, as the schema lists them."""
        return list(self.properties)

    # -- from the command line ---------------------------------------------------------------------

    def parse(self, name: str, text: str) -> Any:
        """The JSON value of ``--filter name=text``, typed by the property's schema.

        Integers become ints, numbers ints or floats, decimals stay strings (no float rounding),
        booleans accept true/false/yes/no/on/off/1/0, arrays are comma-separated values each
        typed by ``items``; dates and other strings stay as they are.
        """
        if name not in self.properties:
            if self.closed:
                raise self._unknown(name)
            try:  # an open schema says nothing about the value: JSON if it is JSON, else text
                return json.loads(text)
            except ValueError:
                return text
        schema = self.properties[name]
        if "array" in _types(schema):
            items = [part.strip() for part in text.split(",")] if text.strip() else []
            item_schema = schema.get("items") or {}
            return [self._parse_one(name, item_schema, item, f"value {i} ") for i, item in enumerate(items, 1)]
        return self._parse_one(name, schema, text, "")

    def _parse_one(self, name: str, schema: Mapping[str, Any], text: str, where: str) -> Any:
        kinds = _types(schema)
        if "integer" in kinds and "string" not in kinds:
            if not _INTEGER.fullmatch(text.strip()):
                raise FilterError(name, f"{where}must be an integer, not {text!r}")
            return int(text)
        if "number" in kinds and not _is_decimal(schema):
            try:
                return int(text) if _INTEGER.fullmatch(text.strip()) else float(text)
            except ValueError:
                raise FilterError(name, f"{where}must be a number, not {text!r}") from None
        if "boolean" in kinds and "string" not in kinds:
            if text.lower() in _TRUE:
                return True
            if text.lower() in _FALSE:
                return False
            raise FilterError(name, f"{where}must be true or false, not {text!r}")
        return text.strip() if _is_decimal(schema) else text

    # -- checks ------------------------------------------------------------------------------------

    def check(self, filters: Mapping[str, Any]) -> None:
        """Raise :class:`FilterError` for the first filter the schema refuses: an unknown name, a
        missing required one, or a value of the wrong type, outside its enum or its bounds."""
        self._check(filters, filters)

    def _check(self, filters: Mapping[str, Any], present: Iterable[str]) -> None:
        """:meth:`check` of ``filters``, counting the names in ``present`` as given."""
        present = set(present)
        for name, value in filters.items():
            if name not in self.properties:
                if self.closed:
                    raise self._unknown(name)
                continue
            self._check_value(name, self.properties[name], value, "")
        missing = [name for name in self.required if name not in present]
        if missing:
            given = " ".join(f"--filter {name}={placeholder(self.properties.get(name, {}))}" for name in missing)
            label = ", ".join(missing)
            raise FilterError(label, f"required by {self.export_type}: give {given}")

    def _unknown(self, name: str) -> FilterError:
        known = ", ".join(self.names) or "none"
        return FilterError(name, f"{self.export_type} has no such filter (its filters: {known})")

    def _check_value(self, name: str, schema: Mapping[str, Any], value: Any, where: str) -> None:
        kinds = _types(schema)
        if kinds and not any(_is_a(value, kind) for kind in kinds):
            raise FilterError(name, f"{where}must be {_a(type_name(schema))}, not {json.dumps(value)}")
        if "enum" in schema and value not in schema["enum"]:
            allowed = ", ".join(str(option) for option in schema["enum"])
            raise FilterError(name, f"{where}must be one of {allowed}, not {json.dumps(value)}")
        if isinstance(value, list):
            self._check_array(name, schema, value, where)
        elif isinstance(value, str):
            self._check_string(name, schema, value, where)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            self._check_bounds(name, schema, value, value, where)

    def _check_array(self, name: str, schema: Mapping[str, Any], value: list[Any], where: str) -> None:
        low, high = schema.get("minItems"), schema.get("maxItems")
        if low is not None and len(value) < low:
            raise FilterError(name, f"{where}needs at least {low} value{'s' if low != 1 else ''}")
        if high is not None and len(value) > high:
            raise FilterError(name, f"{where}takes at most {high} values, not {len(value)}")
        if schema.get("uniqueItems"):
            seen: list[Any] = []
            for item in value:
                if item in seen:
                    raise FilterError(name, f"{where}repeats {json.dumps(item)}")
                seen.append(item)
        item_schema = schema.get("items")
        if isinstance(item_schema, Mapping):
            for position, item in enumerate(value, 1):
                self._check_value(name, item_schema, item, f"value {position} ")

    def _check_string(self, name: str, schema: Mapping[str, Any], value: str, where: str) -> None:
        shown = json.dumps(value, ensure_ascii=False)
        if _is_decimal(schema):
            number = _decimal(value)
            if number is None:
                raise FilterError(name, f'{where}must be a decimal number such as "12.50", not {shown}')
            self._check_bounds(name, schema, number, value, where)
            return
        fmt = schema.get("format")
        if fmt == "date":
            if not _DATE.fullmatch(value) or _date(value) is None:
                raise FilterError(name, f"{where}must be a date as YYYY-MM-DD, not {shown}")
            self._check_bounds(name, schema, date.fromisoformat(value), value, where)
        elif fmt == "date-time":
            moment = _datetime(value)
            if moment is None:
                example = "2026-01-31T09:30:00Z"
                raise FilterError(name, f"{where}must be a date and time with its UTC offset, e.g. {example}")
            self._check_bounds(name, schema, moment, value, where)
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            raise FilterError(name, f"{where}must be at most {schema['maxLength']} characters long")
        if "minLength" in schema and len(value) < schema["minLength"]:
            raise FilterError(name, f"{where}must be at least {schema['minLength']} characters long")
        pattern = schema.get("pattern")
        # A date's pattern states the service's years for schema tools; the service's own
        # message says them in words, a regex would not.
        if pattern and fmt not in _DATE_FORMATS and _matches(pattern, value) is False:
            raise FilterError(name, f"{where}must match {shown_pattern(pattern)}, not {shown}")

    def _check_bounds(self, name: str, schema: Mapping[str, Any], value: Any, shown: Any, where: str) -> None:
        for keyword, extension, below in (("minimum", "x-minimum", True), ("maximum", "x-maximum", False)):
            declared = schema.get(keyword, schema.get(extension))
            bound = _bound_like(value, declared)
            if bound is None:
                continue
            if (below and value < bound) or (not below and value > bound):
                word = "at least" if below else "at most"
                raise FilterError(name, f"{where}must be {word} {declared}, not {shown}")

    # -- a schedule's filters ----------------------------------------------------------------------

    def check_scheduled(self, filters: Mapping[str, Any]) -> None:
        """:meth:`check` for a schedule: the type's window (:meth:`date_range`) may take a relative
        value on its start filter (the end omitted or the same value), which then stands for
        both; a relative value on any other filter is refused, naming it."""
        window = self.date_range()
        for name, value in filters.items():
            if is_relative(value) and (window is None or name not in window):
                where = f"only {window[0]}, the start of the type's window, takes one" if window else "it has none"
                raise FilterError(name, f"a relative window ({value}) is not a value of this filter: {where}")
        if window is None:
            self.check(filters)
            return
        start, end = window
        given = filters.get(start)
        if not is_relative(given):
            if is_relative(filters.get(end)):
                raise FilterError(end, f"give the relative window on {start} ({end} may then be left out)")
            try:
                self.check(filters)
            except FilterError as error:
                if error.name != start or not isinstance(given, str) or _date(given) or _datetime(given):
                    raise
                accepted = ", ".join(RELATIVE_WINDOWS)
                raise FilterError(start, f"must be a date or a relative window ({accepted}), not {given!r}") from None
            return
        if end in filters and filters[end] != given:
            raise FilterError(end, f"{start} is the relative window {given}: leave {end} out or give it the same value")
        # The relative window stands for both ends: the rest is checked as for an export.
        self._check({name: value for name, value in filters.items() if name not in window}, [*filters, *window])

    # -- the date range ----------------------------------------------------------------------------

    def date_range(self) -> tuple[str, str] | None:
        """The (from, to) filters that ``--from`` and ``--to`` set: ``date_from``/``date_to`` when
        the type has them, else its one pair of date properties named ``…from``/``…to`` (or
        ``…start``/``…end``, ``…after``/``…before``); None when it has none or several."""
        if {"date_from", "date_to"} <= set(self.properties):
            return ("date_from", "date_to")
        dated = {name for name, spec in self.properties.items() if spec.get("format") in _DATE_FORMATS}
        pairs = [
            (name, f"{name[: -len(start)]}{end}")
            for start, end in _RANGE_SUFFIXES
            for name in self.properties
            if name in dated and name.endswith(start) and f"{name[: -len(start)]}{end}" in dated
        ]
        return pairs[0] if len(pairs) == 1 else None


def is_relative(value: Any) -> bool:
    """Whether ``value`` is one of the :data:`RELATIVE_WINDOWS`."""
    if not isinstance(value, str):
        return False
    return value in RELATIVE_WINDOWS[:-1] or _LAST_N_DAYS.fullmatch(value) is not None


def _a(noun: str) -> str:
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"


def _is_a(value: Any, kind: str) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    if kind == "null":
        return value is None
    return True


def _decimal(text: str) -> Decimal | None:
    try:
        number = Decimal(text)
    except InvalidOperation:
        return None
    return number if number.is_finite() else None


def _date(text: str) -> date | None:
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


def _datetime(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return moment if "T" in text.upper() and moment.tzinfo is not None else None


def _bound_like(value: Any, bound: Any) -> Any:
    """``bound`` (a number, or an ``x-`` string) as the same kind of value as ``value``; None if
    there is none or it cannot be compared."""
    if bound is None:
        return None
    if isinstance(value, Decimal):
        return _decimal(str(bound))
    if isinstance(value, datetime):
        return _datetime(str(bound))
    if isinstance(value, date):
        return _date(str(bound))
    return bound if isinstance(bound, int | float) and not isinstance(bound, bool) else None


def shown_pattern(pattern: str) -> str:
    """A pattern as people read it: the service's form of a whole-value pattern, ``^(?:X)$``, and
    a plain ``^X$`` without alternatives are shown as ``X`` (a whole value matching it); any
    other as it is."""
    if pattern.startswith("^(?:") and pattern.endswith(")$"):
        return pattern[4:-2]
    inner = pattern[1:-1]
    if pattern.startswith("^") and pattern.endswith("$") and inner and "|" not in inner and not inner.endswith("\\"):
        return inner
    return pattern


def _matches(pattern: str, value: str) -> bool | None:
    """JSON Schema's ``pattern`` (a search, not a full match); None if Python cannot read it."""
    try:
        return re.search(pattern, value) is not None
    except re.error:
        return None


def filter_schemas(types: Iterable[Any]) -> dict[str, FilterSchema]:
    """``{name: FilterSchema}`` of ``ExportTypeView``s."""
    return {export_type.name: FilterSchema(export_type.name, export_type.filters_schema) for export_type in types}
