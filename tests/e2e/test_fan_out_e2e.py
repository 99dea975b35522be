"""The "Done when" of a split export at a small size, as a user meets it: `make run`'s stack in
its own process with EXPORTS_PARTITION_ROWS lowered splits the demo `generated_orders` in 3
partitions (moto executing the fan-out workflow), and the files equal a stack's that does not
split: the same CSV bytes, the same workbook cells."""

import io
from collections.abc import Iterator
from typing import Any

import openpyxl
import pytest

from tests.e2e.test_export_types_e2e import export
from tests.stack_process import Stack, running_stack

pytestmark = pytest.mark.e2e

ROWS = 2500


@pytest.fixture(scope="module")
def split() -> Iterator[Stack]:
    with running_stack(demo_orders=100, postgres=True, environment={"EXPORTS_PARTITION_ROWS": "1000"}) as running:
        yield running


@pytest.fixture(scope="module")
def whole(postgres_stack: Stack) -> Stack:
    """A stack that does not split."""
    return postgres_stack


def _export(stack: Stack, fmt: str, user: str = "alice") -> tuple[dict[str, Any], bytes]:
    return export(stack, {"export_type": "generated_orders", "format": fmt, "filters": {"rows": ROWS}}, user)


def test_a_split_export_through_the_local_stack_is_the_unsplit_file(split: Stack, whole: Stack) -> None:
    assert "splits past 1,000 rows" in split.output()

    split_view, split_csv = _export(split, "csv")
    whole_view, whole_csv = _export(whole, "csv")

    assert split_csv == whole_csv and split_view["sha256"] == whole_view["sha256"]
    assert split_view["rows_written"] == ROWS
    # Every partition runs with the tenant bound at submit: bob's split file is globex's only.
    bob_rows = _export(split, "csv", "bob")[1].decode().splitlines()[1:]
    assert len(bob_rows) == ROWS and all(row.split(",")[1].startswith("globex-GEN-") for row in bob_rows)

    def cells(body: bytes) -> list[list[tuple[Any, ...]]]:
        book = openpyxl.load_workbook(io.BytesIO(body), read_only=True)
        return [list(sheet.iter_rows(values_only=True)) for sheet in book.worksheets]

    assert cells(_export(split, "xlsx")[1]) == cells(_export(whole, "xlsx")[1])
