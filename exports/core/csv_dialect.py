"""How a CSV file is spelled for the spreadsheet that opens it (docs/formats.md, "CSV dialect"):
the delimiter, the line ending, the decimal separator, the encoding, and what happens to a value
the encoding cannot hold. The default is RFC 4180 in UTF-8, the file the service always wrote;
any other dialect is written by the Python writer (never by PostgreSQL's COPY)."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class CsvEncoding(StrEnum):
    """The encodings a CSV file is written in: UTF-8 for every program, and the code pages Excel
    on Chinese, Japanese and Western Windows opens without an import wizard."""

    UTF_8 = "utf-8"
    GB18030 = "gb18030"
    SHIFT_JIS = "shift_jis"
    WINDOWS_1252 = "windows-1252"

    @property
    def codec(self) -> str:
        """Python's codec: Shift_JIS as Windows writes it (cp932, Windows-31J: the NEC and IBM
        extensions, circled numbers, the wave dash as Windows maps it), what Excel on Japanese
        Windows reads."""
        return _CODECS[self]


_CODECS = {
    CsvEncoding.UTF_8: "utf-8",
    CsvEncoding.GB18030: "gb18030",
    CsvEncoding.SHIFT_JIS: "cp932",
    CsvEncoding.WINDOWS_1252: "cp1252",
}
# The line endings, by the name a request gives.
LINE_ENDINGS = {"crlf": "\r\n", "lf": "\n"}


class CsvDialect(BaseModel):
    """A CSV file's spelling. ``unencodable``: a value the encoding cannot hold fails the export
    naming its column and row (``fail``), or its characters become ``?`` (``replace``)."""

    # The OpenAPI document states the rule of _decimal_comma_needs_another_delimiter (a body that
    # breaks it is invalid by the schema, not a schema-valid one refused).
    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        json_schema_extra={
            "if": {"required": ["decimal_separator"], "properties": {"decimal_separator": {"const": ","}}},
            "then": {"required": ["delimiter"], "properties": {"delimiter": {"not": {"const": ","}}}},
        },
    )

    delimiter: Literal[",", ";", "\t", "|"] = Field(default=",", description="Between fields: `,` `;` a tab or `|`.")
    line_ending: Literal["crlf", "lf"] = Field(default="crlf", description="`crlf` (RFC 4180, Excel) or `lf`.")
    decimal_separator: Literal[".", ","] = Field(
        default=".",
        description="In decimal and float numbers: `,` for a German, French, ... Excel (with a `;` delimiter).",
    )
    encoding: CsvEncoding = Field(
        default=CsvEncoding.UTF_8,
        description=(
            "utf-8, gb18030 (Chinese Excel), shift_jis (Japanese Excel: Windows-31J) or windows-1252 (Western Excel)."
        ),
    )
    unencodable: Literal["fail", "replace"] = Field(
        default="fail",
        description=(
            "A value the encoding cannot hold: `fail` the export, naming the column and the row,"
            " or `replace` each such character with `?`."
        ),
    )

    @model_validator(mode="after")
    def _decimal_comma_needs_another_delimiter(self) -> CsvDialect:
        if self.decimal_separator == "," and self.delimiter == ",":
            raise ValueError('a decimal_separator "," needs another delimiter (";" is what Excel expects)')
        return self

    @property
    def is_default(self) -> bool:
        """RFC 4180 in UTF-8: what the fast writer and COPY write."""
        return self == DEFAULT_DIALECT

    @property
    def line_end(self) -> str:
        """The characters that end a line."""
        return LINE_ENDINGS[self.line_ending]

    @property
    def charset(self) -> str:
        """The charset of the file's Content-Type."""
        return self.encoding.value


DEFAULT_DIALECT = CsvDialect()


# A spreadsheet treats text starting with these as a formula (CSV/formula injection, OWASP).
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
