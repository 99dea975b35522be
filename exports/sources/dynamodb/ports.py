"""The port a declared DynamoDB export type reads the user's tables through."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class ItemQuery:
    """One key-condition query of a declared DynamoDB export type (string keys), its values
    already rendered from the filters."""

    table: str
    index: str | None
    partition_name: str
    partition_value: str
    sort_name: str | None = None
    sort_from: str | None = None
    sort_to: str | None = None
    sort_begins_with: str | None = None
    # (attribute, allowed values): items whose attribute holds one of them.
    filters: Sequence[tuple[str, Sequence[str]]] = ()


class ItemsReader(Protocol):
    """Queries the user's DynamoDB tables."""

    def page(
        self, query: ItemQuery, start_key: dict[str, Any] | None, limit: int
    ) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        """One page of items (numbers as Decimals) and the key to continue from (None: done)."""
