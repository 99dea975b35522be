"""jsonl.gz: the JSON Lines file (:mod:`exports.running.formats.jsonl`) compressed with gzip."""

from __future__ import annotations

from exports.running.formats.jsonl import jsonl_format

SPEC = jsonl_format(gzip=True)
