"""What a submitter asks for, as the services take it (the HTTP body is mapped onto this)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from exports.core.config.limits import Limits
from exports.core.csv_dialect import DEFAULT_DIALECT, CsvDialect
from exports.core.deliveries import DeliveryPlan
from exports.core.task import ExportFormat, Task
from exports.core.zones import UTC_ZONE


@dataclass(frozen=True)
class ExportSpec:
    """An export to run: its type, format, the type's filters (not yet parsed), its priority and
    timeout, the URL to call back when it ends, the CSV options, the time zone (a canonical
    name, exports.core.zones) and the locale of the labels."""

    export_type: str
    format: ExportFormat = ExportFormat.CSV
    filters: dict[str, Any] = field(default_factory=dict)
    priority: int = Limits.PRIORITY_DEFAULT
    timeout_sec: int = Limits.TIMEOUT_SEC_DEFAULT
    callback_url: str | None = None
    csv_bom: bool = False
    csv_formula_guard: bool = True
    timezone: str = UTC_ZONE
    csv_dialect: CsvDialect = DEFAULT_DIALECT
    # None: the type's default locale.
    locale: str | None = None
    # Where the file goes after COMPLETED (docs/destinations.md); None: nowhere but our bucket.
    delivery: DeliveryPlan | None = None

    @classmethod
    def of_task(cls, task: Task) -> ExportSpec:
        """The export ``task`` was asked for, to run again (its callback URL as stored, which the
        first submit normalised)."""
        stored = {spec_field.name for spec_field in fields(cls)} - {"callback_url"}
        return cls(**{name: getattr(task, name) for name in stored}, callback_url=task.callback_url)
