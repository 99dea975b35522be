"""The body of an export request as the API and schedules accept it (OpenAPI is generated from it)."""

from __future__ import annotations

from typing import Annotated, Any, Final

from pydantic import (
    AnyHttpUrl,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    StringConstraints,
    UrlConstraints,
    ValidationInfo,
    field_validator,
    model_validator,
)

from exports.core.config.limits import Limits
from exports.core.csv_dialect import DEFAULT_DIALECT, CsvDialect, CsvEncoding
from exports.core.deliveries import DESTINATION_ID_PATTERN, MAX_DESTINATIONS, PATH_TEMPLATE_MAX_LENGTH, check_template
from exports.core.locales import ACCEPTED as ACCEPTED_LOCALES
from exports.core.locales import LOCALE_PATTERN, canonical_locale
from exports.core.spec import ExportSpec
from exports.core.task import ExportFormat
from exports.core.zones import ACCEPTED, UTC_ZONE, canonical_zone, is_utc

# Marks a field of a zone name: the OpenAPI document refers it to its list of the zones
# (exports.api.http.openapi.ZONE_SCHEMA), so a schema-valid zone is one the service takes.
ZONE_MARK: Final = "x-time-zone"


# csv_bom is for UTF-8 files (ExportRequest._bom_in_utf8), as the document states it: with
# ``csv_bom: true`` the dialect's encoding, when given, is UTF-8. A body that breaks it is
# invalid by the schema, not a schema-valid body refused.
BOM_IN_UTF8: Final[dict[str, JsonValue]] = {
    "if": {"required": ["csv_bom"], "properties": {"csv_bom": {"const": True}}},
    "then": {"properties": {"csv_dialect": {"properties": {"encoding": {"const": "utf-8"}}}}},
}


# A path template places the file under the destinations named beside it
# (ExportRequest._usable_template), as the document states it: with a ``path_template`` string,
# ``destinations`` names at least one.
TEMPLATE_WITH_DESTINATIONS: Final[dict[str, JsonValue]] = {
    "dependentSchemas": {
        "path_template": {
            "if": {"properties": {"path_template": {"type": "string"}}},
            "then": {"required": ["destinations"], "properties": {"destinations": {"minItems": 1}}},
        }
    }
}


class ExportRequest(BaseModel):
    """``POST /v1/exports``: what to export and how."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={**BOM_IN_UTF8, **TEMPLATE_WITH_DESTINATIONS})

    export_type: str = Field(strict=True, min_length=1, max_length=64, description="A name from GET /v1/export-types.")
    format: ExportFormat = Field(default=ExportFormat.CSV, description="File format.")
    filters: dict[str, Any] = Field(default_factory=dict, description="Filters of the export type.")
    # Strict: ``true`` is not a priority and ``"60"`` is not a number of seconds.
    priority: int = Field(
        default=Limits.PRIORITY_DEFAULT,
        strict=True,
        ge=Limits.PRIORITY_HIGHEST,
        le=Limits.PRIORITY_LOWEST,
        description="1 is the highest, 10 the lowest.",
    )
    timeout_sec: int = Field(
        default=Limits.TIMEOUT_SEC_DEFAULT,
        strict=True,
        ge=Limits.TIMEOUT_SEC_MIN,
        le=Limits.TIMEOUT_SEC_MAX,
        description="The task times out this long after submission.",
    )
    # The length is the text sent: a Field max_length would count the URL as normalized, which may
    # gain a "/" (2,048 characters sent, 2,049 counted) and refuse what the schema allows.
    callback_url: Annotated[AnyHttpUrl, UrlConstraints(max_length=Limits.CALLBACK_URL_MAX_LENGTH)] | None = Field(
        default=None, description="Called when the task ends (see the docs)."
    )
    csv_bom: bool = Field(default=False, strict=True, description="Start CSV files with a UTF-8 BOM (for Excel).")
    csv_formula_guard: bool = Field(
        default=True,
        strict=True,
        description=(
            "CSV and csv.gz only. True (default): a text value starting with =, +, -, @, a tab or a"
            " carriage return is written with a leading apostrophe, so a spreadsheet shows it as"
            " text instead of running it as a formula (OWASP CSV injection). False: every value is"
            " written exactly as it is (e.g. phone numbers such as +86 722 1590); only for files"
            " that no spreadsheet will open, or whose text you trust. XLSX never changes text."
        ),
    )
    timezone: str = Field(
        default=UTC_ZONE,
        strict=True,
        min_length=1,
        max_length=64,
        description=(
            f"The zone the file's date-times from instants (timestamptz) are written in: {ACCEPTED}."
            " CSV, JSON Lines and PDF write them in ISO 8601 with the zone's offset at that instant,"
            " XLSX as the zone's wall time (the header names the zone), Parquet as UTC instants typed"
            " with the zone. The aliases of UTC (UTC, Etc/UTC, Zulu, ...) are the default: date-times"
            " in UTC without an offset, as always. Dates and timestamps without time zone are unchanged."
        ),
        examples=["Europe/Berlin", "America/New_York", "Asia/Kathmandu", UTC_ZONE],
        json_schema_extra={ZONE_MARK: True},
    )
    csv_dialect: CsvDialect = Field(
        default=DEFAULT_DIALECT,
        description=(
            "CSV and csv.gz only: the delimiter, line ending, decimal separator and encoding, for the"
            ' spreadsheet that opens the file. German Excel: {"delimiter": ";", "decimal_separator": ","};'
            ' Chinese Excel: {"encoding": "gb18030"}; Japanese Excel: {"encoding": "shift_jis"}.'
            " The default is RFC 4180 in UTF-8."
        ),
    )
    locale: str | None = Field(
        default=None,
        min_length=2,
        max_length=35,
        json_schema_extra={"pattern": LOCALE_PATTERN},
        description=(
            f"The language of the column headers and the PDF heading in CSV, XLSX and PDF: {ACCEPTED_LOCALES}."
            " A header without a label for it falls back to a shorter tag (zh-Hant-TW, zh-Hant, zh), then to the"
            " type's default. JSON Lines and Parquet keep the column names. None: the type's default."
        ),
        examples=["en", "de", "zh-CN", "ja"],
    )

    destinations: list[Annotated[str, StringConstraints(pattern=DESTINATION_ID_PATTERN)]] = Field(
        default_factory=list,
        max_length=MAX_DESTINATIONS,
        # Stated, not only checked: a list naming one twice is refused (422), so the schema says so.
        json_schema_extra={"uniqueItems": True},
        description="Your tenant's destinations (GET /v1/destinations) to deliver the file to once it is COMPLETED;"
        " the task shows each delivery (`deliveries`). An export that delivers is never merged with an identical one.",
    )
    path_template: str | None = Field(
        default=None,
        max_length=PATH_TEMPLATE_MAX_LENGTH,
        description="Where the file goes under each destination's prefix or directory: `{type}`, `{date}` (the"
        " run's day, UTC), `{task_id}` and `{file}` (the file's name), e.g. `{type}/{date}/{file}`. Default `{file}`.",
        examples=["{type}/{date}/{file}"],
    )

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, name: str) -> str:
        return canonical_zone(name)

    @field_validator("destinations")
    @classmethod
    def _destinations_once(cls, destinations: list[str]) -> list[str]:
        if len(set(destinations)) != len(destinations):
            raise ValueError("name each destination once")
        return destinations

    @field_validator("path_template")
    @classmethod
    def _usable_template(cls, template: str | None, info: ValidationInfo) -> str | None:
        if template is not None and not info.data.get("destinations"):
            raise ValueError("a path template is for the destinations named in `destinations`: name them")
        return None if template is None else check_template(template)

    @field_validator("locale")
    @classmethod
    def _locale_tag(cls, tag: str | None) -> str | None:
        return None if tag is None else canonical_locale(tag)

    @model_validator(mode="after")
    def _bom_in_utf8(self) -> ExportRequest:
        if self.csv_bom and self.csv_dialect.encoding is not CsvEncoding.UTF_8:
            raise ValueError("csv_bom is for UTF-8 files: Excel reads the other encodings without one")
        return self

    def spec(self) -> ExportSpec:
        """The export this body asks for, as the services take it."""
        callback_url = str(self.callback_url) if self.callback_url else None
        return ExportSpec(
            **self.model_dump(exclude={"callback_url", "csv_dialect", "destinations", "path_template"}),
            csv_dialect=self.csv_dialect,
            callback_url=callback_url,
        )

    def idempotency_body(self) -> dict[str, Any]:
        """The body an Idempotency-Key is bound to: the default zone left out, so a key stored
        before zones existed still matches the same request."""
        body = self.model_dump(mode="json")
        if is_utc(self.timezone):
            del body["timezone"]
        # Likewise the default dialect and no locale: bodies of before them.
        if self.csv_dialect.is_default:
            del body["csv_dialect"]
        if self.locale is None:
            del body["locale"]
        if not self.destinations:
            del body["destinations"], body["path_template"]
        return body
