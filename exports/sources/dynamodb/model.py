"""How a DynamoDB source is declared (``kind = "dynamodb"``) and what its types read (their
``dynamodb`` table: which table or index, which partition, which sort-key range and filters)."""

from __future__ import annotations

from typing import Final, Literal

from pydantic import ConfigDict, Field, StrictStr

from exports.declared.model import EnvName, Identifier, SourceDecl, StrictModel, TypeDecl

# The key of a DynamoDB type that says what it reads.
TYPE_KEY: Final = "dynamodb"
# The name the key templates use for the day being read (see DynamoQueryDecl.each_day).
DAY_PLACEHOLDER: Final = "day"


class DynamoSource(SourceDecl):
    """DynamoDB tables in the deployment's account and region."""

    kind: Literal["dynamodb"]


class KeyValueDecl(StrictModel):
    """A DynamoDB key attribute and the value it must have, as a template over parameters."""

    name: str = Field(min_length=1)
    value: str


class EachDayDecl(StrictModel):
    """The partition key is one value per day of a date range: one query per day, in order."""

    model_config = ConfigDict(populate_by_name=True)

    start: Identifier = Field(alias="from")
    end: Identifier = Field(alias="to")


class SortKeyDecl(StrictModel):
    """A range on the sort key: ``between`` two templates, ``begins_with`` one, or ``from``/``to``
    (greater or equal, less or equal) alone."""

    model_config = ConfigDict(populate_by_name=True)

    name: str = Field(min_length=1)
    # Lax: a TOML array is a list (a strict tuple would refuse it); its items stay strings.
    between: tuple[StrictStr, StrictStr] | None = Field(default=None, strict=False)
    begins_with: str | None = None
    start: str | None = Field(default=None, alias="from")
    end: str | None = Field(default=None, alias="to")


class AttributeFilterDecl(StrictModel):
    """An optional equality filter: applied when ``parameter`` is given (a list means any of them)."""

    attribute: str = Field(min_length=1)
    parameter: Identifier


class DynamoQueryDecl(StrictModel):
    """Which items of which table (or index) a DynamoDB export type reads."""

    table: str | None = Field(default=None, min_length=3, max_length=255)
    table_env: EnvName | None = None
    index: str | None = None
    partition_key: KeyValueDecl
    each_day: EachDayDecl | None = None
    sort_key: SortKeyDecl | None = None
    filters: list[AttributeFilterDecl] = Field(default_factory=list)


def declared_read(declared: TypeDecl) -> DynamoQueryDecl:
    """The DynamoDB type's ``dynamodb`` table (the registry hands the kind only its types)."""
    read = getattr(declared, TYPE_KEY, None)
    if not isinstance(read, DynamoQueryDecl):
        raise TypeError("not a DynamoDB type")
    return read
