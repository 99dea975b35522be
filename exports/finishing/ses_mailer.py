"""Amazon SES (v2 API) as the mailer of scheduled runs: a short text, with the file attached when
the run's mail carries it.

A text alone is SES's ``Simple`` content. A mail with a file is ``Raw``: a MIME message the
standard library's :mod:`email` package builds (text part, then the file base64-encoded with its
name), which SES sends as it is and every mail client reads."""

from __future__ import annotations

from collections.abc import Sequence
from email.message import EmailMessage
from email.policy import SMTP
from typing import TYPE_CHECKING

from exports.core.aws.errors import translated
from exports.finishing.ports import Attachment

if TYPE_CHECKING:
    from types_boto3_sesv2 import SESV2Client


class SesMailer:
    """:class:`exports.finishing.ports.Mailer` on SES ``SendEmail``."""

    def __init__(self, client: SESV2Client) -> None:
        self._client = client

    def send(
        self, sender: str, to: Sequence[str], subject: str, text: str, attachment: Attachment | None = None
    ) -> None:
        """One message to every address of ``to`` (SES errors become our typed errors)."""
        with translated("send mail"):
            if attachment is None:
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
                return
            raw = mime_message(sender, to, subject, text, attachment)
            self._client.send_email(
                FromEmailAddress=sender,
                Destination={"ToAddresses": list(to)},
                Content={"Raw": {"Data": raw}},
            )


def mime_message(sender: str, to: Sequence[str], subject: str, text: str, attachment: Attachment) -> bytes:
    """The MIME message of a text and one file (multipart/mixed, CRLF line ends as SMTP wants)."""
    message = EmailMessage(policy=SMTP)
    message["From"] = sender
    message["To"] = ", ".join(to)
    message["Subject"] = subject
    message.set_content(text)
    # The media type without its parameters (``text/csv; charset=utf-8``): the part names its own.
    maintype, _, subtype = attachment.content_type.partition(";")[0].strip().partition("/")
    message.add_attachment(
        attachment.data, maintype=maintype, subtype=subtype or "octet-stream", filename=attachment.file_name
    )
    return message.as_bytes()
