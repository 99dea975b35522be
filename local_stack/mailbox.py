"""What the embedded SES received: local mode's mailbox (``GET /local/mailbox``, ``exportctl
mailbox``), read from moto's SES backend in this process."""

from __future__ import annotations

import email
import email.policy
import threading
from datetime import UTC, datetime
from typing import Any

from moto.core import DEFAULT_ACCOUNT_ID
from moto.ses.models import ses_backends

from local_stack.embedded_aws import REGION


class Mailbox:
    """The messages sent through the embedded SES, newest first. moto keeps no send time: a
    message is stamped when the mailbox first sees it (the loop looks every tick)."""

    def __init__(self) -> None:
        self._seen: dict[str, datetime] = {}
        self._lock = threading.Lock()

    def items(self) -> list[dict[str, Any]]:
        """``{"id", "sent_at", "from", "to", "subject", "text", "attachments"}`` of every
        message, newest first (``attachments``: each attached file's name and size)."""
        messages = list(ses_backends[DEFAULT_ACCOUNT_ID][REGION].sent_messages)
        now = datetime.now(UTC)
        with self._lock:
            for message in messages:
                self._seen.setdefault(message.id, now)
            stamped = [(self._seen[message.id], index, message) for index, message in enumerate(messages)]
        stamped.sort(key=lambda entry: (entry[0], entry[1]), reverse=True)
        return [
            {"id": message.id, "sent_at": sent_at.isoformat(), **_content(message)} for sent_at, _, message in stamped
        ]


def _content(message: Any) -> dict[str, Any]:
    """A message's sender, recipients, subject, text and attachments: a text mail as SES's
    ``Simple`` content keeps them, a mail with a file (``Raw``) parsed from its MIME."""
    raw = getattr(message, "raw_data", None)
    if raw is None:
        to = list(message.destinations.get("ToAddresses", []))
        return {"from": message.source, "to": to, "subject": message.subject, "text": message.body, "attachments": []}
    parsed = email.message_from_bytes(raw.encode(), policy=email.policy.default)
    body = parsed.get_body(("plain",))
    files = [
        {"file_name": part.get_filename(), "bytes": len(part.get_payload(decode=True) or b"")}
        for part in parsed.iter_attachments()
    ]
    return {
        "from": message.source,
        "to": list(dict.fromkeys(message.destinations)),
        "subject": str(parsed["Subject"] or ""),
        "text": body.get_content().replace("\r\n", "\n") if body is not None else "",
        "attachments": files,
    }
