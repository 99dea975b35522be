"""Amazon EventBridge as the lifecycle events' bus (docs/events.md): ``PutEvents`` on the stack's
bus, ``source`` :attr:`exports.core.config.events.Events.SOURCE`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from exports.core.aws.errors import translated
from exports.core.config.events import Events
from exports.core.errors import RetryableError
from exports.core.events import LifecycleEvent

# PutEvents takes at most 10 entries per call.
_BATCH: Final = 10


class EventBridgeEvents:
    """:class:`exports.core.ports.LifecycleEvents` on the bus ``bus_name``."""

    # The client is untyped: no stubs of the events service are installed.
    def __init__(self, client: Any, bus_name: str) -> None:
        self._client = client
        self._bus_name = bus_name

    def publish(self, events: Sequence[LifecycleEvent]) -> None:
        """Put ``events`` on the bus; entries EventBridge refused (throttled, its own faults)
        are a :class:`RetryableError` naming their error codes."""
        for start in range(0, len(events), _BATCH):
            entries = [
                {
                    "Source": Events.SOURCE,
                    "DetailType": event.detail_type,
                    "Detail": json.dumps(event.detail, separators=(",", ":")),
                    "EventBusName": self._bus_name,
                }
                for event in events[start : start + _BATCH]
            ]
            with translated("put events"):
                answer = self._client.put_events(Entries=entries)
            if answer.get("FailedEntryCount"):
                codes = sorted({str(entry.get("ErrorCode")) for entry in answer["Entries"] if entry.get("ErrorCode")})
                raise RetryableError(f"put events: {answer['FailedEntryCount']} refused ({', '.join(codes)})")
