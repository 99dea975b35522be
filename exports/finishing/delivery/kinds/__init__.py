"""The kinds of destination a file is delivered to, one module each (:mod:`.s3`, :mod:`.sftp`),
behind one port: a new kind is a module and a line in the registry its composition builds
(:func:`exports.finishing.delivery.composition.compose_delivery`)."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from exports.finishing.destinations.model import Destination
from exports.finishing.destinations.secrets import DestinationSecrets


class FileDeliverer(Protocol):
    """Puts one file at a destination, whole or not at all, with its sha256 beside it."""

    def remote_path(self, destination: Destination, relative_path: str) -> str:
        """Where ``relative_path`` (the rendered path template) lands at ``destination``."""

    def put(
        self, destination: Destination, secrets: DestinationSecrets | None, local: Path, remote: str, sha256: str
    ) -> None:
        """Put the file ``local`` at ``remote`` so that it appears whole or not at all, and a
        retry replaces it (never a second file, never a half one); its ``sha256`` beside it. A
        failure is a :class:`exports.finishing.destinations.problems.DestinationProblem`."""
