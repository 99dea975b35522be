"""Run in a fresh interpreter: stream ``rows`` rows of a declared query into CSV (thrown away)
and print the peak resident set size in KiB. ``python -m tests.postgres.rss_probe URI ROWS``."""

from __future__ import annotations

import io
import resource
import sys
import tempfile
from pathlib import Path
from typing import Any

from exports.running.writers.csv_writer import CsvStream
from tests.postgres.conftest import declared_types, write_declaration

DECLARATION = """
[sources.db]
kind = "postgresql"
url_env = "DB_URL"

[types.wide]
description = "a wide generated table"
source = "db"
query = \"\"\"
SELECT n, md5(n::text) AS digest, n * 1.25 AS amount, now() AS at, repeat('x', 40) AS filler
FROM generate_series(1, %(rows)s) AS n
\"\"\"
order_key = ["n"]
[types.wide.parameters.rows]
type = "integer"
"""


class Discard(io.RawIOBase):
    """A binary sink that keeps nothing."""

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        return len(data)


def main(uri: str, rows: int) -> int:
    """Stream the rows; return how many were written."""
    with tempfile.TemporaryDirectory() as folder:
        export = declared_types(write_declaration(Path(folder), DECLARATION), {"DB_URL": uri})["wide"]
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
