"""The lifecycle events' bus (docs/events.md): an EventBridge bus of the stack that the API,
worker, callback and schedule functions put events on (``source``
:attr:`exports.core.config.events.Events.SOURCE`); operators route them with rules of their own."""

from __future__ import annotations

from aws_cdk import aws_events as events
from constructs import Construct

from exports.core.config.names import SERVICE_NAME
from infra.function_factory import ServiceFunction
from infra.settings import StageSettings


class LifecycleEventBus(Construct):
    """The bus (named by CloudFormation: two stacks never share one)."""

    def __init__(self, scope: Construct, construct_id: str, *, settings: StageSettings) -> None:
        super().__init__(scope, construct_id)
        self.bus = events.EventBus(self, "Bus", description=f"{SERVICE_NAME} lifecycle events ({settings.stage})")

    def allow_publishing(self, function: ServiceFunction) -> None:
        """Let ``function`` put events on this bus, and on no other."""
        function.allow(["events:PutEvents"], [self.bus.event_bus_arn])
