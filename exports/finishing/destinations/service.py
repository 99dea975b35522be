"""Managing a tenant's destinations: create, read, change, delete, confirm a fetched host key,
verify. Every operation is bound to the caller's tenant (their token's claim): another tenant's
destination is not found, whatever its id."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import ValidationError
from ulid import ULID

from exports.core.caller import Caller, CallerRefused
from exports.core.config.metrics import Metric
from exports.core.deliveries import DEFAULT_PATH_TEMPLATE, DeliveryPlan
from exports.core.errors import ExportsError, InvalidRequest
from exports.core.ports import BusinessMetrics
from exports.finishing.destinations import registry
from exports.finishing.destinations.kind import HostKeyMismatch, KindAdapter
from exports.finishing.destinations.model import (
    DESTINATION_ID_PREFIX,
    Destination,
    DestinationAccess,
    DestinationState,
    EncryptionKind,
    confirm_host_key,
)
from exports.finishing.destinations.ports import DestinationNotFound, DestinationPage, DestinationStore, SecretVault
from exports.finishing.destinations.problems import DestinationProblem, ProblemStep
from exports.finishing.destinations.requests import DestinationPatch, DestinationRequest
from exports.finishing.destinations.secrets import DestinationSecrets


class NotDestinationManager(ExportsError):
    """The caller may not manage their tenant's destinations (403)."""

    code = "NOT_DESTINATION_MANAGER"

    def __init__(self) -> None:
        super().__init__("you may not manage your tenant's destinations (ask a member of the managing group)")


class HostKeyNotConfirmed(ExportsError):
    """The destination waits for its fetched host key's confirmation (409); ``field`` names where
    a request body named it."""

    code = "HOST_KEY_UNCONFIRMED"

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class HostKeyRefused(ExportsError):
    """The fingerprint to confirm is not the one shown (409)."""

    code = "HOST_KEY_MISMATCH"


@dataclass(frozen=True)
class DestinationDependencies:
    """The destinations' ports and the deployment's rules for them."""

    store: DestinationStore
    vault: SecretVault
    access: DestinationAccess
    # The caller's tenant, from their token only (None: no tenant claim).
    tenant_of: Callable[[Caller], str | None]
    # The claim a caller without a tenant lacks (the 403 names it).
    tenant_claim: str
    # Each registered kind's adapter, by its name (exports.finishing.destinations.registry.adapters).
    kinds: Mapping[str, KindAdapter]
    clock: Callable[[], datetime]
    max_per_tenant: int
    metrics: BusinessMetrics
    # The role customers' S3 roles trust (their trust policy's principal); None: no S3 destinations.
    principal_arn: str | None = None


@dataclass(frozen=True)
class Created:
    """A new destination and, for SFTP key authentication, its public key (shown this once)."""

    destination: Destination
    public_key: str | None


@dataclass(frozen=True)
class Verification:
    """What ``verify`` found for ``destination``: ``ok``, or the failed step and what to do."""

    destination: Destination
    ok: bool
    checked_at: datetime
    step: ProblemStep | None = None
    message: str | None = None


def _tenant(caller: Caller, deps: DestinationDependencies) -> str:
    tenant = deps.tenant_of(caller)
    if not tenant:
        raise CallerRefused(
            f"destinations belong to a tenant: your token carries no {deps.tenant_claim!r} claim", deps.tenant_claim
        )
    return tenant


def _manager_tenant(caller: Caller, deps: DestinationDependencies) -> str:
    tenant = _tenant(caller, deps)
    if not deps.access.may_manage(caller):
        raise NotDestinationManager()
    return tenant


def create_destination(request: DestinationRequest, caller: Caller, deps: DestinationDependencies) -> Created:
    """Validate, let the kind make the target with what the service generates for it (an
    ExternalId, a key pair, a fetched host key), keep the secrets in the vault, then store the
    destination; a refused store removes the secret."""
    tenant = _manager_tenant(caller, deps)
    now = deps.clock()
    destination_id = f"{DESTINATION_ID_PREFIX}{ULID.from_datetime(now)}"
    secrets = DestinationSecrets(zip_password=request.encryption.zip_password)
    made = deps.kinds[request.target.kind].make(request.target, destination_id, secrets)
    destination = Destination(
        destination_id=destination_id,
        tenant=tenant,
        name=request.name,
        target=made.target,
        encryption=request.encryption.encryption(),
        use=request.use,
        state=DestinationState.HOST_KEY_UNCONFIRMED if made.target.awaiting_confirmation else DestinationState.ACTIVE,
        created_by=caller.user_id,
        created_at=now,
        updated_at=now,
    )
    secret_ref = deps.vault.put(destination_id, made.secrets) if destination.needs_secret else None
    destination = destination.model_copy(update={"secret_ref": secret_ref})
    try:
        deps.store.create(destination, deps.max_per_tenant)
    except ExportsError:
        if secret_ref is not None:
            deps.vault.delete(secret_ref)
        raise
    deps.metrics.add(Metric.DESTINATION_CREATED, dimensions={"kind": destination.kind})
    return Created(destination, made.public_key)


def list_destinations(caller: Caller, deps: DestinationDependencies, limit: int, cursor: str | None) -> DestinationPage:
    """The tenant's destinations, newest first: all of them for a manager, those the caller may
    use for anyone else (a page may then hold fewer than ``limit``)."""
    tenant = _tenant(caller, deps)
    page = deps.store.list_for_tenant(tenant, limit, cursor)
    if deps.access.may_manage(caller):
        return page
    usable = [d for d in page.destinations if deps.access.may_use(caller, d)]
    return DestinationPage(usable, page.cursor)


def visible_destination(
    destination_id: str, caller: Caller, deps: DestinationDependencies, field: str | None = None
) -> Destination:
    """The tenant's destination if the caller manages or may use it; 404 otherwise (as for
    another tenant's), naming ``field`` when a request body named the destination."""
    tenant = _tenant(caller, deps)
    destination = deps.store.get(tenant, destination_id)
    if destination is None or not deps.access.may_use(caller, destination):
        raise DestinationNotFound(destination_id, field=field)
    return destination


def delivery_plan(
    destination_ids: Sequence[str], path_template: str | None, caller: Caller, deps: DestinationDependencies
) -> DeliveryPlan | None:
    """Where an export's file goes: each destination named must be one of the caller's tenant's
    that they may use (else a 404 naming ``destinations.<i>``, the same for another tenant's
    destination as for none, so nothing is learnt of it) and that takes files (else a 409: it
    waits for its host key's confirmation). A 404 and not a 422: the id is well formed, what is
    missing is the resource it names, as for an unknown task or export type."""
    if not destination_ids:
        return None
    for index, destination_id in enumerate(destination_ids):
        destination = visible_destination(destination_id, caller, deps, field=f"destinations.{index}")
        if destination.state is not DestinationState.ACTIVE:
            raise HostKeyNotConfirmed(
                f"destination {destination_id} waits for its host key to be confirmed (POST"
                f" /v1/destinations/{destination_id}/confirm)",
                field=f"destinations.{index}",
            )
    return DeliveryPlan(
        tenant=_tenant(caller, deps),
        destination_ids=tuple(destination_ids),
        path_template=path_template or DEFAULT_PATH_TEMPLATE,
    )


def _managed(destination_id: str, caller: Caller, deps: DestinationDependencies) -> Destination:
    tenant = _manager_tenant(caller, deps)
    destination = deps.store.get(tenant, destination_id)
    if destination is None:
        raise DestinationNotFound(destination_id)
    return destination


def update_destination(
    destination_id: str, patch: DestinationPatch, caller: Caller, deps: DestinationDependencies
) -> Destination:
    """The destination with the fields given changed (secrets in the vault first)."""
    before = _managed(destination_id, caller, deps)
    changes = patch.model_dump(exclude_unset=True)
    kind = registry.KINDS[before.kind]
    own = _kind_changes(before, patch, kind.patch_fields.keys())
    try:
        target = kind.patched(before.target, own)
    except ValidationError as invalid:
        first = invalid.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or None
        raise InvalidRequest(str(first["msg"]).removeprefix("Value error, "), field=field) from None
    state = DestinationState.HOST_KEY_UNCONFIRMED if target.awaiting_confirmation else DestinationState.ACTIVE
    after = Destination.model_validate(
        {
            **before.model_dump(),
            "target": target,
            "state": state,
            "updated_at": deps.clock(),
            **({"name": patch.name} if "name" in changes and patch.name is not None else {}),
            **({"use": patch.use} if "use" in changes else {}),
            **({"encryption": patch.encryption.encryption()} if patch.encryption is not None else {}),
        }
    )
    after = _with_secrets(before, after, kind.patched_secrets(before.target, own), patch, deps)
    return deps.store.replace(before, after)


def _kind_changes(before: Destination, patch: DestinationPatch, own: Collection[str]) -> dict[str, Any]:
    """The patch's fields of the destination's kind, as given; a field of another kind is
    refused (422, naming it)."""
    given = patch.model_dump(exclude_unset=True)
    for field in registry.patch_fields():
        if field in given and field not in own:
            raise InvalidRequest(f"{field} does not apply to a {before.kind} destination", field=field)
    # The values as the patch holds them (a password stays a SecretStr).
    return {field: getattr(patch, field) for field in own if field in given}


def _with_secrets(
    before: Destination,
    after: Destination,
    kind_secrets: Mapping[str, Any],
    patch: DestinationPatch,
    deps: DestinationDependencies,
) -> Destination:
    """``after`` with its secrets kept: the kind's new ones (a password) or a new ZIP password
    replace the old, a ZIP password no longer needed is dropped, a secret no longer needed at
    all is deleted."""
    if not kind_secrets and patch.encryption is None:
        return after
    current = deps.vault.get(before.secret_ref) if before.secret_ref else DestinationSecrets()
    secrets = current.model_copy(
        update={
            **kind_secrets,
            **(
                {"zip_password": patch.encryption.zip_password if after.encryption.kind is EncryptionKind.ZIP else None}
                if patch.encryption is not None
                else {}
            ),
        }
    )
    if after.needs_secret:
        return after.model_copy(update={"secret_ref": deps.vault.put(after.destination_id, secrets)})
    if before.secret_ref:
        deps.vault.delete(before.secret_ref)
    return after.model_copy(update={"secret_ref": None})


def delete_destination(destination_id: str, caller: Caller, deps: DestinationDependencies) -> Destination:
    """Remove the destination, then its secret (the deleted destination, for the audit trail)."""
    destination = _managed(destination_id, caller, deps)
    deps.store.delete(destination)
    if destination.secret_ref:
        deps.vault.delete(destination.secret_ref)
    return destination


def confirm_destination(
    destination_id: str, fingerprint: str, caller: Caller, deps: DestinationDependencies
) -> Destination:
    """Pin the fetched host key the caller confirms (only the one shown): the destination ACTIVE."""
    before = _managed(destination_id, caller, deps)
    try:
        after = confirm_host_key(before, fingerprint, deps.clock())
    except HostKeyMismatch as mismatch:
        raise HostKeyRefused(str(mismatch)) from None
    return deps.store.replace(before, after)


def verify_destination(destination_id: str, caller: Caller, deps: DestinationDependencies) -> Verification:
    """Write and remove a probe file; what failed, in the customer's words."""
    destination = _managed(destination_id, caller, deps)
    if destination.state is DestinationState.HOST_KEY_UNCONFIRMED:
        raise HostKeyNotConfirmed("confirm the host key shown first (POST /v1/destinations/{id}/confirm)")
    secrets = deps.vault.get(destination.secret_ref) if destination.secret_ref else None
    kind = destination.kind
    try:
        deps.kinds[kind].probe(destination.destination_id, destination.target, secrets)
    except DestinationProblem as problem:
        deps.metrics.add(Metric.DESTINATION_VERIFY_FAILED, dimensions={"kind": kind, "step": problem.step.value})
        return Verification(destination, False, deps.clock(), step=problem.step, message=problem.message)
    deps.metrics.add(Metric.DESTINATION_VERIFIED, dimensions={"kind": kind})
    return Verification(destination, True, deps.clock())
