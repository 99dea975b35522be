"""The destination service on fakes: what it generates, where secrets go (and that they leave
when no longer needed), a refused creation leaving no secret behind, who may do what, and a
verification's report and metrics."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import SecretStr

from exports.core.caller import AccessRule, Caller, CallerRefused
from exports.core.config.metrics import Metric
from exports.core.errors import InvalidRequest
from exports.finishing.destinations import service
from exports.finishing.destinations.kind import KindAdapter
from exports.finishing.destinations.kinds.s3 import S3Destinations, S3Target
from exports.finishing.destinations.kinds.sftp import SftpDestinations, SftpTarget
from exports.finishing.destinations.model import DestinationAccess, DestinationState
from exports.finishing.destinations.ports import DestinationLimitReached
from exports.finishing.destinations.problems import DestinationProblem, ProblemStep
from exports.finishing.destinations.requests import DestinationPatch, DestinationRequest
from tests.builders_destinations import HOST_KEY, NOW
from tests.unit.destination_fakes import FakeDestinationStore, FakeHostKeys, FakeSecretVault, ProbedKind
from tests.unit.export_fakes import FakeMetrics

ADMIN = Caller("alice", {"tenant": "acme", "groups": ["admin"]})
MEMBER = Caller("bob", {"tenant": "acme", "groups": ["sales"]})
S3 = {"kind": "s3", "bucket": "acme-lake", "region": "eu-west-1", "role_arn": "arn:aws:iam::210987654321:role/r"}
SFTP = {"kind": "sftp", "host": "sftp.acme.example", "username": "acme", "path": "/upload"}


PRINCIPAL = "arn:aws:iam::123456789012:root"


def kinds(
    principal_arn: str | None = PRINCIPAL,
    host_keys: FakeHostKeys | None = None,
    probe_problem: DestinationProblem | None = None,
) -> dict[str, KindAdapter]:
    """The registered kinds' real adapters, with the host key fetch and the probes faked (and no
    S3 client: making an S3 target calls none)."""

    def no_s3(region: str, credentials: Any) -> Any:
        raise AssertionError("making a target reaches no bucket")

    return {
        "s3": ProbedKind(S3Destinations(None, no_s3, principal_arn), probe_problem),
        "sftp": ProbedKind(
            SftpDestinations(lambda host, port: [], host_keys=host_keys or FakeHostKeys(HOST_KEY)), probe_problem
        ),
    }


def deps(**changes: Any) -> service.DestinationDependencies:
    values: dict[str, Any] = {
        "store": FakeDestinationStore(),
        "vault": FakeSecretVault(),
        "access": DestinationAccess(
            manage=AccessRule(groups=("admin",), groups_claim="groups"), use=AccessRule(), groups_claim="groups"
        ),
        "tenant_of": lambda caller: caller.text("tenant"),
        "tenant_claim": "tenant",
        "kinds": kinds(),
        "clock": lambda: NOW,
        "max_per_tenant": 2,
        "metrics": FakeMetrics(),
        "principal_arn": PRINCIPAL,
    }
    return service.DestinationDependencies(**{**values, **changes})


def request(**values: Any) -> DestinationRequest:
    return DestinationRequest.model_validate({"name": "Drop", "target": SFTP, **values})


def test_an_sftp_key_destination_gets_a_fresh_key_pair_its_private_half_in_the_vault() -> None:
    given = deps()
    created = service.create_destination(request(), ADMIN, given)

    destination = created.destination
    assert destination.state is DestinationState.HOST_KEY_UNCONFIRMED
    assert isinstance(destination.target, SftpTarget)
    assert destination.target.offered_host_key_fingerprint == HOST_KEY
    assert created.public_key is not None and created.public_key.endswith(destination.destination_id)
    assert destination.secret_ref is not None
    kept = given.vault.get(destination.secret_ref)
    assert kept.private_key is not None and "OPENSSH PRIVATE KEY" in kept.private_key.get_secret_value()
    assert given.metrics.dimensions == [(Metric.DESTINATION_CREATED, {"kind": "sftp"})]  # type: ignore[attr-defined]


def test_an_s3_destination_without_secrets_keeps_none_and_needs_a_principal() -> None:
    created = service.create_destination(request(target=S3), ADMIN, deps())
    assert created.destination.secret_ref is None and created.public_key is None
    assert isinstance(created.destination.target, S3Target)
    assert len(created.destination.target.external_id) == 48

    with pytest.raises(InvalidRequest) as refused:
        service.create_destination(request(target=S3), ADMIN, deps(principal_arn=None, kinds=kinds(principal_arn=None)))
    assert refused.value.field == "target.kind"


def test_a_creation_refused_by_the_cap_leaves_no_secret_behind() -> None:
    given = deps(max_per_tenant=1)
    service.create_destination(request(target={**SFTP, "auth": "password", "password": "pw"}), ADMIN, given)
    with pytest.raises(DestinationLimitReached):
        service.create_destination(request(target={**SFTP, "auth": "password", "password": "pw2"}), ADMIN, given)

    assert len(given.vault.secrets) == 1  # type: ignore[attr-defined]


def test_a_host_key_that_cannot_be_fetched_is_a_422_on_the_host_and_nothing_is_kept() -> None:
    problem = DestinationProblem(ProblemStep.TCP, "nothing accepted a connection")
    given = deps(kinds=kinds(host_keys=FakeHostKeys(HOST_KEY, problem)))
    with pytest.raises(InvalidRequest) as refused:
        service.create_destination(request(), ADMIN, given)

    assert refused.value.field == "target.host" and refused.value.code == "DESTINATION_UNREACHABLE"
    assert given.vault.secrets == {} and given.store.destinations == {}  # type: ignore[attr-defined]


def test_encryption_changes_move_the_zip_password_in_and_out_of_the_vault() -> None:
    given = deps()
    created = service.create_destination(request(target=S3), ADMIN, given).destination
    zip_on = DestinationPatch.model_validate({"encryption": {"kind": "zip", "zip_password": "correct horse battery"}})

    zipped = service.update_destination(created.destination_id, zip_on, ADMIN, given)
    assert zipped.secret_ref is not None
    assert given.vault.get(zipped.secret_ref).zip_password == SecretStr("correct horse battery")

    plain = service.update_destination(
        created.destination_id, DestinationPatch.model_validate({"encryption": {"kind": "none"}}), ADMIN, given
    )
    assert plain.secret_ref is None and given.vault.secrets == {}  # type: ignore[attr-defined]


def test_dropping_zip_on_sftp_keeps_the_login() -> None:
    given = deps()
    body = {"target": {**SFTP, "auth": "password", "password": "pw"}}
    zip_body = {"encryption": {"kind": "zip", "zip_password": "correct horse battery"}}
    created = service.create_destination(request(**body, **zip_body), ADMIN, given).destination

    changed = service.update_destination(
        created.destination_id, DestinationPatch.model_validate({"encryption": {"kind": "none"}}), ADMIN, given
    )

    assert changed.secret_ref is not None
    kept = given.vault.get(changed.secret_ref)
    assert kept.password == SecretStr("pw") and kept.zip_password is None


def test_members_may_not_manage_and_a_caller_without_a_tenant_is_refused() -> None:
    given = deps()
    with pytest.raises(service.NotDestinationManager):
        service.create_destination(request(), MEMBER, given)
    with pytest.raises(CallerRefused) as refused:
        service.list_destinations(Caller("eve", {}), given, 10, None)
    assert refused.value.claim == "tenant"


def test_a_verification_reports_the_failed_step_and_counts_it() -> None:
    problem = DestinationProblem(ProblemStep.PERMISSION, "the role may not write")
    given = deps(kinds=kinds(probe_problem=problem))
    created = service.create_destination(request(target=S3), ADMIN, given).destination

    report = service.verify_destination(created.destination_id, ADMIN, given)

    assert (report.ok, report.step, report.message) == (False, ProblemStep.PERMISSION, "the role may not write")
    assert (Metric.DESTINATION_VERIFY_FAILED, {"kind": "s3", "step": "PERMISSION"}) in given.metrics.dimensions  # type: ignore[attr-defined]
