"""The worker's timing, upload and storage settings."""

from __future__ import annotations

from typing import Final


class Worker:
    """Worker timing and upload settings."""

    FUNCTION_TIMEOUT_SEC: Final = 900
    # A claimed task belongs to its worker until the lease runs out; progress writes renew it.
    LEASE_SEC: Final = 120
    PROGRESS_INTERVAL_SEC: Final = 2.0
    # S3 wants every part but the last to be at least 5 MiB.
    UPLOAD_PART_BYTES: Final = 8 * 1024 * 1024
    BATCH_SIZE: Final = 1
    # Backoff for retryable failures (a source unavailable, throttling): retry n + 1 waits
    # between half and all of min(MAX, BASE * 4**n) seconds ("equal jitter"): 7.5-15 s, 30-60 s,
    # 120-240 s. The default three retries span 2.6 to 5.3 minutes, so a database failover
    # (about a minute on RDS Multi-AZ) is outlasted, where 2 s * 4**n with full jitter gave up
    # after 25-35 s.
    RETRY_BASE_DELAY_SEC: Final = 15
    RETRY_MAX_DELAY_SEC: Final = 300


class XlsxLimits:
    """The XLSX engines' room on AWS (the limits an export stops at are the engines' own:
    exports/writers/xlsx_limits.py)."""

    # The worker's /tmp (Lambda ephemeral storage, 512..10240 MiB; what is above 512 MiB is billed
    # per GB-second of every worker run). At about 740 bytes of sheet XML per 13-column order row
    # (docs/performance.md) it holds about 2.8 million rows before xlsx_limits.TMP_RESERVE_BYTES is
    # reached, and saving that much at xlsx_limits.SAVE_BYTES_PER_SEC takes under a minute of the run.
    WORKER_EPHEMERAL_STORAGE_MIB: Final = 2048
