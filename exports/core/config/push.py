"""The push channel (docs/push.md)."""

from __future__ import annotations

from typing import Final


class Push:
    """The push channel (docs/push.md): WebSocket protocol, tickets, connections, stream reading."""

    SUBPROTOCOL: Final = "exports.v1"
    # Sec-WebSocket-Protocol entries that carry a credential (a ticket, or a JWT).
    TICKET_PREFIX: Final = "ticket."
    BEARER_PREFIX: Final = "bearer."
    TICKET_TTL_SEC: Final = 60
    # API Gateway closes a WebSocket connection after 2 hours; its items expire by then.
    CONNECTION_TTL_SEC: Final = 2 * 3600
    # The connections table: partition and sort key, TTL attribute.
    PARTITION_KEY: Final = "pk"
    SORT_KEY: Final = "sk"
    TTL_ATTRIBUTE: Final = "expires_at_epoch"
    # The push function's stream mapping: records per batch, how long a batch may gather (a
    # task's progress records of one batch are sent as one event: about one a second at most).
    # Its retries: exports.core.config.retry.PUSH_BATCH_RETRY.
    BATCH_SIZE: Final = 100
    BATCHING_WINDOW_SEC: Final = 1
    FUNCTION_TIMEOUT_SEC: Final = 30
    # The WebSocket API stage's throttling (steady requests/s and burst, per account-region share).
    THROTTLE_RATE: Final = 100
    THROTTLE_BURST: Final = 200
