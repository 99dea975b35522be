"""Run in a fresh interpreter: register the ``directory`` kind (one line), then create, show,
change, verify and deliver to a destination of it through the resource's own models, service
and registry, with no other module changed. Prints ``ok`` at the end."""

from __future__ import annotations

import hashlib
import sys
import tempfile
from pathlib import Path
from types import MappingProxyType

from exports.finishing.destinations import registry
from tests.processes.third_kind.directory import DirectoryKind

# The registry line (docs/how-to/add-a-destination-kind.md), made before the models are built.
registry.KINDS = MappingProxyType({**registry.KINDS, "directory": DirectoryKind()})

from exports.core.caller import AccessRule, Caller  # noqa: E402 (after the registration, on purpose)
from exports.core.errors import InvalidRequest  # noqa: E402
from exports.finishing.destinations import service  # noqa: E402
from exports.finishing.destinations.api_models import DestinationView  # noqa: E402
from exports.finishing.destinations.kind import KindContext  # noqa: E402
from exports.finishing.destinations.model import DestinationAccess, DestinationKind  # noqa: E402
from exports.finishing.destinations.requests import DestinationPatch, DestinationRequest  # noqa: E402
from tests.builders_destinations import NOW  # noqa: E402
from tests.unit.destination_fakes import FakeDestinationStore, FakeSecretVault  # noqa: E402
from tests.unit.export_fakes import FakeMetrics  # noqa: E402

ADMIN = Caller("alice", {"tenant": "acme", "groups": ["admin"]})


def main() -> None:
    root = Path(tempfile.mkdtemp())
    # No AWS here: the shipped kinds' adapters are built, never used.
    context = KindContext(
        resolve=lambda host, port: [],
        allow_local=False,
        aws_client=lambda service_name: None,
        assumed_s3=lambda region, credentials: None,
        principal_arn=None,
    )
    deps = service.DestinationDependencies(
        store=FakeDestinationStore(),
        vault=FakeSecretVault(),
        access=DestinationAccess(
            manage=AccessRule(groups=("admin",), groups_claim="groups"), use=AccessRule(), groups_claim="groups"
        ),
        tenant_of=lambda caller: caller.text("tenant"),
        tenant_claim="tenant",
        kinds=registry.adapters(context),
        clock=lambda: NOW,
        max_per_tenant=5,
        metrics=FakeMetrics(),
    )
    assert DestinationKind("directory") == "directory"
    request = DestinationRequest.model_validate(
        {"name": "Local", "target": {"kind": "directory", "root": str(root / "a")}}
    )
    created = service.create_destination(request, ADMIN, deps).destination
    (root / "a").mkdir()
    shown = DestinationView.of(created, None).model_dump(mode="json")
    assert shown["kind"] == "directory" and shown["target"] == {"kind": "directory", "root": str(root / "a")}

    # A change of the kind's own field; a field of another kind is refused naming it.
    (root / "b").mkdir()
    patched = service.update_destination(
        created.destination_id, DestinationPatch.model_validate({"root": str(root / "b")}), ADMIN, deps
    )
    assert patched.target.remote_path("f.csv") == str(root / "b" / "f.csv")
    try:
        service.update_destination(
            created.destination_id, DestinationPatch.model_validate({"prefix": "x/"}), ADMIN, deps
        )
    except InvalidRequest as refused:
        assert refused.field == "prefix", refused
    else:
        raise AssertionError("a field of another kind was taken")

    assert service.verify_destination(created.destination_id, ADMIN, deps).ok
    file = root / "export.csv"
    file.write_bytes(b"id\n1\n")
    remote = patched.target.remote_path("2026/export.csv")
    digest = hashlib.sha256(file.read_bytes()).hexdigest()
    deps.kinds[patched.kind].put(patched.destination_id, patched.target, None, file, remote, digest)
    assert Path(remote).read_bytes() == file.read_bytes()
    print("ok")


if __name__ == "__main__":
    main()
    sys.exit(0)
