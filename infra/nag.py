"""cdk-nag (3.x): the AwsSolutions checks and acknowledgements that always carry a reason."""

from __future__ import annotations

from aws_cdk import Acknowledgment, App, Validations
from cdk_nag import AwsSolutionsChecks
from constructs import IConstruct


def acknowledge(scope: IConstruct, rule_id: str, reason: str) -> None:
    """Accept the finding ``rule_id`` on ``scope`` and below, for the written ``reason``."""
    if not reason.strip():
        raise ValueError(f"acknowledging {rule_id} needs a reason")
    Validations.of(scope).acknowledge(Acknowledgment(id=rule_id, reason=reason))


def add_checks(app: App) -> None:
    """Run the AwsSolutions rules at synthesis: an unacknowledged finding stops ``cdk synth``."""
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
