"""What every declared export type shares: its name, filters, columns, file name and limits."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypedDict

from exports.core.caller import AccessRule, BindingKind, Caller, CallerBinding, bind_caller
from exports.core.export_type import ChangeWindow, ClaimsRead, Column, ExportType, SourceLimit, WindowParameters
from exports.core.locales import DEFAULT_LOCALE
from exports.core.task import ExportFormat
from exports.declared.parameters import COLUMNS_PARAMETER, DeclaredFilters, raise_at
from exports.declared.templates import file_stem, render

if TYPE_CHECKING:
    from exports.core.logos import PdfImage

# A hot key longer than this is hashed (it becomes part of a DynamoDB key, at most 2048 bytes).
_HOT_KEY_MAX_CHARS = 200


class DeclaredParts(TypedDict):
    """What every declared type's export is made with, whatever its source kind."""

    name: str
    description: str
    filters_model: type[DeclaredFilters]
    parameter_names: Sequence[str]
    formats: Sequence[ExportFormat]
    columns: Sequence[Column] | None
    file_name: str
    hot_key: Sequence[str]
    source_limit: SourceLimit
    bindings: Sequence[CallerBinding]
    access: AccessRule | None
    window: WindowParameters | None
    changes: ChangeWindow | None
    locale: str
    titles: Mapping[str, str]
    pdf_footers: Mapping[str, str]
    pdf_logo: PdfImage | None
    error_messages: Mapping[str, str]


class DeclaredExport(ExportType[DeclaredFilters]):
    """An export type built from a declaration (see :mod:`exports.export_types.loader`)."""

    def __init__(
        self,
        *,
        name: str,
        description: str,
        filters_model: type[DeclaredFilters],
        parameter_names: Sequence[str],
        formats: Sequence[ExportFormat],
        columns: Sequence[Column] | None,
        file_name: str,
        hot_key: Sequence[str],
        source_limit: SourceLimit,
        bindings: Sequence[CallerBinding] = (),
        access: AccessRule | None = None,
        window: WindowParameters | None = None,
        changes: ChangeWindow | None = None,
        locale: str = DEFAULT_LOCALE,
        titles: Mapping[str, str] | None = None,
        pdf_footers: Mapping[str, str] | None = None,
        pdf_logo: PdfImage | None = None,
        error_messages: Mapping[str, str] | None = None,
    ) -> None:
        # Instance attributes stand in for the class attributes a Python export type sets.
        self.name = name
        self.description = description
        self.filters_model = filters_model
        self.formats = tuple(formats)
        self.parameter_names = tuple(parameter_names)
        self.declared_columns = tuple(columns) if columns is not None else None
        self._by_name = {column.name: column for column in self.declared_columns or ()}
        self._file_name = file_name
        self._hot_key = tuple(hot_key)
        self._source_limit = source_limit
        self._bindings = tuple(bindings)
        self._access = access
        self._window = window
        self._changes = changes
        self.default_locale = locale
        self.titles = dict(titles or {})
        self.pdf_footers = dict(pdf_footers or {})
        self.pdf_logo = pdf_logo
        self.error_messages = MappingProxyType(dict(error_messages or {}))

    def header_locales(self) -> set[str]:
        """The locales of the declared columns' header tables."""
        return {locale for column in self.declared_columns or () for locale in column.headers}

    def parse_filters(self, raw: dict[str, Any], bound: Mapping[str, Any] | None = None) -> DeclaredFilters:
        """The caller's filters with the caller-bound values; a caller-bound name in ``raw`` is
        refused (a caller never sets what its token decides)."""
        model = self.filters_model
        for name in model.bound_names:
            if name in raw:
                raise_at(name, "is bound to the caller's identity and cannot be set in filters", raw[name])
        return model.model_validate({**raw, **(bound or {})})

    def allows(self, caller: Caller) -> bool:
        """The declared ``allow`` rule (none: everyone)."""
        return self._access is None or self._access.allows(caller)

    def bind_caller(self, caller: Caller) -> dict[str, Any]:
        """The declared ``caller`` values from the token."""
        return bind_caller(self._bindings, caller)

    def claims_read(self) -> ClaimsRead:
        """The claims of the declared ``caller`` bindings and ``allow`` rule (every claim when a
        binding takes them all), and the scopes only when the rule names some."""
        if any(binding.kind is BindingKind.CLAIMS for binding in self._bindings):
            return ClaimsRead(None, scopes=bool(self._access and self._access.scopes))
        claims = {binding.claim for binding in self._bindings if binding.claim}
        rule = self._access
        if rule is not None:
            claims.update(rule.claims)
            if rule.groups:
                claims.add(rule.groups_claim)
        return ClaimsRead(frozenset(claims), scopes=bool(rule and rule.scopes))

    def window(self) -> WindowParameters | None:
        """The declared ``window`` (by default the type's only date range)."""
        return self._window

    def changes(self) -> ChangeWindow | None:
        """The declared ``changes``."""
        return self._changes

    def chosen_columns(self, filters: DeclaredFilters) -> list[Column]:
        """The declared columns, or those the caller chose, in the caller's order."""
        chosen = getattr(filters, COLUMNS_PARAMETER, None)
        if chosen is None:
            return list(self.declared_columns or ())
        return [self._by_name[name] for name in chosen]

    def file_stem(self, filters: DeclaredFilters) -> str:
        """The declared ``file_name`` template over the filters."""
        return file_stem(self._file_name, _values(filters))

    def hot_key(self, filters: DeclaredFilters) -> str | None:
        """The type, the values of its ``hot_key`` parameters and its caller-bound values (one
        tenant's burst never throttles another's); None when it declares no hot key. Hashed
        past ``_HOT_KEY_MAX_CHARS``."""
        if not self._hot_key:
            return None
        values = _values(filters)
        scoped = [binding.name for binding in self._bindings if binding.kind is not BindingKind.CLAIMS]
        key = ":".join([self.name, *(render("{" + name + "}", values) for name in (*self._hot_key, *scoped))])
        if len(key) > _HOT_KEY_MAX_CHARS:
            return f"{self.name}#{hashlib.sha256(key.encode('utf-8', 'surrogatepass')).hexdigest()}"
        return key

    def source_limit(self) -> SourceLimit:
        """The declared source and its ``max_concurrent_exports``."""
        return self._source_limit


def _values(filters: DeclaredFilters) -> dict[str, Any]:
    return {name: getattr(filters, name) for name in type(filters).model_fields}
