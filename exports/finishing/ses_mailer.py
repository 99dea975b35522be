"""Amazon SES (v2 API) as the mailer of scheduled runs: short text messages, never attachments."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from exports.core.aws.errors import translated

if TYPE_CHECKING:
    from types_boto3_sesv2 import SESV2Client


class SesMailer:
    """:class:`exports.finishing.ports.Mailer` on SES ``SendEmail``."""

    def __init__(self, client: SESV2Client) -> None:
        self._client = client

    def send(self, sender: str, to: Sequence[str], subject: str, text: str) -> None:
        """One message to every address of ``to`` (SES errors become our typed errors)."""
        with translated("send mail"):
            self._client.send_email(
                FromEmailAddress=sender,
                Destination={"ToAddresses": list(to)},
                Content={
                    "Simple": {
                        "Subject": {"Data": subject, "Charset": "UTF-8"},
                        "Body": {"Text": {"Data": text, "Charset": "UTF-8"}},
                    }
                },
            )
