"""Splitting one export into partitions (docs/fan-out.md)."""

from __future__ import annotations

from typing import Final


class FanOut:
    """One export split into partitions written at once (docs/fan-out.md)."""

    # An export expected to have more rows than this is split, one partition per this many
    # rows (at ~0.5 M rows/s per partition process, about 20 s of writing each; see
    # docs/performance.md); per deployment with Env.PARTITION_ROWS.
    PARTITION_ROWS: Final = 10_000_000
    # Parallel partitions per export, per deployment (Env.MAX_PARTITIONS).
    MAX_PARTITIONS_DEFAULT: Final = 10
    MAX_PARTITIONS_LIMIT: Final = 100
