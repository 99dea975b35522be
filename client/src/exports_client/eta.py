"""The time an export has left, from the pace its progress moves at (the percentage is rows read
against the rows the worker expects). ``exportctl``'s ETA; the console's is the same rule in
clients/console/src/pace.ts, with the same cases in its tests.

The time left is the rows still to read at the pace seen, plus the file's finishing: after its
last row the worker uploads the last part and completes the multipart upload, which takes time
in proportion to the file while the percentage stands at 99 (0.75 s for a 3,000,000-row CSV of
276 MB in the recording below, ~2 s in the issue's run). Without it the ETA read short at the end.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

# Seconds of finishing per row of the export, from a recorded 3,000,000-row CSV of the demo
# orders on the local stack (tests/client/progress_3m_csv.json; docs/console.md, "The export console").
FINISH_SEC_PER_ROW: Final = 2.5e-7


@dataclass(frozen=True)
class _Seen:
    at: float
    progress: int


class Pace:
    """Seconds left for one task, from the states seen of it, paced from the first state with a
    row read: time a source spends before its first row (a sort, a count, a slow query) is time
    not started, not a slow pace (counted in, a 3,000,000-row CSV that sat at 0 % for 26 s showed
    minutes with 9 s left); nor is the last state seen at 0 % a start, since pushed states come
    only when something changed. The pace runs to the moment the percentage last changed, and
    the time since counts down: a percentage is written every few seconds, so a state polled
    again is older than it looks."""

    def __init__(self, finish_sec_per_row: float = FINISH_SEC_PER_ROW) -> None:
        self._finish_sec_per_row = finish_sec_per_row
        self._origin: _Seen | None = None
        self._changed: _Seen | None = None

    def seconds_left(self, running: bool, progress: int, rows_written: int, now: float) -> int | None:
        """Whole seconds left after seeing a task at ``now`` (seconds); None while there is no
        pace yet, and once the task is not running."""
        origin = self._origin
        if not running or progress >= 100 or (progress == 0 and rows_written == 0):
            # Not reading rows (yet, or any more: a retried task runs again from 0).
            self._origin = self._changed = None
            return None
        if origin is None or progress < origin.progress:
            self._origin = self._changed = _Seen(now, progress)
            return None
        if self._changed is None or progress != self._changed.progress:
            self._changed = _Seen(now, progress)
        changed = self._changed
        if changed.progress == origin.progress or changed.at <= origin.at:
            return None
        per_second = (changed.progress - origin.progress) / (changed.at - origin.at)
        reading = (100 - progress) / per_second
        finishing = self._finish_sec_per_row * rows_written * 100 / progress if progress > 0 else 0.0
        return max(0, math.floor(reading + finishing - (now - changed.at) + 0.5))  # as JavaScript rounds
