"""What finishing a task talks to: the webhook sender (the lifecycle workflow's port is the core's)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from exports.core.public_address import Destination

if TYPE_CHECKING:
    pass


@dataclass(frozen=True)
class WebhookResponse:
    """What a callback receiver answered: a status, or the network error that stood in the way."""

    status: int | None
    error: str | None


class WebhookSender(Protocol):
    """Posts signed callbacks."""

    def post(self, destination: Destination, body: bytes, headers: dict[str, str]) -> WebhookResponse:
        """Send ``body`` once to the checked ``destination``."""


class Mailer(Protocol):
    """Sends a short text mail."""

    def send(self, sender: str, to: Sequence[str], subject: str, text: str) -> None:
        """Send it to every address of ``to``."""
