"""The HTTP API's request and response bodies (OpenAPI is generated from these)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from exports.core.export_type import AnyExportType
from exports.core.status import TaskStatus
from exports.core.task import ExportFormat
from exports.core.task_view import TaskView


class ExportAccepted(BaseModel):
    """The ``202`` answer to a submission."""

    task_id: str
    status: TaskStatus
    created_at: datetime
    estimated_completion_sec: int = Field(
        description="Seconds until the export should be done: its wait in the queue and its own run (docs/capacity.md)."
    )
    status_url: str
    deduplicated: bool = Field(
        default=False, description="True when an identical export was already active: this is that task."
    )


class StreamTicketView(BaseModel):
    """``201`` to ``POST /v1/stream-tickets``: a single-use ticket to open the push channel with
    (docs/push.md) and where that is."""

    ticket: str = Field(description="Offer it as the subprotocol `ticket.<ticket>` beside `exports.v1`; usable once.")
    url: str = Field(description="The ws(s) URL of the push channel (nothing secret in it).")
    expires_in: int = Field(description="Seconds the ticket stays valid.")


class TaskList(BaseModel):
    """A page of the caller's tasks, newest first."""

    items: list[TaskView]
    next_token: str | None = None


class ExportTypeView(BaseModel):
    """One export type: its formats and the JSON Schema of its filters."""

    name: str
    description: str
    formats: list[ExportFormat]
    filters_schema: dict[str, Any]
    default_locale: str = Field(description="The locale of a task that asks for none (`locale` left out).")
    locales: list[str] = Field(
        description="The locales the type has words in (headers, title, PDF footer): its default first. A request"
        " may give any locale tag; one not listed falls back to a shorter tag, then to the default."
    )

    @classmethod
    def of(cls, export_type: AnyExportType) -> ExportTypeView:
        """The view of ``export_type``, with the JSON Schema of its filters and its locales."""
        return cls(
            name=export_type.name,
            description=export_type.description,
            formats=list(export_type.formats),
            filters_schema=export_type.filters_schema(),
            default_locale=export_type.default_locale,
            locales=export_type.locales(),
        )


class ExportTypeList(BaseModel):
    """Everything this deployment can export."""

    items: list[ExportTypeView]


class CallerView(BaseModel):
    """Who the token says is asking, and what the export types bind from it."""

    user_id: str = Field(description="The token's subject: whose tasks these are.")
    bound: dict[str, Any] = Field(
        default_factory=dict,
        description="What the export types the caller may use bind from the token (a tenant id, the"
        " groups), by the name they bind it as: every export of the caller is made with these values.",
    )


class FieldProblem(BaseModel):
    """One invalid field of a request."""

    field: str | None = None
    message: str


class RefusalEstimate(BaseModel):
    """What a capacity refusal (``WOULD_TIME_OUT``) was estimated on."""

    estimated_start_sec: int = Field(description="Seconds until the export would have started (its queue wait).")
    estimated_completion_sec: int = Field(description="Seconds until it would have been done.")
    timeout_sec: int = Field(description="The deadline it asked for, which that passes.")


class ErrorDetail(BaseModel):
    """What went wrong: a stable code, a message and, for bad input, the field; ``errors`` lists
    every invalid field when there are several (the first is ``field`` and ``message``); a
    capacity refusal carries its ``estimate``."""

    code: str
    message: str
    field: str | None = None
    errors: list[FieldProblem] | None = None
    estimate: RefusalEstimate | None = None


class ErrorBody(BaseModel):
    """Every error answer has this shape."""

    error: ErrorDetail
