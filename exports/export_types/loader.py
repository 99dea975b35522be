"""Reading and checking a declaration file. Every mistake is a :class:`DeclarationError` that
names the file, the type (or source) and the key, so start-up, ``cdk synth`` and the tests fail
with a message an operator can act on."""

from __future__ import annotations

import importlib
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from pydantic_core import PydanticCustomError

from exports.core.caller import BindingKind
from exports.core.config.declarations import default_declaration_path
from exports.declared.model import (
    CallerBindingDecl,
    DeclarationFile,
    ItemDecl,
    ParameterDecl,
    ParameterType,
    PartitionBy,
    TypeDecl,
)
from exports.declared.parameters import (
    COLUMNS_PARAMETER,
    check_text,
    coerce_bound,
    compile_pattern,
    filters_model,
    json_value,
    value_checker,
)
from exports.declared.templates import placeholders
from exports.declared.type_facts import (
    JWT_CLAIMS_BINDING,
    JWT_CLAIMS_SETTING,
    caller_bindings,
    is_required_or_defaulted,
    partition_date_range,
    session_settings,
)
from exports.export_types.schema import declaration_model
from exports.sources.kind import Fail, SourceKind
from exports.sources.registry import kind_named, kinds, source_kind, type_kind

if TYPE_CHECKING:
    from exports.core.logos import PdfImage

_BOUNDED = (ParameterType.DATE, ParameterType.DATETIME, ParameterType.INTEGER, ParameterType.DECIMAL)
_TEXTUAL = (ParameterType.STRING,)
# What a plugin type may declare besides its factory: the rest is the plugin's own business.
PLUGIN_KEYS = frozenset({"description", "source", "plugin", "options"})


def default_path() -> Path:
    """The declaration the repository ships (and the CDK app packages next to ``exports/``)."""
    return default_declaration_path()


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
    # The logos the file names (pdf_logo), read and checked, by the path as written.
    logos: Mapping[str, PdfImage] = field(default_factory=dict)

    @property
    def base_dir(self) -> Path:
        """Relative paths in the file (CA bundles) are relative to its folder."""
        return self.path.parent

    @property
    def warnings(self) -> list[str]:
        """What start-up and synth warn about: declared types that bind nothing of the caller and
        have no access rule export the same rows to every caller (a plugin scopes in its code,
        with ``ExportType.bind_caller`` and ``allows``)."""
        return [
            f"type {name} exports the same rows to every caller (it declares no caller values and no allow rule; "
            "see docs/export-your-own-data.md#tenancy)"
            for name, declared in self.file.types.items()
            if declared.plugin is None and not caller_bindings(declared) and declared.allow is None
        ]

    @property
    def bound_claims(self) -> set[str]:
        """Every claim some type binds (submit keys its idempotency records by their values)."""
        return {
            binding.claim
            for declared in self.file.types.values()
            for binding in declared.caller.values()
            if binding.claim is not None
        }


def load_declarations(
    path: Path | str, source_overrides: Mapping[str, Mapping[str, object]] | None = None
) -> Declarations:
    """Parse and check the file at ``path``. ``source_overrides`` (from the CDK app's context)
    replace keys of named sources, e.g. ``{"shop": {"secret_arn": "arn:..."}}``."""
    path = Path(path)
    raw = _read_toml(path)
    for name, override in (source_overrides or {}).items():
        sources = raw.setdefault("sources", {})
        if name not in sources:
            raise DeclarationError(path, f"sources.{name}", "overridden by the deployment but not declared")
        merged = dict(sources[name])
        kind = kind_named(override.get("kind", merged.get("kind")))
        connection_keys = kind.connection_keys if kind is not None else frozenset()
        if connection_keys & set(override):
            # A connection given by the deployment replaces the file's (e.g. url_env for make run).
            for key in connection_keys:
                merged.pop(key, None)
        sources[name] = {**merged, **override}
    try:
        parsed = declaration_model().model_validate(raw)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        raise DeclarationError(path, _where(_named(first["loc"], raw)), first["msg"]) from None
    except RecursionError:
        raise DeclarationError(path, "", "a value is nested too deeply") from None
    for source_name, source in parsed.sources.items():
        source_kind(source).check_source(_failing(path, f"sources.{source_name}"), source)
    for type_name, declared in parsed.types.items():
        _check_type(path, parsed, type_name, declared)
    return Declarations(path, parsed, _logos(path, parsed))


def logo_keys(file: DeclarationFile) -> list[tuple[str, str]]:
    """Every logo the file names: (where, as an error names it; the path as written)."""
    named = [(f"types.{name}: pdf_logo", declared.pdf_logo) for name, declared in file.types.items()]
    named += [(f"tenants.branding.{tenant}.pdf_logo", own.pdf_logo) for tenant, own in file.tenants.branding.items()]
    return [(where, relative) for where, relative in named if relative is not None]


def logo_file(path: Path, where: str, relative: str) -> Path:
    """The file a ``pdf_logo`` of the declaration at ``path`` names: inside its folder (what
    the CDK app packages with it), else a :class:`DeclarationError`."""
    base = path.parent.resolve()
    found = (base / relative).resolve()
    if not found.is_relative_to(base) or not found.is_file():
        raise DeclarationError(path, where, f"{relative!r} must name a file in the declaration's folder")
    return found


def _logos(path: Path, file: DeclarationFile) -> dict[str, PdfImage]:
    """Each logo the file names, read and checked now: a missing, broken or unusable image
    stops start-up and synth with the reason, not the first PDF."""
    named = logo_keys(file)
    if not named:
        return {}
    from exports.core.logos import ImageRefused, read_image

    logos: dict[str, PdfImage] = {}
    for where, relative in named:
        if relative in logos:
            continue
        try:
            logos[relative] = read_image(logo_file(path, where, relative).read_bytes())
        except ImageRefused as error:
            raise DeclarationError(path, where, f"{relative} {error}") from None
        except OSError as error:
            raise DeclarationError(path, where, f"{relative} cannot be read: {error.strerror}") from None
    return logos


def _failing(path: Path, entry: str) -> Fail:
    """The :class:`Fail` of one source or type of the file: its errors name ``entry``."""

    def fail(key: str, message: str) -> DeclarationError:
        return DeclarationError(path, f"{entry}: {key}" if key else entry, message)

    return fail


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DeclarationError(path, "", "no such declaration file (set EXPORTS_CONFIG to yours)") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise DeclarationError(path, "", f"not a readable TOML file: {error}") from None
    except RecursionError:
        # tomllib parses nested arrays and inline tables recursively: a few thousand levels
        # exhaust the stack. No declaration nests that deep.
        raise DeclarationError(path, "", "not a readable TOML file: it is nested too deeply") from None


def _named(location: tuple[int | str, ...], raw: object) -> tuple[int | str, ...]:
    """``types.orders.columns.8.kind`` as ``types.orders.columns.order_id.kind``: a column is
    known by its name, not its position (which an operator would have to count)."""
    named: list[int | str] = []
    node = raw
    for part in location:
        if isinstance(part, int) and named and named[-1] == "columns" and isinstance(node, list):
            entry = node[part] if 0 <= part < len(node) else None
            name = entry.get("name") if isinstance(entry, dict) else None
            named.append(name if isinstance(name, str) and name else part)
        else:
            named.append(part)
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            node = None
    return tuple(named)


def _where(location: tuple[int | str, ...]) -> str:
    parts = [str(part) for part in location if not str(part).startswith(("function-", "tagged-union"))]
    if len(parts) >= 2 and parts[0] in ("types", "sources"):
        return f"{parts[0]}.{parts[1]}: {'.'.join(parts[2:])}" if len(parts) > 2 else f"{parts[0]}.{parts[1]}"
    return ".".join(parts)


def _check_type(path: Path, file: DeclarationFile, name: str, declared: TypeDecl) -> None:
    fail = _failing(path, f"types.{name}")
    _check_source(fail, file, declared)
    kind = type_kind(declared)
    if kind is None:
        _check_plugin(fail, declared)
        return
    for parameter, spec in declared.parameters.items():
        _check_parameter(fail, f"parameters.{parameter}", spec)
    _check_caller(fail, declared, kind)
    if declared.selectable_columns and COLUMNS_PARAMETER in declared.parameters:
        raise fail(f"parameters.{COLUMNS_PARAMETER}", "is reserved for selectable_columns")
    _check_ranges(fail, declared)
    _check_columns(fail, declared)
    if declared.order_key is not None and not kind.has_order_key:
        # The order key of a SQL type may also be a result column left out of the file: it is
        # read from the result row, which holds every column the query returns.
        raise fail("order_key", "only SQL types declare an order key (DynamoDB resumes by its own key)")
    names = set(declared.parameters)
    for position, parameter in enumerate(declared.hot_key):
        if parameter not in names:
            raise fail(f"hot_key[{position}]", f"{parameter!r} is not a declared parameter")
    bound = caller_bindings(declared)
    for parameter in placeholders(declared.file_name or ""):
        if parameter not in names and bound.get(parameter) not in (BindingKind.STRING, BindingKind.LIST):
            raise fail("file_name", f"{{{parameter}}} is not a declared parameter or caller value")
    kind.check_type(fail, declared)
    _check_partitions(fail, declared, kind)
    _check_bindings_used(fail, declared, kind)
    try:
        filters_model(name, declared.parameters, declared.date_ranges, _selectable(declared), bound)
    except (ValueError, TypeError) as error:
        raise fail("parameters", str(error)) from None


class PluginError(ValueError):
    """A plugin factory that cannot be imported or called."""


def plugin_factory(reference: str) -> Callable[..., Any]:
    """The factory ``package.module:function`` names, imported now: at load, so a broken
    reference stops start-up and synth instead of failing the first request. A module that
    raises, or exits, while it is imported is a :class:`PluginError` too."""
    module_name, _, attribute = reference.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise PluginError(f"cannot import {reference}: {error}") from None
    except (Exception, SystemExit) as error:  # the operator's code, at its edge
        raise PluginError(f"importing {module_name} failed: {type(error).__name__}: {error}") from None
    if not callable(factory):
        raise PluginError(f"{reference} is not a function")
    checked: Callable[..., Any] = factory
    return checked


def _check_plugin(fail: Fail, declared: TypeDecl) -> None:
    extra = sorted(key for key in declared.model_fields_set if key not in PLUGIN_KEYS)
    if extra:
        raise fail(extra[0], "a plugin type declares only description, source, plugin and options")
    try:
        plugin_factory(declared.plugin or "")
    except PluginError as error:
        raise fail("plugin", str(error)) from None


def _check_source(fail: Fail, file: DeclarationFile, declared: TypeDecl) -> None:
    source = file.sources.get(declared.source)
    if source is None:
        raise fail("source", f"no source {declared.source!r} is declared (known: {', '.join(file.sources) or 'none'})")
    declared_kinds = [kind for kind in kinds() if kind.reads(declared) is not None]
    if len(declared_kinds) + (declared.plugin is not None) != 1:
        labels = ", ".join(kind.type_key_label for kind in kinds())
        raise fail("", f"declare exactly one of {labels} or plugin")
    for kind in declared_kinds:
        if source.kind != kind.name:
            raise fail(kind.type_key, f"source {declared.source!r} is not a {kind.title} source")


def _check_parameter(fail: Fail, key: str, spec: ParameterDecl) -> None:
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
    for word, value in (("default", spec.default), ("example", spec.example)):
        if value is None:
            continue
        try:
            value_checker(spec)([json_value(item) for item in value] if isinstance(value, list) else json_value(value))
        except PydanticCustomError as error:
            raise fail(f"{key}.{word}", str(error)) from None


def _check_item(fail: Fail, key: str, spec: ItemDecl) -> None:
    if spec.type is ParameterType.ENUM:
        if not spec.values:
            raise fail(f"{key}.values", "an enum parameter lists its allowed values")
    elif spec.values is not None:
        raise fail(f"{key}.values", "values are for enum parameters")
    _check_values(fail, key, spec)
    _check_bounds(fail, key, spec)
    _check_text_rules(fail, key, spec)


def _check_values(fail: Fail, key: str, spec: ItemDecl) -> None:
    """An enum's values: none empty, none twice (a choice listed twice is a typo of another)."""
    if spec.values is not None:
        for position, value in enumerate(spec.values):
            if not value:
                raise fail(f"{key}.values", f"value {position + 1} is empty")
            problem = check_text(value)
            if problem:
                raise fail(f"{key}.values", f"value {position + 1} {problem}")
        repeated = sorted({value for value in spec.values if spec.values.count(value) > 1})
        if repeated:
            raise fail(f"{key}.values", f"lists {', '.join(map(repr, repeated))} more than once")


def _check_bounds(fail: Fail, key: str, spec: ItemDecl) -> None:
    """``min`` and ``max``: of the parameter's own kind, and not crossed (no value could pass)."""
    bounds: dict[str, Any] = {}
    for bound in ("min", "max"):
        value = getattr(spec, bound)
        if value is None:
            continue
        if spec.type not in _BOUNDED:
            raise fail(f"{key}.{bound}", f"{spec.type.value} parameters have no {bound}")
        try:
            bounds[bound] = coerce_bound(spec, value)
        except ValueError as error:
            raise fail(f"{key}.{bound}", str(error)) from None
    if len(bounds) == 2 and bounds["min"] > bounds["max"]:
        raise fail(f"{key}.min", f"is greater than max ({bounds['min']} > {bounds['max']}): no value could pass")


def _check_text_rules(fail: Fail, key: str, spec: ItemDecl) -> None:
    """Lengths and pattern: string parameters only, lengths not crossed, a pattern that cannot
    backtrack without end."""
    for option in ("min_length", "max_length", "pattern"):
        if getattr(spec, option) is not None and spec.type not in _TEXTUAL:
            raise fail(f"{key}.{option}", "is for string parameters")
    if spec.min_length is not None and spec.max_length is not None and spec.min_length > spec.max_length:
        raise fail(f"{key}.min_length", f"is greater than max_length ({spec.min_length} > {spec.max_length})")
    if spec.pattern is not None:
        try:
            compile_pattern(spec.pattern)
        except ValueError as error:
            raise fail(f"{key}.pattern", str(error)) from None


def _check_ranges(fail: Fail, declared: TypeDecl) -> None:
    for position, date_range in enumerate(declared.date_ranges):
        kinds = []
        for end in (date_range.start, date_range.end):
            spec = declared.parameters.get(end)
            if spec is None or spec.type not in (ParameterType.DATE, ParameterType.DATETIME):
                raise fail(f"date_ranges[{position}]", f"{end!r} is not a declared date or datetime parameter")
            kinds.append(spec.type)
        if kinds[0] is not kinds[1]:
            raise fail(f"date_ranges[{position}]", "both ends must be of one type")
    if declared.window is not None and all(item.start != declared.window for item in declared.date_ranges):
        raise fail("window", f"{declared.window!r} is not the `from` of one of the type's date_ranges")
    changes = declared.changes
    if changes is not None:
        if not any((item.start, item.end) == (changes.start, changes.end) for item in declared.date_ranges):
            raise fail("changes", f"{changes.start!r}/{changes.end!r} is not one of the type's date_ranges")
        if declared.parameters[changes.start].type is not ParameterType.DATETIME:
            raise fail("changes", "a change window is a range of datetime parameters (the instant a row changed)")
        if changes.floor is not None and changes.floor.tzinfo is None:
            raise fail("changes.floor", "give the floor with its offset (2026-01-01T00:00:00Z)")


def _check_columns(fail: Fail, declared: TypeDecl) -> None:
    columns = declared.columns
    if columns is None:
        if declared.selectable_columns:
            raise fail("selectable_columns", "needs the columns declared")
        return
    seen: set[str] = set()
    for column in columns:
        if column.name in seen:
            raise fail(f"columns.{column.name}", "is declared twice")
        seen.add(column.name)


def _check_partitions(fail: Fail, declared: TypeDecl, kind: SourceKind) -> None:
    """A split needs rows counted up front: SQL types only (a DynamoDB query cannot count a
    range without reading it), by an order key or by a date range of required dates."""
    partitions = declared.partitions
    if partitions is None:
        return
    if not kind.splits:
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


def _check_caller(fail: Fail, declared: TypeDecl, kind: SourceKind) -> None:
    """Caller values: each a claim (or all claims), named apart from every parameter."""
    reserved = {COLUMNS_PARAMETER: "selectable_columns"}
    for each in kinds():
        reserved.update(each.reserved_names)
    for name, binding in declared.caller.items():
        key = f"caller.{name}"
        _check_binding(fail, key, binding)
        if name in declared.parameters:
            raise fail(key, f"{name!r} is also a parameter: a value comes from the token or the request, not both")
        if name in reserved:
            raise fail(key, f"{name!r} is reserved for {reserved[name]}")
        if name == JWT_CLAIMS_BINDING and declared.session is not None and declared.session.jwt_claims:
            raise fail(key, f"{name!r} is reserved for session.jwt_claims")
    allow = declared.allow
    if allow is not None and not (allow.groups or allow.scopes or allow.claims):
        raise fail("allow", "lists the groups, scopes or claims a caller needs (an empty rule allows everyone)")
    session = declared.session
    if session is None:
        return
    if not kind.sets_session:
        raise fail("session", "only SQL types set a session (role and settings)")
    if JWT_CLAIMS_BINDING in declared.parameters and session.jwt_claims:
        raise fail(f"parameters.{JWT_CLAIMS_BINDING}", "is reserved for session.jwt_claims")
    for setting, name in session.settings.items():
        if name not in declared.caller:
            raise fail(f"session.settings.{setting}", f"{name!r} is not a declared caller value")
        if setting == JWT_CLAIMS_SETTING and session.jwt_claims:
            raise fail(f"session.settings.{setting}", "is what session.jwt_claims sets")


def _check_binding(fail: Fail, key: str, binding: CallerBindingDecl) -> None:
    if binding.type is BindingKind.CLAIMS:
        if binding.claim is not None:
            raise fail(f"{key}.claim", 'a "claims" value is every claim: it names none')
    elif binding.claim is None:
        raise fail(f"{key}.claim", "names the claim of the caller's token it comes from (e.g. sub)")


def _check_bindings_used(fail: Fail, declared: TypeDecl, kind: SourceKind) -> None:
    """A caller value that reaches no query, key condition, item filter or session setting
    would scope nothing while the declaration reads as if it did: refused."""
    used: set[str] = {name for _, name in session_settings(declared)}
    used.update(kind.bound_names(fail, declared))
    for name in declared.caller:
        if name not in used:
            raise fail(f"caller.{name}", f"is bound but {kind.bound_in} never uses it, so it would scope no row")


def _selectable(declared: TypeDecl) -> list[str]:
    if not declared.selectable_columns or declared.columns is None:
        return []
    return [column.name for column in declared.columns]
