"""Where the webhook signing secret comes from: given directly (local mode) or read, cached, from Secrets Manager."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from exports.core.aws.clients import aws_client
from exports.core.config.settings import (
    CallbackSettings,
)
from exports.core.errors import ExportsError


def webhook_secret_provider(settings: CallbackSettings) -> Callable[[], str]:
    """The signing secret: given directly (local mode) or read, cached, from Secrets Manager."""
    from exports.finishing.webhooks.signing import SECRET_PREFIX

    if settings.webhook_secret:
        secret = settings.webhook_secret
        return lambda: secret
    if settings.webhook_secret_arn:
        arn = settings.webhook_secret_arn

        providers: list[Any] = []

        def from_secrets_manager() -> str:
            from aws_lambda_powertools.utilities.parameters import SecretsProvider

            # On the shared Session's client (Powertools' get_secret would build a Session of its
            # own); the provider keeps the value for max_age seconds.
            if not providers:
                providers.append(SecretsProvider(boto3_client=aws_client("secretsmanager")))
            # Secrets Manager generates the base64 key; the whsec_ prefix is the format's, not ours.
            value = str(providers[0].get(arn, max_age=300))
            return value if value.startswith(SECRET_PREFIX) else SECRET_PREFIX + value

        return from_secrets_manager

    def missing() -> str:
        raise ExportsError("no webhook secret is configured")

    return missing
