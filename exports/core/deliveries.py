"""A task's deliveries: where its file goes after COMPLETED (one per destination named at
submit), each delivery's state as the task shows it, and the path template that names the file
at the destination.

Pure: no client, no environment. The delivery service (:mod:`exports.finishing.delivery.deliver`)
moves a delivery through these states and stores them on the task; the export itself stays
COMPLETED whatever happens here.
"""

from __future__ import annotations

import posixpath
import re
import string
from datetime import datetime
from enum import StrEnum
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from exports.core.config.destinations import Destinations

# A destination's id: "dst_" and a ULID (exports.finishing.destinations.model).
DESTINATION_ID_PATTERN: Final = r"^dst_[0-9A-HJKMNP-TV-Z]{26}$"
# How many destinations one export or schedule may name.
MAX_DESTINATIONS: Final = Destinations.MAX_PER_EXPORT
PATH_TEMPLATE_MAX_LENGTH: Final = 512
# A task that names destinations and no template: its file keeps its own name.
DEFAULT_PATH_TEMPLATE: Final = "{file}"
# The placeholders a template may use: the export type, the day the run is for (its firing day for
# a scheduled run, else the day it completed, in UTC), the task id and the file's own name.
PLACEHOLDERS: Final = frozenset({"type", "date", "task_id", "file"})
# The webhook and push event types of a delivery that ended (the task as data, with its deliveries).
DELIVERED_EVENT: Final = "export.delivered"
DELIVERY_FAILED_EVENT: Final = "export.delivery_failed"
# The sidecar beside each delivered file: its sha256 in the format `sha256sum -c` reads.
SHA256_SUFFIX: Final = ".sha256"
_SAFE_SEGMENT = re.compile(r"^[A-Za-z0-9._=+@,-]+$")


class DeliveryPlan(BaseModel):
    """Where a task's file goes: the destinations named at submit (checked then to be the
    tenant's and usable by the submitter), the tenant they belong to, and the path template."""

    model_config = ConfigDict(frozen=True)

    tenant: str
    destination_ids: tuple[str, ...] = Field(min_length=1, max_length=MAX_DESTINATIONS)
    path_template: str = DEFAULT_PATH_TEMPLATE


class DeliveryStatus(StrEnum):
    """PENDING until the file is at the destination (DELIVERED) or the retries are spent or the
    cause is for the customer to fix (FAILED); SKIPPED: the export ended without a file."""

    PENDING = "PENDING"
    DELIVERED = "DELIVERED"
    FAILED = "FAILED"
    SKIPPED = "SKIPPED"


class DeliveryError(BaseModel):
    """What stopped a delivery, in the customer's words (never our internals): the code and the
    sentence of :mod:`exports.finishing.destinations.problems`."""

    model_config = ConfigDict(frozen=True)

    code: str
    message: str
    step: str | None = None


class Delivery(BaseModel):
    """One destination's delivery of the task's file."""

    model_config = ConfigDict(frozen=True)

    destination_id: str
    status: DeliveryStatus = DeliveryStatus.PENDING
    attempts: int = Field(default=0, ge=0)
    # The file's path at the destination (an S3 key under the bucket, an SFTP path), once known.
    remote_path: str | None = None
    delivered_at: datetime | None = None
    # The last attempt's error (kept when a later attempt succeeds: cleared then).
    error: DeliveryError | None = None
    # The delivered file's own sha256 and size, as it is at the destination (the one its sidecar or
    # object metadata names): the encrypted file's when the destination encrypts, so the customer
    # checks what they received. Set once DELIVERED; None before and after a failed attempt.
    sha256: str | None = None
    size_bytes: int | None = Field(default=None, ge=0)
    # How many times its owner asked for a FAILED delivery to be tried again (POST
    # /v1/exports/{id}/deliveries/{destination}/retry): each request starts a round of attempts
    # of its own, which only the execution started for that round makes (see :func:`owned_by`).
    requested_retries: int = Field(default=0, ge=0)

    @property
    def ended(self) -> bool:
        """Whether no attempt will follow."""
        return self.status is not DeliveryStatus.PENDING


class TemplateError(ValueError):
    """A path template that names an unknown placeholder or leaves its directory."""


def check_template(template: str) -> str:
    """``template`` if it may name files: known placeholders only, relative, no ``..``."""
    if not template or len(template) > PATH_TEMPLATE_MAX_LENGTH:
        raise TemplateError(f"a path template has 1 to {PATH_TEMPLATE_MAX_LENGTH} characters")
    try:
        fields = [(name, spec, conversion) for _, name, spec, conversion in string.Formatter().parse(template)]
    except ValueError:
        raise TemplateError("unbalanced braces: placeholders are written {type}, {date}, {task_id}, {file}") from None
    for name, spec, conversion in fields:
        if name is not None and (name not in PLACEHOLDERS or spec or conversion):
            known = ", ".join("{" + known + "}" for known in sorted(PLACEHOLDERS))
            raise TemplateError(f"unknown placeholder {{{name}}}: use {known}")
    if template.startswith("/") or any(part in ("", ".", "..") for part in template.split("/")):
        raise TemplateError("a path template is relative to the destination's path: no leading /, no . or ..")
    return template


def render(template: str, export_type: str, day: str, task_id: str, file_name: str) -> str:
    """The file's path under the destination, for ``template`` (checked by :func:`check_template`).
    Each value is one safe path segment, so no value can add a directory or leave one."""
    values = {"type": export_type, "date": day, "task_id": task_id, "file": file_name}
    for name, value in values.items():
        if not _SAFE_SEGMENT.match(value) or value in (".", ".."):
            raise TemplateError(f"{name} {value!r} cannot be part of a path")
    return posixpath.normpath(template.format(**values))


def sha256_line(sha256: str, remote_path: str) -> bytes:
    """The sidecar's content: ``<hex>  <file name>``, as ``sha256sum -c`` checks it."""
    return f"{sha256}  {posixpath.basename(remote_path)}\n".encode()


def initial(destination_ids: tuple[str, ...]) -> tuple[Delivery, ...]:
    """A new task's deliveries, one PENDING per destination."""
    return tuple(Delivery(destination_id=destination_id) for destination_id in destination_ids)


def delivered(delivery: Delivery, remote_path: str, now: datetime, sha256: str, size_bytes: int) -> Delivery:
    """``delivery`` after an attempt that put a file of ``sha256`` and ``size_bytes`` at ``remote_path``."""
    return delivery.model_copy(
        update={
            "status": DeliveryStatus.DELIVERED,
            "attempts": delivery.attempts + 1,
            "remote_path": remote_path,
            "delivered_at": now,
            "error": None,
            "sha256": sha256,
            "size_bytes": size_bytes,
        }
    )


def attempt_failed(delivery: Delivery, error: DeliveryError, final: bool, remote_path: str | None) -> Delivery:
    """``delivery`` after an attempt that failed with ``error``; FAILED if ``final``."""
    return delivery.model_copy(
        update={
            "status": DeliveryStatus.FAILED if final else DeliveryStatus.PENDING,
            "attempts": delivery.attempts + 1,
            "remote_path": remote_path or delivery.remote_path,
            "error": error,
            "sha256": None,
            "size_bytes": None,
        }
    )


# What a delivery given up without an error of its own shows (the workflow's caught error may name
# our resources: it goes to the log only).
GIVEN_UP: Final = DeliveryError(
    code="DELIVERY_FAILED", message="the file was not delivered before its retries ran out; we will not try again"
)


def given_up(delivery: Delivery) -> Delivery:
    """A PENDING ``delivery`` whose retries are spent: FAILED with its last error."""
    if delivery.ended:
        return delivery
    return delivery.model_copy(update={"status": DeliveryStatus.FAILED, "error": delivery.error or GIVEN_UP})


class RetryRefusal(StrEnum):
    """Why a delivery is not tried again on request (each its own answer, docs/destinations.md)."""

    # Its attempts have not ended: they go on (a retry would race them).
    IN_PROGRESS = "DELIVERY_IN_PROGRESS"
    # The file is at the destination already: a retry would only send it again.
    ALREADY_DELIVERED = "DELIVERY_ALREADY_DELIVERED"
    # The export ended without a file (SKIPPED): there is nothing to deliver.
    NO_FILE = "DELIVERY_NOT_RETRYABLE"


def retry_refusal(delivery: Delivery) -> RetryRefusal | None:
    """Why ``delivery`` may not be tried again on request; None: it may (it FAILED)."""
    if delivery.status is DeliveryStatus.FAILED:
        return None
    return {
        DeliveryStatus.PENDING: RetryRefusal.IN_PROGRESS,
        DeliveryStatus.DELIVERED: RetryRefusal.ALREADY_DELIVERED,
        DeliveryStatus.SKIPPED: RetryRefusal.NO_FILE,
    }[delivery.status]


def retried(delivery: Delivery) -> Delivery:
    """A FAILED ``delivery`` tried again on request: PENDING in a round of its own. Its attempts
    go on counting and its last error stays shown until an attempt replaces it."""
    if retry_refusal(delivery) is not None:
        raise ValueError(f"a {delivery.status.value} delivery is not tried again")
    return delivery.model_copy(
        update={"status": DeliveryStatus.PENDING, "requested_retries": delivery.requested_retries + 1}
    )


def owned_by(delivery: Delivery, requested_retries: int, destination_id: str | None = None) -> bool:
    """Whether the round of attempts ``requested_retries`` (0: the lifecycle workflow's, n: the
    n-th retry on request's), limited to ``destination_id`` when given, attempts or gives up
    ``delivery`` now: a PENDING delivery of that round. So a late step of one round never
    touches a delivery another round has taken over."""
    return (
        not delivery.ended
        and delivery.requested_retries == requested_retries
        and (destination_id is None or delivery.destination_id == destination_id)
    )


def skipped(delivery: Delivery) -> Delivery:
    """A PENDING ``delivery`` of an export that ended without a file."""
    return delivery if delivery.ended else delivery.model_copy(update={"status": DeliveryStatus.SKIPPED})


def newly_ended(before: tuple[Delivery, ...], after: tuple[Delivery, ...]) -> list[Delivery]:
    """The deliveries of ``after`` that ended since ``before`` (the same destinations, in order)."""
    if len(before) != len(after):
        return [delivery for delivery in after if delivery.ended]
    return [now for then, now in zip(before, after, strict=True) if now.ended and not then.ended]


def event_type(delivery: Delivery) -> str | None:
    """The event of a delivery that ended: delivered, failed, or none (SKIPPED: no file)."""
    if delivery.status is DeliveryStatus.DELIVERED:
        return DELIVERED_EVENT
    if delivery.status is DeliveryStatus.FAILED:
        return DELIVERY_FAILED_EVENT
    return None


def change_event_type(before: tuple[Delivery, ...], after: tuple[Delivery, ...]) -> str | None:
    """The push event of a write of a task's deliveries: a failure if one failed, else a delivery
    if one was delivered, else none."""
    types = {event_type(delivery) for delivery in newly_ended(before, after)}
    for kind in (DELIVERY_FAILED_EVENT, DELIVERED_EVENT):
        if kind in types:
            return kind
    return None
