"""Secrets Manager: the key that signs the task callbacks (Standard Webhooks).

CloudFormation generates it: 32 characters from letters and digits only, which is also a valid
base64 string (24 bytes of key). The callback function reads it and puts the format's ``whsec_``
prefix in front (:func:`exports.finishing.webhooks.secret.webhook_secret_provider`); receivers do the same with
the value they read (docs/deploy.md).
"""

from __future__ import annotations

from typing import Final

from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from exports.core.config.names import SERVICE_NAME
from infra.function_factory import removal_policy
from infra.nag import acknowledge
from infra.settings import StageSettings

# 32 base64 characters decode to 24 bytes: the key size exports.finishing.webhooks.signing.new_secret uses.
SECRET_LENGTH: Final = 32


class WebhookSecret(Construct):
    """The signing secret of the callbacks; its ARN is a stack output."""

    def __init__(self, scope: Construct, construct_id: str, *, settings: StageSettings) -> None:
        super().__init__(scope, construct_id)
        self.secret = secretsmanager.Secret(
            self,
            "SigningSecret",
            description=(
                f"{SERVICE_NAME} ({settings.stage}): key that signs task callbacks. Receivers verify with "
                "whsec_<this value>."
            ),
            generate_secret_string=secretsmanager.SecretStringGenerator(
                password_length=SECRET_LENGTH,
                exclude_punctuation=True,
                include_space=False,
            ),
            removal_policy=removal_policy(settings),
        )
        acknowledge(
            self.secret,
            "AwsSolutions-SMG4",
            "Not rotated automatically: every callback receiver keeps its own copy of this key to verify "
            "signatures, so an unannounced rotation would make them reject every callback. docs/deploy.md "
            "describes the manual rotation (announce, rotate, receivers update).",
        )

    @property
    def secret_arn(self) -> str:
        """The secret's full ARN."""
        return self.secret.secret_arn
