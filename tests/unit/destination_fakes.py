"""In-memory destination store and secret vault: the contract tests
(tests/contract/test_destination_contracts.py) run the same cases against these and the moto-backed
adapters, so they cannot drift."""

from __future__ import annotations

import threading
from pathlib import Path

from exports.core.errors import ConditionFailed, InvalidRequest
from exports.finishing.destinations.kind import KindAdapter, Made, SpecBase, TargetBase
from exports.finishing.destinations.model import Destination
from exports.finishing.destinations.ports import DestinationLimitReached, DestinationPage, SecretMissing
from exports.finishing.destinations.problems import DestinationProblem
from exports.finishing.destinations.secrets import DestinationSecrets


class FakeDestinationStore:
    """:class:`exports.finishing.destinations.ports.DestinationStore` in memory (thread-safe, conditional)."""

    def __init__(self) -> None:
        self.destinations: dict[tuple[str, str], Destination] = {}
        self.counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def create(self, destination: Destination, max_per_tenant: int) -> None:
        key = (destination.tenant, destination.destination_id)
        with self._lock:
            if self.counts.get(destination.tenant, 0) >= max_per_tenant:
                raise DestinationLimitReached(max_per_tenant)
            if key in self.destinations:
                raise ConditionFailed(f"destination {destination.destination_id} exists")
            self.destinations[key] = destination
            self.counts[destination.tenant] = self.counts.get(destination.tenant, 0) + 1

    def get(self, tenant: str, destination_id: str) -> Destination | None:
        return self.destinations.get((tenant, destination_id))

    def list_for_tenant(self, tenant: str, limit: int, cursor: str | None) -> DestinationPage:
        after = None
        if cursor is not None:
            owner, _, after = cursor.partition("/")
            if owner != tenant or not after:
                raise InvalidRequest("next_token is not valid", field="next_token")
        ours = sorted(
            (d for (t, i), d in self.destinations.items() if t == tenant and (after is None or i < after)),
            key=lambda d: d.destination_id,
            reverse=True,
        )
        page = ours[:limit]
        more = len(ours) > limit
        return DestinationPage(page, f"{tenant}/{page[-1].destination_id}" if more and page else None)

    def replace(self, before: Destination, after: Destination) -> Destination:
        if (after.tenant, after.destination_id) != (before.tenant, before.destination_id):
            raise ValueError("a replacement keeps the tenant and the id")
        key = (before.tenant, before.destination_id)
        with self._lock:
            stored = self.destinations.get(key)
            if stored is None or stored.version != before.version:
                raise ConditionFailed(f"destination {before.destination_id} changed meanwhile")
            written = after.model_copy(update={"version": before.version + 1})
            self.destinations[key] = written
            return written

    def delete(self, destination: Destination) -> None:
        with self._lock:
            if self.destinations.pop((destination.tenant, destination.destination_id), None) is not None:
                self.counts[destination.tenant] -= 1


class FakeSecretVault:
    """:class:`exports.finishing.destinations.ports.SecretVault` in memory."""

    def __init__(self) -> None:
        self.secrets: dict[str, str] = {}

    def put(self, destination_id: str, secrets: DestinationSecrets) -> str:
        ref = f"fake-secret/{destination_id}"
        self.secrets[ref] = secrets.stored()
        return ref

    def get(self, secret_ref: str) -> DestinationSecrets:
        if secret_ref not in self.secrets:
            raise SecretMissing("the destination's credentials are gone; set them again", secret_ref=secret_ref)
        return DestinationSecrets.from_stored(self.secrets[secret_ref])

    def delete(self, secret_ref: str) -> None:
        self.secrets.pop(secret_ref, None)


class FakeHostKeys:
    """:class:`exports.finishing.destinations.kinds.sftp.HostKeys` answering one fingerprint, or a problem."""

    def __init__(self, fingerprint: str, problem: DestinationProblem | None = None) -> None:
        self.fingerprint = fingerprint
        self.problem = problem

    def fetch(self, host: str, port: int) -> str:
        if self.problem is not None:
            raise self.problem
        return self.fingerprint


class ProbedKind:
    """A kind's real adapter for making targets, whose probe is recorded (or fails) instead of
    reaching a server; it never delivers."""

    def __init__(self, adapter: KindAdapter, problem: DestinationProblem | None = None) -> None:
        self._adapter = adapter
        self.problem = problem
        self.probed: list[tuple[str, TargetBase, DestinationSecrets | None]] = []

    def make(self, spec: SpecBase, destination_id: str, secrets: DestinationSecrets) -> Made:
        return self._adapter.make(spec, destination_id, secrets)

    def probe(self, destination_id: str, target: TargetBase, secrets: DestinationSecrets | None) -> None:
        self.probed.append((destination_id, target, secrets))
        if self.problem is not None:
            raise self.problem

    def put(
        self,
        destination_id: str,
        target: TargetBase,
        secrets: DestinationSecrets | None,
        local: Path,
        remote: str,
        sha256: str,
    ) -> None:
        raise AssertionError("the service never delivers")
