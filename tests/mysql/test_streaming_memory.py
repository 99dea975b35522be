"""A MySQL export streams: ten times the rows are read in the same memory (an unbuffered result,
one page at a time), and an export stopped early ends its query on the server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from local_stack.embedded_mariadb import EmbeddedMariaDB
from tests.mysql.conftest import run_as_root

WIDE_ROWS = 500_000


def create_wide(server: EmbeddedMariaDB, database: str, rows: int) -> None:
    """A table of ``rows`` generated rows (MariaDB's sequence engine)."""
    run_as_root(
        server,
        database,
        "CREATE TABLE wide (n INT PRIMARY KEY, digest CHAR(32), amount DECIMAL(14, 2), at DATETIME, "
        "filler VARCHAR(40))",
        "INSERT INTO wide SELECT seq, MD5(seq), seq * 1.25, '2025-03-01 12:00:00', REPEAT('x', 40) "
        f"FROM seq_1_to_{rows}",
    )


@pytest.fixture
def wide(mariadb: EmbeddedMariaDB, scratch_mysql: str) -> str:
    create_wide(mariadb, scratch_mysql, WIDE_ROWS)
    return mariadb.url(scratch_mysql)


def peak_rss_kib(url: str, rows: int) -> int:
    probe = subprocess.run(
        [sys.executable, "-m", "tests.mysql.rss_probe", url, str(rows)],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parents[2],
        timeout=600,
    )
    written, rss = probe.stdout.strip().splitlines()[-1].split()
    assert int(written) == rows
    return int(rss)


def test_ten_times_the_rows_stream_in_the_same_memory(wide: str) -> None:
    small = peak_rss_kib(wide, WIDE_ROWS // 10)
    large = peak_rss_kib(wide, WIDE_ROWS)

    assert large <= small * 1.25, (small, large)
