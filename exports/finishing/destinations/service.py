"""Managing a tenant's destinations: create, read, change, delete, confirm a fetched host key,
verify. Every operation is bound to the caller's tenant (their token's claim): another tenant's
destination is not found, whatever its id."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from pydantic import SecretStr, ValidationError
from ulid import ULID

from exports.core.caller import Caller, CallerRefused
from exports.core.config.metrics import Metric
from exports.core.deliveries import DEFAULT_PATH_TEMPLATE, DeliveryPlan
from exports.core.errors import ExportsError, InvalidRequest
from exports.core.ports import BusinessMetrics
from exports.finishing.destinations import keys
from exports.finishing.destinations.model import (
    DESTINATION_ID_PREFIX,
    Destination,
    DestinationAccess,
    DestinationKind,
    DestinationState,
    EncryptionKind,
    HostKeyMismatch,
    S3Target,
    SftpAuth,
    SftpTarget,
    confirm_host_key,
)
from exports.finishing.destinations.ports import (
    DestinationNotFound,
    DestinationPage,
    DestinationProbe,
    DestinationStore,
    HostKeys,
    SecretVault,
)
from exports.finishing.destinations.problems import DestinationProblem, ProblemStep
from exports.finishing.destinations.requests import DestinationPatch, DestinationRequest, S3TargetSpec, SftpTargetSpec
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
    host_keys: HostKeys
    probes: Mapping[DestinationKind, DestinationProbe]
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
    """Validate, generate what the service owns (ExternalId, key pair), pin or fetch the host key,
    keep the secrets in the vault, then store the destination; a refused store removes the secret."""
    tenant = _manager_tenant(caller, deps)
    now = deps.clock()
    destination_id = f"{DESTINATION_ID_PREFIX}{ULID.from_datetime(now)}"
    spec = request.target
    secrets = DestinationSecrets(zip_password=request.encryption.zip_password)
    public_key = None
    state = DestinationState.ACTIVE
    if isinstance(spec, S3TargetSpec):
        if deps.principal_arn is None:
            raise InvalidRequest("this deployment delivers to SFTP servers only", field="target.kind")
        target: S3Target | SftpTarget = S3Target(
            **spec.model_dump(exclude={"kind"}), external_id=keys.new_external_id()
        )
    else:
        target, public_key, secrets = _sftp_target(spec, destination_id, secrets, deps)
        if target.host_key_fingerprint is None:
            state = DestinationState.HOST_KEY_UNCONFIRMED
    destination = Destination(
        destination_id=destination_id,
        tenant=tenant,
        name=request.name,
        target=target,
        encryption=request.encryption.encryption(),
        use=request.use,
        state=state,
        created_by=caller.user_id,
        created_at=now,
        updated_at=now,
    )
    secret_ref = deps.vault.put(destination_id, secrets) if destination.needs_secret else None
    destination = destination.model_copy(update={"secret_ref": secret_ref})
    try:
        deps.store.create(destination, deps.max_per_tenant)
    except ExportsError:
        if secret_ref is not None:
            deps.vault.delete(secret_ref)
        raise
    deps.metrics.add(Metric.DESTINATION_CREATED, dimensions={"kind": destination.kind.value})
    return Created(destination, public_key)


def _sftp_target(
    spec: SftpTargetSpec, destination_id: str, secrets: DestinationSecrets, deps: DestinationDependencies
) -> tuple[SftpTarget, str | None, DestinationSecrets]:
    """The target with its host key (given, or fetched to confirm), its key pair's public key,
    and the secrets with the login."""
    offered = None
    if spec.host_key_fingerprint is None:
        offered = _fetched_host_key(spec.host, spec.port, deps)
    public_key = None
    if spec.auth is SftpAuth.KEY:
        pair = keys.new_key_pair(destination_id)
        public_key = pair.public_key
        secrets = secrets.model_copy(update={"private_key": SecretStr(pair.private_key)})
    else:
        secrets = secrets.model_copy(update={"password": spec.password})
    target = SftpTarget(
        **spec.model_dump(exclude={"kind", "password"}),
        offered_host_key_fingerprint=offered,
        public_key=public_key,
    )
    return target, public_key, secrets


def _fetched_host_key(host: str, port: int, deps: DestinationDependencies) -> str:
    try:
        return deps.host_keys.fetch(host, port)
    except DestinationProblem as problem:
        # A request the server cannot answer yet is the caller's to fix: 422 on the host.
        raise InvalidRequest(
            f"we could not fetch the host key to show you: {problem.message}",
            field="target.host",
            code=DestinationProblem.code,
        ) from None


def list_destinations(caller: Caller, deps: DestinationDependencies, limit: int, cursor: str | None) -> DestinationPage:
    """The tenant's destinations, newest first: all of them for a manager, those the caller may
    use for anyone else (a page may then hold fewer than ``limit``)."""
    tenant = _tenant(caller, deps)
    page = deps.store.list_for_tenant(tenant, limit, cursor)
    if deps.access.may_manage(caller):
        return page
    usable = [d for d in page.destinations if deps.access.may_use(caller, d)]
    return DestinationPage(usable, page.cursor)


def visible_destination(destination_id: str, caller: Caller, deps: DestinationDependencies) -> Destination:
    """The tenant's destination if the caller manages or may use it; 404 otherwise (as for
    another tenant's)."""
    tenant = _tenant(caller, deps)
    destination = deps.store.get(tenant, destination_id)
    if destination is None or not deps.access.may_use(caller, destination):
        raise DestinationNotFound(destination_id)
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
    tenant = _tenant(caller, deps)
    for index, destination_id in enumerate(destination_ids):
        destination = deps.store.get(tenant, destination_id)
        if destination is None or not deps.access.may_use(caller, destination):
            raise DestinationNotFound(destination_id, field=f"destinations.{index}")
        if destination.state is not DestinationState.ACTIVE:
            raise HostKeyNotConfirmed(
                f"destination {destination_id} waits for its host key to be confirmed (POST"
                f" /v1/destinations/{destination_id}/confirm)",
                field=f"destinations.{index}",
            )
    return DeliveryPlan(
        tenant=tenant, destination_ids=tuple(destination_ids), path_template=path_template or DEFAULT_PATH_TEMPLATE
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
    target = before.target
    target_changes = _target_changes(before, patch, changes)
    if target_changes:
        try:
            target = target.model_validate({**target.model_dump(), **target_changes})
        except ValidationError as invalid:
            first = invalid.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or None
            raise InvalidRequest(str(first["msg"]).removeprefix("Value error, "), field=field) from None
    updated = before.model_copy(update={"target": target, "updated_at": deps.clock()})
    state = updated.state
    if "host_key_fingerprint" in target_changes:
        state = DestinationState.ACTIVE
    after = Destination.model_validate(
        {
            **updated.model_dump(),
            "state": state,
            **({"name": patch.name} if "name" in changes and patch.name is not None else {}),
            **({"use": patch.use} if "use" in changes else {}),
            **({"encryption": patch.encryption.encryption()} if patch.encryption is not None else {}),
        }
    )
    after = _with_secrets(before, after, patch, deps)
    return deps.store.replace(before, after)


def _target_changes(before: Destination, patch: DestinationPatch, changes: Mapping[str, object]) -> dict[str, object]:
    """The target's fields the patch changes; a field of the other kind is refused (422)."""
    own = {"prefix"} if before.kind is DestinationKind.S3 else {"path", "password", "host_key_fingerprint"}
    for field in ("prefix", "path", "password", "host_key_fingerprint"):
        if field in changes and field not in own:
            raise InvalidRequest(f"{field} does not apply to a {before.kind.value} destination", field=field)
    if "password" in changes and (not isinstance(before.target, SftpTarget) or before.target.auth is SftpAuth.KEY):
        raise InvalidRequest("password applies to a destination with auth password only", field="password")
    values: dict[str, object] = {}
    for field in ("prefix", "path"):
        if changes.get(field) is not None:
            values[field] = changes[field]
    if patch.host_key_fingerprint is not None:
        values["host_key_fingerprint"] = patch.host_key_fingerprint
        values["offered_host_key_fingerprint"] = None
    return values


def _with_secrets(
    before: Destination, after: Destination, patch: DestinationPatch, deps: DestinationDependencies
) -> Destination:
    """``after`` with its secrets kept: a new password or ZIP password replaces the old one, a
    ZIP password no longer needed is dropped, a secret no longer needed at all is deleted."""
    if patch.password is None and patch.encryption is None:
        return after
    current = deps.vault.get(before.secret_ref) if before.secret_ref else DestinationSecrets()
    secrets = current.model_copy(
        update={
            **({"password": patch.password} if patch.password is not None else {}),
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
    kind = destination.kind.value
    try:
        deps.probes[destination.kind].probe(destination, secrets)
    except DestinationProblem as problem:
        deps.metrics.add(Metric.DESTINATION_VERIFY_FAILED, dimensions={"kind": kind, "step": problem.step.value})
        return Verification(destination, False, deps.clock(), step=problem.step, message=problem.message)
    deps.metrics.add(Metric.DESTINATION_VERIFIED, dimensions={"kind": kind})
    return Verification(destination, True, deps.clock())
