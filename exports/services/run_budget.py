"""The time a worker invocation has left, as the handler passes it down to the export run."""

from __future__ import annotations

from exports.ports import RemainingMs


class RunBudget:
    """The invocation's remaining time (unbounded when the caller gave none: tests, benchmarks)."""

    def __init__(self, remaining_ms: RemainingMs | None) -> None:
        self._remaining_ms = remaining_ms

    def seconds_left(self) -> float | None:
        """Seconds until the invocation ends, or None when unbounded."""
        return None if self._remaining_ms is None else self._remaining_ms() / 1000

    def below(self, seconds: float) -> bool:
        """Whether less than ``seconds`` are left (never, when unbounded)."""
        left = self.seconds_left()
        return left is not None and left < seconds
