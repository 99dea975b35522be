"""The shape of a declaration file: sources and export types, as an operator writes them in TOML.

Every key is documented in docs/export-your-own-data.md. The models only check each value on its
own; :mod:`exports.export_types.loader` checks how they refer to each other (a type's source exists,
a template names declared parameters, the order key is among the columns, ...).
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from enum import StrEnum
from typing import Annotated, Any, Final, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    StringConstraints,
    field_validator,
    model_validator,
)

from exports.core.caller import BindingKind
from exports.core.config.audit import Audit
from exports.core.customer_errors import MESSAGES, message_problem
from exports.core.export_type import ColumnKind
from exports.core.locales import DEFAULT_LOCALE, canonical_locale, pick
from exports.core.task import ExportFormat

# Default limit of concurrent exports per source (max_concurrent_exports).
SOURCE_MAX_CONCURRENT_DEFAULT: Final = 4


def _locale_tag(tag: str) -> str:
    """``tag`` as written: its canonical case, so ``zh-cn`` is refused rather than never matched."""
    if canonical_locale(tag) != tag:
        raise ValueError(f"write the locale {tag!r} as {canonical_locale(tag)!r}")
    return tag


# Names that reach SQL, templates, JSON Schema and file names: plain identifiers only.
Identifier = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,62}$")]
EnvName = Annotated[str, StringConstraints(pattern=r"^[A-Z_][A-Z0-9_]*$")]
# A custom PostgreSQL setting (a "placeholder variable"): two or more dotted identifiers.
SettingName = Annotated[str, StringConstraints(pattern=r"^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)+$", max_length=63)]
# A locale tag (en, zh-CN, ...), as a TOML key: written in BCP 47's case (exports.core.locales).
LocaleTag = Annotated[str, AfterValidator(_locale_tag)]
# A label in one language, or a table of labels by locale (``{ en = "Order", zh-CN = "订单" }``).
Label = str | Annotated[dict[LocaleTag, str], Field(min_length=1)]
# A file next to the declaration (a logo): a path relative to the declaration's folder and
# inside it, checked and read at start-up (exports.export_types.loader).
RelativeFile = Annotated[str, StringConstraints(min_length=1, max_length=255)]
# A claim of the caller's token, as the authorizer passes it (``sub``, ``custom:tenant_id``, ...).
ClaimName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_:./#@-]{1,256}$")]


class StrictModel(BaseModel):
    """A part of a declaration: no unknown key, no coerced value, immutable."""

    # strict: a declaration says what it means. "4" is not an integer bound, "true" not a
    # boolean, "12" not a max_days (lax mode would coerce each, and a typo would pass).
    # defer_build: validators are built on first use, not at import (cold starts).
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)


class SourceHead(StrictModel):
    """The keys a source declares first, whatever its kind."""

    kind: str
    description: str = ""


class SourceDecl(SourceHead):
    """What every source declares, whatever its kind. Each kind's model (a package of
    :mod:`exports.sources`) narrows ``kind`` to its own name and adds how to reach it (in a
    :class:`SourceHead` subclass listed after this one among its bases, so that its keys come
    before the limits, as pydantic reports mistakes); the registry of kinds
    (:mod:`exports.sources.registry`) puts them in the file's model."""

    max_concurrent_exports: int = Field(default=SOURCE_MAX_CONCURRENT_DEFAULT, ge=1, le=100)


class ParameterType(StrEnum):
    """The kinds of value a declared parameter takes."""

    DATE = "date"
    DATETIME = "datetime"
    INTEGER = "integer"
    DECIMAL = "decimal"
    STRING = "string"
    ENUM = "enum"
    BOOLEAN = "boolean"
    LIST = "list"


# Strict: a TOML boolean stays a boolean (never the integer 1), a number a number.
Scalar = bool | date | datetime | int | float | Decimal | str


class ItemDecl(StrictModel):
    """What each value of a list parameter is."""

    type: Literal[
        ParameterType.DATE,
        ParameterType.DATETIME,
        ParameterType.INTEGER,
        ParameterType.DECIMAL,
        ParameterType.STRING,
        ParameterType.ENUM,
    ]
    values: list[str] | None = None
    min: Scalar | None = None
    max: Scalar | None = None
    min_length: int | None = Field(default=None, ge=0)
    max_length: int | None = Field(default=None, ge=1)
    pattern: str | None = None


class ParameterDecl(ItemDecl):
    """A filter a caller sends in ``filters``: its type, whether it is required, its bounds."""

    type: ParameterType = Field(strict=False)  # type: ignore[assignment]  # a parameter may also be a list
    description: str = ""
    required: bool | None = None
    default: Scalar | list[Scalar] | None = None
    # A value to show: served as the JSON Schema's ``examples`` and used in the OpenAPI document's
    # example request; checked against the parameter's rules like ``default``.
    example: Scalar | list[Scalar] | None = None
    items: ItemDecl | None = None
    min_items: int | None = Field(default=None, ge=1)
    max_items: int | None = Field(default=None, ge=1)


class DateRangeDecl(StrictModel):
    """Two date (or datetime) parameters that bound a range: ``from`` must not be after ``to``,
    and the range spans at most ``max_days`` days (both ends included)."""

    model_config = ConfigDict(populate_by_name=True)

    start: Identifier = Field(alias="from")
    end: Identifier = Field(alias="to")
    max_days: int = Field(ge=1)


# A span of time: a whole number of seconds, minutes or hours (``"5m"``).
Duration = Annotated[str, StringConstraints(pattern=r"^[0-9]{1,6}[smh]$")]


class ChangesDecl(StrictModel):
    """The column that says when a row last changed (``column``), the date-time range bound to it
    (``from`` included, ``to`` excluded: one of the type's ``date_ranges``), the safety ``lag``
    taken off each feed run's end for rows committed late, and the ``floor`` a feed without
    ``start_at`` starts at. Only a type that declares it offers ``since_last_run``."""

    model_config = ConfigDict(populate_by_name=True)

    column: Identifier
    start: Identifier = Field(alias="from")
    end: Identifier = Field(alias="to")
    lag: Duration = "0s"
    floor: datetime | None = None


class ColumnDecl(StrictModel):
    """One column of the file. ``attribute`` (DynamoDB) is the item attribute it comes from."""

    name: Identifier
    # The file's header: one label, or one per locale (the type's ``locale`` among them).
    header: Label | None = None
    kind: ColumnKind | None = Field(default=None, strict=False)
    width: int = Field(default=14, ge=1, le=255)
    attribute: str | None = None
    # A decimal column's numeric(precision, scale): Parquet types the column with them (an
    # undeclared decimal is written as its digits' text). PostgreSQL's own limit is 1000 digits.
    precision: int | None = Field(default=None, ge=1, le=1000)
    scale: int | None = Field(default=None, ge=0, le=1000)
    # A PostgreSQL array column: JSON Lines and Parquet write its values as lists of this kind
    # (a type without declared columns finds its arrays itself).
    array_of: ColumnKind | None = Field(default=None, strict=False)

    @model_validator(mode="after")
    def _array_shape(self) -> ColumnDecl:
        if self.array_of is None:
            return self
        if self.kind not in (None, ColumnKind.STRING):
            raise ValueError('an array column (array_of) is of kind = "string", its text in CSV, XLSX and PDF')
        if self.array_of is ColumnKind.JSON:
            raise ValueError('array_of = "json" is not supported: declare the column kind = "json" over to_json(...)')
        return self

    @model_validator(mode="after")
    def _decimal_shape(self) -> ColumnDecl:
        if (self.precision is None) != (self.scale is None):
            raise ValueError("precision and scale go together")
        if self.precision is not None:
            if self.kind is not ColumnKind.DECIMAL:
                raise ValueError('precision and scale are for kind = "decimal"')
            if self.scale is not None and self.scale > self.precision:
                raise ValueError("scale cannot be more than precision")
        return self


class CallerBindingDecl(StrictModel):
    """A value bound from the caller's verified token, never from the request: one claim as a
    string (``type = "string"``, the default) or a list of strings (``"list"``, e.g. groups),
    or every claim as a JSON object (``"claims"``, no ``claim``)."""

    claim: ClaimName | None = None
    type: BindingKind = Field(default=BindingKind.STRING, strict=False)


class AllowDecl(StrictModel):
    """Who may use the type: every part given must hold (a group of the caller's in
    ``groups``, a scope in ``scopes``, each claim of ``claims`` with one of its values)."""

    groups: list[Annotated[str, StringConstraints(min_length=1, max_length=128)]] = Field(default_factory=list)
    scopes: list[Annotated[str, StringConstraints(min_length=1, max_length=256)]] = Field(default_factory=list)
    claims: dict[ClaimName, list[Annotated[str, StringConstraints(min_length=1)]]] = Field(default_factory=dict)


class SessionDecl(StrictModel):
    """What a SQL type sets inside its read-only transaction, so the database's own row-level
    security applies: ``SET LOCAL ROLE role``, each setting of ``settings`` to a caller-bound
    value (``set_config(name, value, true)``), and with ``jwt_claims`` PostgREST's
    ``request.jwt.claims`` (every verified claim, as JSON)."""

    role: Identifier | None = None
    settings: dict[SettingName, Identifier] = Field(default_factory=dict)
    jwt_claims: bool = False


class AccessDecl(StrictModel):
    """Deployment-wide: the claim that lists a caller's groups (``allow.groups`` reads it)."""

    groups_claim: ClaimName = "cognito:groups"


class TenantPolicyDecl(StrictModel):
    """Quotas and audit retention of a tenant (``[tenants.defaults]`` for every tenant,
    ``[tenants.overrides.<tenant>]`` for one); a key left out is no limit (the default's value
    for an override)."""

    max_active_tasks: int | None = Field(default=None, ge=1)
    max_rows_per_day: int | None = Field(default=None, ge=1)
    max_schedules: int | None = Field(default=None, ge=1)
    audit_retention_days: int | None = Field(default=None, ge=Audit.RETENTION_DAYS_MIN, le=Audit.RETENTION_DAYS_MAX)


class TenantBrandingDecl(StrictModel):
    """How one tenant's PDFs look (``[tenants.branding.<tenant>]``): its logo and footer, over
    every type's own."""

    # A PNG or JPEG file, relative to the declaration's folder (docs/formats.md, "Logo and
    # footer per type and per tenant").
    pdf_logo: RelativeFile | None = None
    # One text for every locale, or one per locale.
    pdf_footer: Label | None = None


TenantName = Annotated[str, StringConstraints(min_length=1, max_length=256)]


class TenantsDecl(StrictModel):
    """Deployment-wide: which claim names a caller's tenant, which group reads its tenant's
    audit trail, and each tenant's quotas and audit retention (docs/audit.md), in one place."""

    claim: ClaimName = Audit.TENANT_CLAIM_DEFAULT
    admin_group: Annotated[str, StringConstraints(min_length=1, max_length=256)] = Audit.ADMIN_GROUP_DEFAULT
    defaults: TenantPolicyDecl = TenantPolicyDecl()
    overrides: dict[TenantName, TenantPolicyDecl] = Field(default_factory=dict)
    branding: dict[TenantName, TenantBrandingDecl] = Field(default_factory=dict)


class DestinationsDecl(StrictModel):
    """Deployment-wide: who of a tenant manages its delivery destinations (default: the tenants'
    ``admin_group``) and who uses them (default: every member of the tenant), in the vocabulary
    of a type's ``allow`` (docs/destinations.md)."""

    manage: AllowDecl | None = None
    use: AllowDecl = AllowDecl()


class PartitionBy(StrEnum):
    """How an export type's rows split into partitions written at once."""

    ORDER_KEY = "order_key"
    DATE_RANGE = "date_range"


class PartitionsDecl(StrictModel):
    """How a large export of the type is split (docs/fan-out.md): keyset ranges of its order key
    (SQL types), or runs of days of its date range (``date_range``: its ``from`` parameter, when
    the type declares more than one range)."""

    by: PartitionBy = Field(strict=False)
    date_range: Identifier | None = None


class TypeHead(StrictModel):
    """The keys a type declares first: what it is, its source, and a plugin's factory. Each
    source kind's key (``query``, ``dynamodb``) follows them, then :class:`TypeDecl`'s, in the
    model :func:`exports.export_types.schema.declaration_model` builds: pydantic reports a file's
    mistakes in that order."""

    description: str = Field(min_length=1)
    source: Identifier
    # A Python factory ("package.module:function") for what a declaration cannot say.
    plugin: str | None = Field(default=None, pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
    # What a plugin's factory reads (PluginContext.options); plugins only.
    options: dict[str, Any] = Field(default_factory=dict)


class TypeDecl(TypeHead):
    """One export type: where its rows come from, what a caller may ask, what the file holds
    (and, in the file's model, the key of its source's kind)."""

    parameters: dict[Identifier, ParameterDecl] = Field(default_factory=dict)
    # Values from the caller's token, bound like parameters (see CallerBindingDecl).
    caller: dict[Identifier, CallerBindingDecl] = Field(default_factory=dict)
    allow: AllowDecl | None = None
    session: SessionDecl | None = None
    date_ranges: list[DateRangeDecl] = Field(default_factory=list)
    # The date range a schedule's relative window (previous_week, ...) fills, named by its
    # ``from`` parameter; unset: the type's only date range, if it has exactly one.
    window: Identifier | None = None
    # The change column a feed schedule (since_last_run) reads (docs/schedules.md, "Feeds").
    changes: ChangesDecl | None = None
    columns: list[ColumnDecl] | None = None
    selectable_columns: bool = False
    order_key: list[Identifier] | None = None
    hot_key: list[Identifier] = Field(default_factory=list)
    partitions: PartitionsDecl | None = None
    # Each item lax too: a field's strict=False does not reach the items of its list.
    formats: list[Annotated[ExportFormat, Strict(False)]] = Field(
        default_factory=lambda: list(ExportFormat), min_length=1
    )
    file_name: str | None = None
    # The locale a task is in when it asks for none: the locale of ``description`` and of the
    # headers written as one label.
    locale: LocaleTag = DEFAULT_LOCALE
    # The description in other locales: a PDF's title.
    titles: dict[LocaleTag, str] = Field(default_factory=dict)
    # Printed at the foot of every PDF page, beside the page number: one text (in ``locale``) or
    # one per locale.
    pdf_footer: Label | None = None
    # Drawn at the head of every PDF page: a PNG or JPEG file, relative to the declaration's
    # folder (docs/formats.md, "Logo and footer per type and per tenant").
    pdf_logo: RelativeFile | None = None

    @model_validator(mode="after")
    def _headers_in_default_locale(self) -> TypeDecl:
        if isinstance(self.pdf_footer, dict) and pick(self.pdf_footer, self.locale) is None:
            raise ValueError(f"pdf_footer has no text for the type's locale {self.locale!r}")
        for column in self.columns or ():
            if isinstance(column.header, dict) and pick(column.header, self.locale) is None:
                raise ValueError(
                    f"the header of column {column.name!r} has no label for the type's locale {self.locale!r}"
                )
        return self

    # The type's own message for an error code a task of it may fail with (one of
    # exports.core.customer_errors.MESSAGES): what its customers read instead of ours.
    messages: dict[str, Annotated[str, StringConstraints(min_length=1, max_length=500)]] = Field(default_factory=dict)

    @field_validator("messages")
    @classmethod
    def _messages(cls, messages: dict[str, str]) -> dict[str, str]:
        for code, template in messages.items():
            if code not in MESSAGES:
                raise ValueError(f"{code} is not an error code of a task (known: {', '.join(sorted(MESSAGES))})")
            if problem := message_problem(template):
                raise ValueError(f"the message of {code} {problem}")
        return messages


class DeclarationFile(StrictModel):
    """The whole file, as the code reads it. A file is validated by the model
    :func:`exports.export_types.schema.declaration_model` derives from this one with the registered
    kinds (each source by its kind's model, each type with its kind's key)."""

    access: AccessDecl = AccessDecl()
    tenants: TenantsDecl = TenantsDecl()
    destinations: DestinationsDecl = DestinationsDecl()
    sources: dict[Identifier, SourceDecl] = Field(default_factory=dict)
    types: dict[Identifier, TypeDecl] = Field(default_factory=dict)
