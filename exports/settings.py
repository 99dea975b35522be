"""Typed settings of the functions, parsed from the environment at the edge (never at import)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta

from pydantic import BaseModel, ConfigDict, Field

from exports.config import Env, Results, Worker


class Settings(BaseModel):
    """What the services need to know about their deployment."""

    model_config = ConfigDict(frozen=True)

    tasks_table: str
    queue_url: str
    results_bucket: str
    orders_table: str
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
        values: dict[str, str] = {
            "tasks_table": environ[Env.TASKS_TABLE],
            "queue_url": environ[Env.TASK_QUEUE_URL],
            "results_bucket": environ[Env.RESULTS_BUCKET],
            "orders_table": environ[Env.ORDERS_TABLE],
            "state_machine_arn": environ[Env.LIFECYCLE_STATE_MACHINE_ARN],
        }
        optional = {
            "download_url_ttl_sec": Env.DOWNLOAD_URL_TTL_SEC,
            "retention_hours": Env.RETENTION_HOURS,
            "webhook_secret": Env.WEBHOOK_SECRET,
            "webhook_secret_arn": Env.WEBHOOK_SECRET_ARN,
            "allow_local_callbacks": Env.ALLOW_LOCAL_CALLBACKS,
        }
        values.update({field: environ[var] for field, var in optional.items() if var in environ})
        return cls.model_validate(values)
