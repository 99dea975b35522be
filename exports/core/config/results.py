"""Result files and their download links."""

from __future__ import annotations

from typing import Final


class Results:
    """Result files and links."""

    KEY_PREFIX: Final = "results"
    DOWNLOAD_URL_TTL_SEC: Final = 300
    RETENTION_HOURS_DEFAULT: Final = 24
    RETENTION_HOURS_MIN: Final = 1
    RETENTION_HOURS_MAX: Final = 72
    ABORT_INCOMPLETE_UPLOAD_DAYS: Final = 1
