"""csv.gz: the CSV file (:mod:`exports.running.formats.csv`) compressed with gzip."""

from __future__ import annotations

from exports.running.formats.csv import csv_format

SPEC = csv_format(gzip=True)
