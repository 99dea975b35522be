"""The ``directory`` kind: files copied into a directory of this machine. Only what a kind module
holds (docs/how-to/add-a-destination-kind.md): its models, its change's fields, its sentences and
its adapter; the test adds one line to the registry and nothing else."""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Final, Literal

from pydantic import BaseModel, ConfigDict

from exports.finishing.destinations.kind import Kind, KindContext, Made, SpecBase, TargetBase
from exports.finishing.destinations.problems import DestinationProblem, ProblemStep
from exports.finishing.destinations.secrets import DestinationSecrets

NAME: Final = "directory"


class Folder(BaseModel):
    """Where the files go."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    root: str


class DirectorySpec(SpecBase, Folder):
    kind: Literal["directory"]


class DirectoryTarget(TargetBase, Folder):
    kind: Literal["directory"] = NAME

    def remote_path(self, relative_path: str) -> str:
        return str(Path(self.root) / relative_path)


class DirectoryDestinations:
    def make(self, spec: SpecBase, destination_id: str, secrets_: DestinationSecrets) -> Made:
        return Made(DirectoryTarget(**spec.model_dump(exclude={"kind"})), secrets_)

    def probe(self, destination_id: str, target: TargetBase, secrets_: DestinationSecrets | None) -> None:
        assert isinstance(target, DirectoryTarget)
        probe = Path(target.root) / f".probe-{secrets.token_hex(4)}"
        try:
            probe.write_bytes(b"probe")
            probe.unlink()
        except OSError:
            raise DestinationProblem(ProblemStep.PATH, f"the directory {target.root} cannot be written") from None

    def put(
        self,
        destination_id: str,
        target: TargetBase,
        secrets_: DestinationSecrets | None,
        local: Path,
        remote: str,
        sha256: str,
    ) -> None:
        partial = Path(remote).with_name(f".{Path(remote).name}.part")
        partial.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(local, partial)
        assert hashlib.sha256(partial.read_bytes()).hexdigest() == sha256
        os.replace(partial, remote)


class DirectoryKind(Kind):
    name: ClassVar[str] = NAME
    target = DirectoryTarget
    spec = DirectorySpec
    view = DirectoryTarget
    patch_fields: ClassVar[Mapping[str, Any]] = {"root": str | None}

    def adapter(self, context: KindContext) -> DirectoryDestinations:
        return DirectoryDestinations()
