"""Business metrics as Powertools writes them (EMF on AWS)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class PowertoolsMetrics:
    """:class:`exports.core.ports.BusinessMetrics` on a Powertools ``Metrics`` (EMF) instance."""

    def __init__(self, metrics: Any) -> None:
        self._metrics = metrics

    def add(
        self, name: str, value: float = 1, unit: str = "Count", dimensions: Mapping[str, str] | None = None
    ) -> None:
        """Add a data point to the metrics flushed at the end of the invocation; one with its
        own ``dimensions`` is written at once as a metric of its own (EMF gives every metric of
        a record the same dimensions)."""
        if not dimensions:
            self._metrics.add_metric(name=name, unit=unit, value=value)
            return
        from aws_lambda_powertools import single_metric
        from aws_lambda_powertools.metrics import MetricUnit

        metric = single_metric(
            name=name,
            unit=MetricUnit(unit),
            value=value,
            namespace=self._metrics.namespace,
            default_dimensions=dict(dimensions),
        )
        with metric:  # written out as the block ends
            pass
