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
    # The worker's memory where the deployment does not say (infra.sizing.Sizing.WORKER_MEMORY_MB).
    MEMORY_MB_DEFAULT: Final = 1024


class XlsxLimits:
    """The XLSX engines' room on AWS (the limits an export stops at are the engines' own:
    exports/running/writers/xlsx_limits.py)."""

    # The worker's /tmp (Lambda ephemeral storage, 512..10240 MiB; what is above 512 MiB is billed
    # per GB-second of every worker run). At about 740 bytes of sheet XML per 13-column order row
    # (docs/performance.md) it holds about 2.8 million rows before xlsx_limits.TMP_RESERVE_BYTES is
    # reached, and saving that much at xlsx_limits.SAVE_BYTES_PER_SEC takes under a minute of the run.
    WORKER_EPHEMERAL_STORAGE_MIB: Final = 2048
