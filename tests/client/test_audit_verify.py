"""The client's chain check (exports_client.audit) agrees with the service's (exports.audit.model)
on every record the service writes: the two are written apart, so an auditor's verdict does not
rest on the service's code."""

from datetime import UTC, datetime, timedelta

import pytest

from exports.audit import model
from exports_client import audit as client_audit

AT = datetime(2026, 12, 3, 8, 0, tzinfo=UTC)


def records(count: int) -> list[dict]:
    chain: list[model.AuditRecord] = []
    for number in range(1, count + 1):
        event = model.AuditEvent(
            event_id=f"exp_{number}#1",
            tenant="acme",
            action=model.AuditAction.EXPORT_COMPLETED,
            at=AT + timedelta(seconds=number),
            actor="system",
            subject=f"exp_{number}",
            claims={"tenant_id": "acme", "groups": ["finance"]},
            detail={"rows": number * 1000, "sha256": "ab" * 32, "filters": {"note": "Müller ✓"}},
        )
        chain.append(model.after(chain[-1] if chain else None, event))
    return [record.as_json() for record in chain]


def test_an_untouched_chain_holds_for_both_and_the_client_gives_the_days_end() -> None:
    chain = records(5)

    verdict = client_audit.verify(chain)

    assert verdict.ok and model.verify(chain).ok
    assert verdict.ends == {("acme", "2026-12-03"): (5, chain[-1]["hash"])}


@pytest.mark.parametrize(
    "change",
    [
        lambda chain: chain[2]["detail"].update(rows=1),
        lambda chain: chain.pop(1),
        lambda chain: chain.insert(1, chain.pop(3)),
        lambda chain: chain[3].update(prev_hash=model.GENESIS),
    ],
)
def test_both_name_the_same_first_broken_record(change) -> None:
    chain = records(5)
    change(chain)

    server, client = model.verify(chain), client_audit.verify(chain)

    assert server.broken is not None and client.broken is not None
    assert (client.broken.tenant, client.broken.day, client.broken.seq) == (
        server.broken.tenant,
        server.broken.day,
        server.broken.seq,
    )
    assert client.broken.reason == server.broken.reason
