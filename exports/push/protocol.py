"""The push channel's wire protocol (docs/push.md): the credential in ``Sec-WebSocket-Protocol``,
the client's messages and the server's answers."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from exports.core.config.push import Push
from exports.core.errors import InvalidRequest


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Subscribe(_Message):
    """Follow one task (``task_id``) or every task of the caller (``all``)."""

    action: Literal["subscribe"]
    task_id: str | None = Field(default=None, min_length=1, max_length=64)
    all: bool = Field(default=False, strict=True)

    @model_validator(mode="after")
    def _one_target(self) -> Subscribe:
        if (self.task_id is None) == (not self.all):
            raise ValueError("give either task_id or all: true")
        return self


class Unsubscribe(Subscribe):
    """Stop following a task, or every task."""

    action: Literal["unsubscribe"]  # type: ignore[assignment]


class Ping(_Message):
    """Keep the connection alive (API Gateway closes one idle for 10 minutes)."""

    action: Literal["ping"]


ClientMessage = Annotated[Subscribe | Unsubscribe | Ping, Field(discriminator="action")]
_MESSAGE: TypeAdapter[Subscribe | Unsubscribe | Ping] = TypeAdapter(ClientMessage)


def parse_message(body: str | None) -> Subscribe | Unsubscribe | Ping:
    """The client's message; :class:`InvalidRequest` naming the field when it is not one."""
    try:
        return _MESSAGE.validate_python(json.loads(body or ""))
    except json.JSONDecodeError:
        raise InvalidRequest("a message is a JSON object", field="body") from None
    except ValidationError as error:
        problem = error.errors()[0]
        where = ".".join(str(part) for part in problem["loc"][1:] or problem["loc"]) or None
        raise InvalidRequest(problem["msg"], field=where) from None


def offered(header: str | None) -> list[str]:
    """The subprotocols of a ``Sec-WebSocket-Protocol`` header, in order."""
    return [part.strip() for part in (header or "").split(",") if part.strip()]


def credential(header: str | None) -> tuple[str, str] | None:
    """The credential the client offers beside ``exports.v1``: ``("ticket", <ticket>)`` or
    ``("bearer", <jwt>)``; None when there is none or ``exports.v1`` is not offered."""
    protocols = offered(header)
    if Push.SUBPROTOCOL not in protocols:
        return None
    for protocol in protocols:
        for kind, prefix in (("ticket", Push.TICKET_PREFIX), ("bearer", Push.BEARER_PREFIX)):
            if protocol.startswith(prefix) and len(protocol) > len(prefix):
                return kind, protocol[len(prefix) :]
    return None


def subscribed(task_id: str | None, all_tasks: bool) -> dict[str, Any]:
    """The acknowledgement of a subscribe."""
    return {"type": "subscribed", "task_id": task_id, "all": all_tasks}


def unsubscribed(task_id: str | None, all_tasks: bool) -> dict[str, Any]:
    """The acknowledgement of an unsubscribe."""
    return {"type": "unsubscribed", "task_id": task_id, "all": all_tasks}


def pong() -> dict[str, Any]:
    """The answer to a ping."""
    return {"type": "pong"}


def error(code: str, message: str, task_id: str | None = None, field: str | None = None) -> dict[str, Any]:
    """An error message (``TASK_NOT_FOUND`` for a task one may not see, ``VALIDATION_ERROR``)."""
    body: dict[str, Any] = {"type": "error", "error": {"code": code, "message": message}}
    if field is not None:
        body["error"]["field"] = field
    if task_id is not None:
        body["task_id"] = task_id
    return body
