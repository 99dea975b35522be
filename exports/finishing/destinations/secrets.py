"""A destination's secrets: what logs in to its SFTP server and what locks its ZIP files.

Kept in Secrets Manager (one secret per destination, :mod:`exports.finishing.destinations.secrets_manager`),
read by the delivery only, never returned by the API. ``SecretStr`` keeps them out of a
``repr``, a log line and a ``model_dump``.
"""

from __future__ import annotations

import json
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from exports.core.config.destinations import Destinations

ZipPassword = Annotated[
    SecretStr,
    Field(min_length=Destinations.ZIP_PASSWORD_MIN_LENGTH, max_length=Destinations.ZIP_PASSWORD_MAX_LENGTH),
]
SftpPassword = Annotated[SecretStr, Field(min_length=1, max_length=Destinations.SFTP_PASSWORD_MAX_LENGTH)]


class DestinationSecrets(BaseModel):
    """The SFTP private key (OpenSSH format) or password, and the ZIP password; each only when
    the destination needs it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    private_key: SecretStr | None = None
    password: SftpPassword | None = None
    zip_password: ZipPassword | None = None

    def stored(self) -> str:
        """The JSON kept in Secrets Manager (the only place their values are written out)."""
        values = {
            name: value.get_secret_value()
            for name, value in (
                ("private_key", self.private_key),
                ("password", self.password),
                ("zip_password", self.zip_password),
            )
            if value is not None
        }
        return json.dumps(values, sort_keys=True)

    @classmethod
    def from_stored(cls, text: str) -> DestinationSecrets:
        """Read back what :meth:`stored` wrote."""
        return cls.model_validate_json(text)
