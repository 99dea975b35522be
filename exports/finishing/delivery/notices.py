"""The webhooks of a delivery that ended: ``export.delivered`` and ``export.delivery_failed``,
signed as every callback is (Standard Webhooks), to each of the task's callback subscribers, with
the task as ``data`` (its ``deliveries`` say where the file went) and the delivery that ended as
``data.delivery``.

One attempt per subscriber: the workflow's retries are the file's (a delivered file is never
sent again, so neither is its notice). The task's ``deliveries``, the push channel's events and
the operators' lifecycle events carry the same news durably.
"""

from __future__ import annotations

import json
import logging

from exports.core.deliveries import Delivery, event_type
from exports.core.errors import InvalidRequest
from exports.core.policies import callback_delivered
from exports.core.public_address import check_destination
from exports.core.task import Task
from exports.finishing.dependencies import CallbackDependencies
from exports.finishing.webhooks.payload import event_body
from exports.finishing.webhooks.signing import signed_headers

logger = logging.getLogger(__name__)

USER_AGENT = "exports-callback/1"


class DeliveryWebhooks:
    """Sends a delivery's webhook through the callback function's sender, secret and SSRF guard."""

    def __init__(self, callback: CallbackDependencies) -> None:
        self._deps = callback

    def send(self, task: Task, delivery: Delivery) -> None:
        """One signed attempt to each subscriber of ``task``; failures are logged, never raised."""
        kind = event_type(delivery)
        if kind is None or not task.subscribers:
            return
        deps = self._deps
        now = deps.clock()
        body = event_body(kind, task, now)
        body["data"]["delivery"] = delivery.model_dump(mode="json")
        payload = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        timestamp = int(now.timestamp())
        for index, subscriber in enumerate(task.subscribers):
            # The same id for every attempt at the same event of the same subscriber.
            message_id = f"msg_{task.task_id}_{delivery.destination_id}_{delivery.status.value.lower()}_{index}"
            headers = {
                "Content-Type": "application/json",
                "User-Agent": USER_AGENT,
                **signed_headers(deps.webhook_secret(), message_id, timestamp, payload),
            }
            try:
                destination = check_destination(subscriber.url, deps.resolve, deps.settings.allow_local_callbacks)
            except InvalidRequest:
                continue
            response = deps.webhooks.post(destination, payload, headers)
            if not callback_delivered(response.status):
                logger.warning(
                    "delivery webhook not taken",
                    extra={"task_id": task.task_id, "subscriber": index, "status": response.status, "type": kind},
                )
