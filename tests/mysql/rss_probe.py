"""Run in a fresh interpreter: stream ``rows`` rows of a MySQL table into CSV (thrown away) and
print the peak resident set size in KiB. ``python -m tests.mysql.rss_probe URL ROWS``."""

from __future__ import annotations

import resource
import sys
import tempfile
from pathlib import Path

from exports.running.writers.csv_writer import CsvStream
from tests.mysql.conftest import declared_types
from tests.postgres.rss_probe import Discard

DECLARATION = """
[sources.db]
kind = "mysql"
url_env = "DB_URL"

[types.wide]
description = "a wide table"
source = "db"
mysql_query = "SELECT n, digest, amount, at, filler FROM wide WHERE n <= %(rows)s"
order_key = ["n"]
[types.wide.parameters.rows]
type = "integer"
"""


def main(url: str, rows: int) -> int:
    """Stream the rows; return how many were written."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "exports.toml"
        path.write_text(DECLARATION, encoding="utf-8")
        export = declared_types(path, {"DB_URL": url})["wide"]
    filters = export.parse_filters({"rows": rows})
    stream = CsvStream(export.columns(filters), Discard(), bom=False, header=True)
    written = 0
    for page in export.pages(filters):
        stream.write_rows(page.rows)
        written += len(page.rows)
    return written


if __name__ == "__main__":
    count = main(sys.argv[1], int(sys.argv[2]))
    print(count, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
