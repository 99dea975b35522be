"""Posting callbacks over HTTP to the address the SSRF guard checked."""

from __future__ import annotations

import urllib3
from urllib3.exceptions import HTTPError

from exports.core.config.callbacks import Callback
from exports.core.public_address import Destination
from exports.finishing.ports import WebhookResponse


class PinnedWebhookSender:
    """:class:`exports.finishing.ports.WebhookSender` with urllib3: connects to ``destination.address``,
    verifies TLS against the host name, never follows redirects, gives up after the timeout."""

    def __init__(self, timeout_sec: float = Callback.REQUEST_TIMEOUT_SEC) -> None:
        self._timeout = urllib3.Timeout(total=timeout_sec)

    def post(self, destination: Destination, body: bytes, headers: dict[str, str]) -> WebhookResponse:
        """Send once; network errors and timeouts come back as ``status=None`` with the error."""
        if destination.scheme == "https":
            pool: urllib3.HTTPConnectionPool = urllib3.HTTPSConnectionPool(
                destination.address,
                port=destination.port,
                timeout=self._timeout,
                retries=False,
                server_hostname=destination.host,
                assert_hostname=destination.host,
            )
        else:
            pool = urllib3.HTTPConnectionPool(
                destination.address, port=destination.port, timeout=self._timeout, retries=False
            )
        host_header = destination.host if destination.port in (80, 443) else f"{destination.host}:{destination.port}"
        try:
            response = pool.urlopen(
                "POST",
                destination.target,
                body=body,
                headers={**headers, "Host": host_header},
                redirect=False,
                retries=False,
            )
            return WebhookResponse(status=response.status, error=None)
        except HTTPError as error:
            return WebhookResponse(status=None, error=type(error).__name__)
        finally:
            pool.close()
