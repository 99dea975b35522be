"""Export types from checked declarations, wired to their sources' readers."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from exports.core.caller import AccessRule, CallerBinding
from exports.core.errors import ExportFailed, ExportsError
from exports.core.export_type import (
    AnyExportType,
    Column,
    ColumnKind,
    ExportType,
    SourceLimit,
    TenantBranding,
    WindowParameters,
)
from exports.core.locales import pick
from exports.declared.common import DeclaredParts
from exports.declared.model import AccessDecl, ColumnDecl, DeclarationFile, TypeDecl
from exports.declared.parameters import filters_model
from exports.declared.type_facts import caller_bindings, change_window, window_range
from exports.export_types.loader import DeclarationError, Declarations, PluginError, plugin_factory
from exports.sources.kind import LeftOut, SourceReaders, TypeMaker
from exports.sources.registry import source_kind, type_kind

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PluginContext:
    """What a Python plugin's factory gets: its declared name and source, the deployment's
    settings and environment, and the shared AWS client factory."""

    name: str
    source: str
    options: Mapping[str, Any]
    environ: Mapping[str, str]
    client: Callable[[str], Any]
    settings: Any = None


@dataclass(frozen=True)
class BuiltTypes:
    """The export types a deployment serves, and those left out with the reason (a source
    without a connection in this deployment)."""

    types: list[AnyExportType]
    left_out: dict[str, str]


def build_export_types(declarations: Declarations, readers: SourceReaders) -> BuiltTypes:
    """Every declared type, in file order, made by its source's kind; a type whose source cannot
    be reached from this deployment is left out (and logged), a broken plugin fails like a bad
    declaration."""
    file = declarations.file
    makers: dict[str, TypeMaker | str] = {}
    types: list[AnyExportType] = []
    left_out: dict[str, str] = {}
    for name, declared in file.types.items():
        source = file.sources[declared.source]
        if declared.plugin is not None:
            types.append(_plugin(declarations, name, declared, readers))
            continue
        maker = makers.get(declared.source)
        if maker is None:
            try:
                maker = source_kind(source).type_maker(declared.source, source, readers, declarations.base_dir)
            except ExportsError as error:
                maker = str(error)
            makers[declared.source] = maker
        if isinstance(maker, str):
            left_out[name] = maker
            continue
        limit = SourceLimit(declared.source, source.max_concurrent_exports)
        parts = _parts(name, declared, limit, file.access)
        parts["pdf_logo"] = declarations.logos[declared.pdf_logo] if declared.pdf_logo is not None else None
        try:
            types.append(maker(declared, parts))
        except LeftOut as error:
            left_out[name] = str(error)
    branding = tenant_branding(declarations)
    for export_type in types:
        export_type.tenant_branding = branding
    for name, reason in left_out.items():
        # Named in the message too: local mode's log shows no extra keys.
        keys = {"export_type": name, "reason": reason}
        logger.warning("export type %s left out of this deployment: %s", name, reason, extra=keys)
    for warning in declarations.warnings:
        logger.warning(warning)
    return BuiltTypes(types, left_out)


def tenant_branding(declarations: Declarations) -> dict[str, TenantBranding]:
    """Each tenant's PDF footer and logo ([tenants.branding]). A single footer text is every
    locale's: kept under no locale tag, no locale finds it and the fallback to the first text
    does (ExportType.pdf_look)."""
    file: DeclarationFile = declarations.file
    return {
        tenant: TenantBranding(
            footers=None
            if own.pdf_footer is None
            else dict(own.pdf_footer)
            if isinstance(own.pdf_footer, dict)
            else {"": own.pdf_footer},
            logo=declarations.logos[own.pdf_logo] if own.pdf_logo is not None else None,
        )
        for tenant, own in file.tenants.branding.items()
    }


def refuse_left_out(declarations: Declarations, built: BuiltTypes) -> None:
    """A :class:`DeclarationError` naming each source whose types were left out, why (the
    variable that is not set) and its types: local mode serves every declared type or does not
    start, so its banner and ``GET /v1/export-types`` list the same types."""
    by_source: dict[tuple[str, str], list[str]] = {}
    for name, reason in built.left_out.items():
        by_source.setdefault((declarations.file.types[name].source, reason), []).append(name)
    problems = [
        f"sources.{source}: {reason}: its export types {', '.join(names)} cannot be served "
        "(set the variable, or remove the types)"
        for (source, reason), names in by_source.items()
    ]
    if problems:
        raise DeclarationError(declarations.path, "", "; ".join(problems))


def check_results(declarations: Declarations, types: Sequence[AnyExportType]) -> None:
    """Ask each declared type's kind which declared columns its source does not return (a SQL
    type's query is described, no row read) and refuse, as a declaration error, a type that
    fails or misses a declared column or order key column. Local mode runs this at start-up; a
    deployed worker finds the same mistakes at the type's first export (``SOURCE_QUERY_FAILED``).
    A source that cannot be reached now is only logged."""
    for export_type in types:
        name = export_type.name
        declared = declarations.file.types[name]
        kind = type_kind(declared)
        if kind is None:
            continue
        try:
            missing = kind.missing_result_columns(export_type)
        except ExportFailed as error:
            raise DeclarationError(declarations.path, f"types.{name}: query", error.message) from None
        except ExportsError as error:
            logger.warning("could not check the query's columns", extra={"export_type": name, "reason": str(error)})
            continue
        if missing:
            key = "order_key" if missing[0] in (declared.order_key or ()) else f"columns.{missing[0]}"
            raise DeclarationError(
                declarations.path, f"types.{name}: {key}", f"the query returns no column {missing[0]!r}"
            )


def _parts(name: str, declared: TypeDecl, limit: SourceLimit, access: AccessDecl) -> DeclaredParts:
    selectable = [column.name for column in declared.columns or ()] if declared.selectable_columns else []
    bound = caller_bindings(declared)
    window = window_range(declared)
    return {
        "name": name,
        "description": declared.description,
        "filters_model": filters_model(name, declared.parameters, declared.date_ranges, selectable, bound),
        "bindings": [
            CallerBinding(
                binding_name, kind, declared.caller[binding_name].claim if binding_name in declared.caller else None
            )
            for binding_name, kind in bound.items()
        ],
        "access": _access_rule(declared, access),
        "parameter_names": list(declared.parameters),
        "formats": declared.formats,
        "columns": [_column(column, declared.locale) for column in declared.columns]
        if declared.columns is not None
        else None,
        "locale": declared.locale,
        "titles": declared.titles,
        "pdf_footers": _footers(declared),
        "pdf_logo": None,
        "file_name": declared.file_name or name,
        "hot_key": declared.hot_key,
        "source_limit": limit,
        "window": WindowParameters(*window) if window else None,
        "changes": change_window(declared),
        "error_messages": declared.messages,
    }


def _access_rule(declared: TypeDecl, access: AccessDecl) -> AccessRule | None:
    allow = declared.allow
    if allow is None:
        return None
    return AccessRule(
        groups=tuple(allow.groups),
        scopes=tuple(allow.scopes),
        claims={claim: tuple(values) for claim, values in allow.claims.items()},
        groups_claim=access.groups_claim,
    )


def _footers(declared: TypeDecl) -> dict[str, str]:
    """The PDF footer by locale: a single text is the type's own locale's."""
    footer = declared.pdf_footer
    if footer is None:
        return {}
    return dict(footer) if isinstance(footer, dict) else {declared.locale: footer}


def _column(declared: ColumnDecl, locale: str) -> Column:
    """The column; a header table's label for the type's ``locale`` is its header."""
    labels = declared.header if isinstance(declared.header, dict) else {}
    header = pick(labels, locale) if isinstance(declared.header, dict) else declared.header
    return Column(
        declared.name,
        header or declared.name,
        declared.kind or ColumnKind.STRING,
        declared.width,
        precision=declared.precision,
        scale=declared.scale,
        array_of=declared.array_of,
        headers=labels,
    )


def _plugin(declarations: Declarations, name: str, declared: TypeDecl, readers: SourceReaders) -> AnyExportType:
    """The export type a plugin factory makes; it is served under its declared name."""
    where = f"types.{name}: plugin"
    try:
        factory = plugin_factory(declared.plugin or "")
    except PluginError as error:
        raise DeclarationError(declarations.path, where, str(error)) from None
    context = PluginContext(
        name=name,
        source=declared.source,
        options=declared.options,
        environ=readers.environ,
        client=readers.client,
        settings=readers.settings,
    )
    try:
        export_type = factory(context)
    except (Exception, SystemExit) as error:  # the operator's code, at its edge: sys:exit must not end the process
        raise DeclarationError(
            declarations.path, where, f"{declared.plugin} failed: {type(error).__name__}: {error}"
        ) from None
    if not isinstance(export_type, ExportType):
        raise DeclarationError(declarations.path, where, f"{declared.plugin} did not return an ExportType")
    # The declared name and description are the ones served.
    export_type.name = name
    export_type.description = declared.description
    return export_type
