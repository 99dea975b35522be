"""The destination ports against their fakes and their adapters on moto (the same cases): the
DynamoDB destination store (tenant-bound keys, conditional writes, the per-tenant cap) and the
Secrets Manager vault."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws
from pydantic import SecretStr

from exports.core.config.names import Names
from exports.core.errors import ConditionFailed, InvalidRequest
from exports.finishing.destinations.dynamodb_destinations import DynamoDestinationStore
from exports.finishing.destinations.model import DestinationState, Encryption, EncryptionKind
from exports.finishing.destinations.ports import DestinationLimitReached, DestinationStore, SecretMissing, SecretVault
from exports.finishing.destinations.secrets import DestinationSecrets
from exports.finishing.destinations.secrets_manager import DESTINATION_TAG, SecretsManagerVault, secret_name
from local_stack.embedded_aws import REGION, create_destinations_table
from tests.builders_destinations import NOW, destination, destination_id, sftp_target
from tests.integration.conftest import serialise_shared_state
from tests.unit.destination_fakes import FakeDestinationStore, FakeSecretVault


@pytest.fixture
def moto() -> Iterator[None]:
    with mock_aws():
        create_destinations_table(boto3.client("dynamodb", region_name=REGION))
        yield


@pytest.fixture(params=["fake", "dynamodb"])
def store(request: pytest.FixtureRequest) -> DestinationStore:
    if request.param == "fake":
        return FakeDestinationStore()
    request.getfixturevalue("moto")
    return DynamoDestinationStore(boto3.client("dynamodb", region_name=REGION), Names.DESTINATIONS_TABLE)


@pytest.fixture(params=["fake", "secretsmanager"])
def vault(request: pytest.FixtureRequest) -> SecretVault:
    if request.param == "fake":
        return FakeSecretVault()
    request.getfixturevalue("moto")
    return SecretsManagerVault(boto3.client("secretsmanager", region_name=REGION))


def test_each_kind_reads_back_exactly(store: DestinationStore) -> None:
    s3 = destination(1, encryption=Encryption(kind=EncryptionKind.ZIP), secret_ref="ref-1")
    sftp = destination(2, target=sftp_target(port=2222), secret_ref="ref-2")
    unconfirmed = destination(
        3,
        target=sftp_target(host_key_fingerprint=None, offered_host_key_fingerprint="SHA256:" + "B" * 43),
        state=DestinationState.HOST_KEY_UNCONFIRMED,
    )
    for made in (s3, sftp, unconfirmed):
        store.create(made, max_per_tenant=5)

    assert [store.get("acme", made.destination_id) for made in (s3, sftp, unconfirmed)] == [s3, sftp, unconfirmed]


def test_another_tenant_never_finds_a_destination(store: DestinationStore) -> None:
    ours = destination(1, tenant="acme")
    store.create(ours, max_per_tenant=5)

    assert store.get("initech", ours.destination_id) is None
    assert store.list_for_tenant("initech", 10, None).destinations == []
    assert store.get("acme", "count") is None  # never the tenant's counter, whatever the id


def test_the_cap_counts_per_tenant_and_a_deletion_frees_a_place(store: DestinationStore) -> None:
    store.create(destination(1), max_per_tenant=2)
    store.create(destination(2), max_per_tenant=2)
    with pytest.raises(DestinationLimitReached) as refused:
        store.create(destination(3), max_per_tenant=2)
    assert refused.value.limit == 2
    store.create(destination(3, tenant="initech"), max_per_tenant=2)  # another tenant's own count

    store.delete(destination(1))
    store.delete(destination(1))  # gone already: nothing changes
    store.create(destination(3), max_per_tenant=2)
    assert {d.destination_id for d in store.list_for_tenant("acme", 10, None).destinations} == {
        destination_id(2),
        destination_id(3),
    }


def test_creating_an_existing_id_is_a_condition_failure(store: DestinationStore) -> None:
    store.create(destination(1), max_per_tenant=5)
    with pytest.raises(ConditionFailed):
        store.create(destination(1, name="again"), max_per_tenant=5)
    assert store.get("acme", destination_id(1)) == destination(1)


def test_a_replace_is_conditional_on_the_version_read(store: DestinationStore) -> None:
    first = destination(1)
    store.create(first, max_per_tenant=5)
    renamed = store.replace(first, first.model_copy(update={"name": "Lake", "updated_at": NOW}))

    assert renamed.version == 1 and store.get("acme", first.destination_id) == renamed
    with pytest.raises(ConditionFailed):
        store.replace(first, first.model_copy(update={"name": "lost"}))
    store.delete(renamed)
    with pytest.raises(ConditionFailed):
        store.replace(renamed, renamed.model_copy(update={"name": "revived"}))  # never re-created
    assert store.get("acme", first.destination_id) is None


def test_a_tenant_lists_its_destinations_newest_first_a_page_at_a_time(store: DestinationStore) -> None:
    for n in (1, 2, 3):
        store.create(destination(n), max_per_tenant=5)
    store.create(destination(4, tenant="initech"), max_per_tenant=5)

    first = store.list_for_tenant("acme", 2, None)
    assert [d.destination_id for d in first.destinations] == [destination_id(3), destination_id(2)]
    assert first.cursor is not None
    rest = store.list_for_tenant("acme", 2, first.cursor)
    assert [d.destination_id for d in rest.destinations] == [destination_id(1)]
    with pytest.raises(InvalidRequest):
        store.list_for_tenant("initech", 2, first.cursor)  # another tenant's cursor


def test_concurrent_creates_never_pass_the_cap(store: DestinationStore, request: pytest.FixtureRequest) -> None:
    if isinstance(store, DynamoDestinationStore):
        serialise_shared_state(request.getfixturevalue("monkeypatch"))
    start = threading.Barrier(6)
    refused: list[int] = []

    def create(n: int) -> None:
        start.wait()
        try:
            store.create(destination(n), max_per_tenant=3)
        except DestinationLimitReached:
            refused.append(n)

    threads = [threading.Thread(target=create, args=(n,)) for n in range(1, 7)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(refused) == 3
    assert len(store.list_for_tenant("acme", 10, None).destinations) == 3


def test_secrets_are_stored_replaced_read_and_deleted(vault: SecretVault) -> None:
    first = DestinationSecrets(private_key=SecretStr("-----BEGIN OPENSSH PRIVATE KEY-----\nkey\n"))
    ref = vault.put(destination_id(1), first)
    assert vault.get(ref) == first

    second = DestinationSecrets(password=SecretStr("s3cret"), zip_password=SecretStr("correct horse battery"))
    assert vault.put(destination_id(1), second) == ref  # a retried create or a change: the same secret
    assert vault.get(ref) == second

    vault.delete(ref)
    vault.delete(ref)  # gone already: nothing to do
    with pytest.raises(SecretMissing):
        vault.get(ref)


def test_a_secret_is_named_under_the_prefix_and_tagged_with_its_destination(moto: None) -> None:
    client = boto3.client("secretsmanager", region_name=REGION)
    ref = SecretsManagerVault(client).put(destination_id(7), DestinationSecrets(password=SecretStr("pw")))

    described = client.describe_secret(SecretId=ref)
    assert described["Name"] == secret_name(destination_id(7)) == Names.DESTINATION_SECRET_PREFIX + destination_id(7)
    assert {"Key": DESTINATION_TAG, "Value": destination_id(7)} in described["Tags"]
