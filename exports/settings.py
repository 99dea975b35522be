"""Typed settings of the functions, parsed from the environment at the edge (never at import)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from exports.config import Admission, Env, FanOut, HotKey, Results, Worker, XlsxEngine


class Settings(BaseModel):
    """What the services need to know about their deployment."""

    model_config = ConfigDict(frozen=True)

    tasks_table: str
    queue_urls: dict[str, str]
    results_bucket: str
    orders_table: str
    customers_table: str
    state_machine_arn: str
    webhook_secret: str | None = None
    webhook_secret_arn: str | None = None
    allow_local_callbacks: bool = False
    download_url_ttl_sec: int = Field(default=Results.DOWNLOAD_URL_TTL_SEC, ge=60, le=3600)
    retention_hours: int = Field(
        default=Results.RETENTION_HOURS_DEFAULT, ge=Results.RETENTION_HOURS_MIN, le=Results.RETENTION_HOURS_MAX
    )
    lease_sec: int = Worker.LEASE_SEC
    progress_interval_sec: float = Worker.PROGRESS_INTERVAL_SEC
    upload_part_bytes: int = Worker.UPLOAD_PART_BYTES
    max_active_tasks_per_user: int = Field(default=Admission.MAX_ACTIVE_TASKS_PER_USER, ge=1)
    max_backlog: int = Field(default=Admission.MAX_BACKLOG, ge=1)
    hot_key_rate_per_minute: float = Field(default=HotKey.RATE_PER_MINUTE, gt=0)
    hot_key_burst: int = Field(default=HotKey.BURST, ge=1)
    xlsx_engine: Literal["stream", "openpyxl"] = XlsxEngine.DEFAULT
    # The declaration file of sources and export types; None: the one the repository ships.
    exports_config: str | None = None
    # Splitting large exports (docs/fan-out.md): rows per partition, the most
    # partitions per export, and the workflow that runs them (None: never split).
    partition_rows: int = Field(default=FanOut.PARTITION_ROWS, ge=1)
    max_partitions: int = Field(default=FanOut.MAX_PARTITIONS_DEFAULT, ge=1, le=FanOut.MAX_PARTITIONS_LIMIT)
    fan_out_state_machine_arn: str | None = None
    # Keys of declared sources replaced by the deployment (Env.SOURCE_OVERRIDES).
    source_overrides: dict[str, dict[str, object]] = Field(default_factory=dict)

    @property
    def retention(self) -> timedelta:
        """How long records and files are kept after a task ends."""
        return timedelta(hours=self.retention_hours)

    @property
    def lease(self) -> timedelta:
        """How long a claim lasts without a progress write."""
        return timedelta(seconds=self.lease_sec)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        """Settings from the variables the CDK app (or local mode) sets."""
        values: dict[str, object] = {
            "tasks_table": environ[Env.TASKS_TABLE],
            "queue_urls": json.loads(environ[Env.TASK_QUEUE_URLS]),
            "results_bucket": environ[Env.RESULTS_BUCKET],
            "orders_table": environ[Env.ORDERS_TABLE],
            "customers_table": environ[Env.CUSTOMERS_TABLE],
            "state_machine_arn": environ[Env.LIFECYCLE_STATE_MACHINE_ARN],
        }
        optional = {
            "download_url_ttl_sec": Env.DOWNLOAD_URL_TTL_SEC,
            "retention_hours": Env.RETENTION_HOURS,
            "webhook_secret": Env.WEBHOOK_SECRET,
            "webhook_secret_arn": Env.WEBHOOK_SECRET_ARN,
            "allow_local_callbacks": Env.ALLOW_LOCAL_CALLBACKS,
            "max_active_tasks_per_user": Env.MAX_ACTIVE_TASKS_PER_USER,
            "max_backlog": Env.MAX_BACKLOG,
            "hot_key_rate_per_minute": Env.HOT_KEY_RATE_PER_MINUTE,
            "hot_key_burst": Env.HOT_KEY_BURST,
            "xlsx_engine": Env.XLSX_ENGINE,
            "exports_config": Env.EXPORTS_CONFIG,
            "max_partitions": Env.MAX_PARTITIONS,
            "partition_rows": Env.PARTITION_ROWS,
            "fan_out_state_machine_arn": Env.FAN_OUT_STATE_MACHINE_ARN,
        }
        values.update({field: environ[var] for field, var in optional.items() if var in environ})
        if Env.SOURCE_OVERRIDES in environ:
            values["source_overrides"] = json.loads(environ[Env.SOURCE_OVERRIDES])
        return cls.model_validate(values)
