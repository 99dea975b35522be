"""Publishing lifecycle events (docs/events.md) beside the work they report: an event that cannot
be sent is logged, never the cause of a failed submit, export or delivery."""

from __future__ import annotations

import logging

from exports.core.errors import ExportsError
from exports.core.events import LifecycleEvent
from exports.core.ports import LifecycleEvents

logger = logging.getLogger(__name__)


def publish(events: LifecycleEvents | None, *published: LifecycleEvent) -> None:
    """Send ``published`` to ``events`` (None: the deployment publishes none)."""
    if events is None or not published:
        return
    try:
        events.publish(published)
    except ExportsError:
        logger.warning(
            "lifecycle events not published",
            exc_info=True,
            extra={"detail_types": [event.detail_type for event in published]},
        )
