"""The ``window`` of a declared type: the date range a schedule's relative window fills, and what
a type's stored schedules may keep of a token (the claims its bindings and rule read)."""

from __future__ import annotations

from pathlib import Path

import pytest

from exports.declared.model import TypeDecl
from exports.declared.type_facts import window_range
from exports.export_types.loader import DeclarationError, load_declarations

TYPE = """
[sources.tables]
kind = "dynamodb"

[types.invoices]
description = "Invoices."
source = "tables"
date_ranges = [{{ from = "issued_from", to = "issued_to", max_days = 31 }},
               {{ from = "paid_from", to = "paid_to", max_days = 31 }}]
{window}

[types.invoices.dynamodb]
table = "invoices"
partition_key = {{ name = "pk", value = "invoice" }}

[types.invoices.parameters.issued_from]
type = "date"
[types.invoices.parameters.issued_to]
type = "date"
[types.invoices.parameters.paid_from]
type = "datetime"
[types.invoices.parameters.paid_to]
type = "datetime"

[[types.invoices.columns]]
name = "pk"
"""


def declared(tmp_path: Path, window: str) -> TypeDecl:
    path = tmp_path / "exports.toml"
    path.write_text(TYPE.format(window=window), encoding="utf-8")
    return load_declarations(path).file.types["invoices"]


def test_window_names_the_range_of_its_from_parameter(tmp_path: Path) -> None:
    assert window_range(declared(tmp_path, 'window = "paid_from"')) == ("paid_from", "paid_to", "datetime")
    assert window_range(declared(tmp_path, 'window = "issued_from"')) == ("issued_from", "issued_to", "date")


def test_several_ranges_and_no_window_leave_the_type_without_one(tmp_path: Path) -> None:
    assert window_range(declared(tmp_path, "")) is None


@pytest.mark.parametrize("window", ['window = "issued_to"', 'window = "nothing"'])
def test_a_window_that_is_no_ranges_from_is_a_declaration_error(tmp_path: Path, window: str) -> None:
    with pytest.raises(DeclarationError, match="window"):
        declared(tmp_path, window)
