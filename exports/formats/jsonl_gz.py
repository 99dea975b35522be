"""jsonl.gz: the JSON Lines file (:mod:`exports.formats.jsonl`) compressed with gzip."""

from __future__ import annotations

from exports.formats.jsonl import jsonl_format

SPEC = jsonl_format(gzip=True)
