"""What bounds an XLSX export (it cannot continue in a new invocation).

The disk limit and the save time apply to the openpyxl engine only, which keeps each sheet in a
temporary file in /tmp until the workbook is saved; the stream engine writes no file. The worker's
/tmp itself is the CDK app's (``config.XlsxLimits.WORKER_EPHEMERAL_STORAGE_MIB``).
"""

from __future__ import annotations

from typing import Final

# Stop with XLSX_TOO_LARGE when /tmp has less than this left.
TMP_RESERVE_BYTES: Final = 64 * 1024 * 1024
# Saving zips the temporary sheets into the upload: budget for it at this rate (measured locally
# at well above it; see docs/performance.md).
SAVE_BYTES_PER_SEC: Final = 40 * 1024 * 1024
# Stop with XLSX_TOO_LARGE when less than this plus the estimated save time is left.
TIME_MARGIN_SEC: Final = 30
