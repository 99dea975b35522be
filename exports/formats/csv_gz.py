"""csv.gz: the CSV file (:mod:`exports.formats.csv`) compressed with gzip."""

from __future__ import annotations

from exports.formats.csv import csv_format

SPEC = csv_format(gzip=True)
