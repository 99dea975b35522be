"""What finishing a task talks to: the webhook sender (the lifecycle workflow's port is the core's)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from exports.core.public_address import Destination


@dataclass(frozen=True)
class WebhookResponse:
    """What a callback receiver answered: a status, or the network error that stood in the way."""

    status: int | None
    error: str | None


class WebhookSender(Protocol):
    """Posts signed callbacks."""

    def post(self, destination: Destination, body: bytes, headers: dict[str, str]) -> WebhookResponse:
        """Send ``body`` once to the checked ``destination``."""


@dataclass(frozen=True)
class Attachment:
    """A file a mail carries: its name as the recipient saves it, its media type and its bytes."""

    file_name: str
    content_type: str
    data: bytes


class Mailer(Protocol):
    """Sends a short text mail, with one file attached or none."""

    def send(
        self, sender: str, to: Sequence[str], subject: str, text: str, attachment: Attachment | None = None
    ) -> None:
        """Send it to every address of ``to``."""
