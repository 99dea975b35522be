"""Lifecycle events on EventBridge (docs/events.md): the source and detail types operators route
by, shared by the code that publishes them, the stack that grants it and the docs."""

from __future__ import annotations

from typing import Final


class Events:
    """The events' envelope: every event has this ``source`` and one of these ``detail-type``s;
    its ``detail`` carries ``version`` (:attr:`DETAIL_VERSION`, raised on an incompatible change)."""

    SOURCE: Final = "exports"
    DETAIL_VERSION: Final = 1
    EXPORT_CREATED: Final = "Export Created"
    EXPORT_COMPLETED: Final = "Export Completed"
    EXPORT_FAILED: Final = "Export Failed"
    # A completion callback reached its URL (one event per subscriber delivered).
    EXPORT_DELIVERED: Final = "Export Delivered"
    # A task's file reached one of its destinations, or did not (docs/destinations.md).
    FILE_DELIVERED: Final = "Export File Delivered"
    FILE_DELIVERY_FAILED: Final = "Export File Delivery Failed"
    SCHEDULE_PAUSED: Final = "Schedule Paused"

    @classmethod
    def detail_types(cls) -> tuple[str, ...]:
        """Every detail type, in the order a task meets them."""
        return (
            cls.EXPORT_CREATED,
            cls.EXPORT_COMPLETED,
            cls.EXPORT_FAILED,
            cls.EXPORT_DELIVERED,
            cls.FILE_DELIVERED,
            cls.FILE_DELIVERY_FAILED,
            cls.SCHEDULE_PAUSED,
        )
