"""The port a declared HTTP source reads its pages through."""

from __future__ import annotations

from typing import Any, Protocol

from exports.core.export_type import RunControl


class JsonPages(Protocol):
    """Asks a declared HTTP source for its pages, on its declared hosts only."""

    def get(self, url: str, control: RunControl) -> Any:
        """The JSON body of a GET of ``url`` (numbers with a fraction or exponent as Decimals);
        a transient failure, once the retries are spent, is a :class:`RetryableError`, any
        other an ``ExportFailed`` naming the source and the status."""
