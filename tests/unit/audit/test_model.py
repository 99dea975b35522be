"""The audit trail's chain (exports/audit/model.py): records chained per tenant and day, and a
verdict that names the first record that does not hold."""

from datetime import UTC, date, datetime, timedelta

import pytest

from exports.audit.events import cpu_seconds, file_delivery_event, mail_event, task_events
from exports.audit.model import GENESIS, AuditAction, AuditEvent, AuditRecord, after, record_hash, verify
from exports.audit.tenancy import Tenancy, load_tenancy
from exports.core.caller import Caller
from exports.core.deliveries import Delivery, DeliveryError, DeliveryStatus
from exports.core.task import ExportFormat, ExportResult, complete, new_task
from exports.declared.model import TenantPolicyDecl, TenantsDecl

AT = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)


def event(number: int, tenant: str = "acme", at: datetime = AT) -> AuditEvent:
    return AuditEvent(
        event_id=f"e{number}",
        tenant=tenant,
        action=AuditAction.DOWNLOAD,
        at=at,
        actor="alice",
        subject=f"exp_{number}",
        claims={"tenant_id": tenant},
        detail={"rows": number, "name": "Zoë 张"},
    )


def chain(count: int, tenant: str = "acme") -> list[AuditRecord]:
    records: list[AuditRecord] = []
    for number in range(1, count + 1):
        records.append(after(records[-1] if records else None, event(number, tenant)))
    return records


def test_a_days_records_are_numbered_from_one_each_naming_the_previous_hash() -> None:
    records = chain(3)

    assert [record.seq for record in records] == [1, 2, 3]
    assert records[0].prev_hash == GENESIS
    assert records[1].prev_hash == records[0].hash
    assert records[2].prev_hash == records[1].hash
    assert all(record.hash == record_hash(record.as_json()) for record in records)
    assert records[0].day == "2026-12-01" and records[0].at == "2026-12-01T09:30:00Z"


def test_a_stored_record_reads_back_as_it_was_written() -> None:
    record = chain(1)[0]

    assert AuditRecord.parse(record.text()) == record


def test_untouched_chains_of_several_days_verify() -> None:
    records = [r.as_json() for r in chain(3)] + [r.as_json() for r in chain(2, tenant="acme")]
    second_day = [{**values, "day": "2026-12-02"} for values in records[3:]]
    second_day = [{**values, "hash": record_hash(values)} for values in second_day]
    # Rechained as a day of its own: the second day's second record names its first's new hash.
    second_day[1] = {**second_day[1], "prev_hash": second_day[0]["hash"]}
    second_day[1]["hash"] = record_hash(second_day[1])

    verdict = verify(records[:3] + second_day)

    assert verdict.ok and (verdict.records, verdict.days) == (5, 2)


def test_a_changed_record_is_named() -> None:
    records = [record.as_json() for record in chain(4)]
    records[2] = {**records[2], "detail": {**records[2]["detail"], "rows": 1}}

    verdict = verify(records)

    assert not verdict.ok and verdict.broken is not None
    assert (verdict.broken.tenant, verdict.broken.day, verdict.broken.seq) == ("acme", "2026-12-01", 3)
    assert "does not match its hash" in verdict.broken.reason


def test_a_changed_record_with_its_hash_made_again_breaks_the_next_one() -> None:
    records = [record.as_json() for record in chain(4)]
    changed = {**records[1], "actor": "mallory"}
    records[1] = {**changed, "hash": record_hash(changed)}

    verdict = verify(records)

    assert verdict.broken is not None and verdict.broken.seq == 3
    assert "prev_hash" in verdict.broken.reason


@pytest.mark.parametrize(("removed", "named"), [(0, 2), (1, 3), (2, 4)])
def test_a_removed_record_is_found_where_it_is_missing(removed: int, named: int) -> None:
    records = [record.as_json() for record in chain(4)]
    del records[removed]

    verdict = verify(records)

    assert verdict.broken is not None and verdict.broken.seq == named
    assert "missing" in verdict.broken.reason


def test_a_days_last_records_removed_leave_a_shorter_chain_that_holds() -> None:
    # What the chain alone cannot show (docs/audit.md: pin each day's last hash elsewhere).
    records = [record.as_json() for record in chain(4)]

    assert verify(records[:3]).ok


def test_a_record_without_its_fields_is_named() -> None:
    records = [record.as_json() for record in chain(2)]
    records[1] = {"tenant": "acme", "day": "2026-12-01", "seq": 2}

    verdict = verify(records)

    assert verdict.broken is not None and verdict.broken.seq == 2 and "missing" in verdict.broken.reason


def tenancy() -> Tenancy:
    return Tenancy(
        tenants=TenantsDecl(
            defaults=TenantPolicyDecl(max_rows_per_day=1000),
            overrides={"acme": TenantPolicyDecl(audit_retention_days=30, max_schedules=2)},
        ),
        groups_claim="cognito:groups",
    )


def test_a_callers_tenant_and_admin_rights_come_from_their_token() -> None:
    admin = Caller("carol", {"custom:tenant_id": "initech", "cognito:groups": "[finance admin]"})
    member = Caller("alice", {"custom:tenant_id": "acme", "cognito:groups": "[finance]"})
    no_tenant = Caller("root", {"cognito:groups": ["admin"]})

    assert (tenancy().tenant_of(admin), tenancy().is_admin(admin)) == ("initech", True)
    assert (tenancy().tenant_of(member), tenancy().is_admin(member)) == ("acme", False)
    assert (tenancy().tenant_of(no_tenant), tenancy().is_admin(no_tenant)) == ("-", False)


def test_a_tenants_policy_is_its_override_over_the_defaults() -> None:
    acme, globex = tenancy().policy("acme"), tenancy().policy("globex")

    assert (acme.audit_retention_days, acme.max_rows_per_day, acme.max_schedules) == (30, 1000, 2)
    assert (globex.audit_retention_days, globex.max_rows_per_day, globex.max_schedules) == (400, 1000, None)
    # A day's records expire together, the retention after the day ends.
    assert tenancy().expires_at("globex", date(2026, 12, 1)) == datetime(2028, 1, 6, tzinfo=UTC)


def test_the_shipped_declaration_declares_the_demo_tenants() -> None:
    shipped = load_tenancy(None)

    assert shipped.tenants.claim == "custom:tenant_id"
    assert shipped.tenants.admin_group == "admin"
    assert shipped.policy("initech").audit_retention_days == 730
    assert shipped.policy("acme").audit_retention_days == 400


def test_an_export_makes_a_submitted_and_an_ended_event_with_its_usage() -> None:
    task = new_task(
        task_id="exp_1",
        user_id="alice",
        export_type="orders",
        format=ExportFormat.CSV,
        filters={"date_from": "2026-11-01"},
        now=AT,
        retention=timedelta(hours=24),
        caller={"tenant_id": "acme"},
        tenant="acme",
    )
    running = task.model_copy(update={"status": "RUNNING", "started_at": AT, "attempt": 1})
    result = ExportResult(
        key="results/exp_1/a.csv", bytes=2048, rows=10, sha256="ab" * 32, content_type="text/csv", file_name="a.csv"
    )
    done = complete(running, result, AT + timedelta(seconds=1769), timedelta(hours=24))

    submitted = task_events(task, None, 1024)
    ended = task_events(done, running, 1769)

    assert [e.action for e in submitted] == [AuditAction.EXPORT_SUBMITTED]
    assert submitted[0].claims == {"tenant_id": "acme"} and submitted[0].tenant == "acme"
    assert [e.action for e in ended] == [AuditAction.EXPORT_COMPLETED]
    assert ended[0].usage is not None
    assert (ended[0].usage.exports, ended[0].usage.rows, ended[0].usage.bytes) == (1, 10, 2048)
    assert ended[0].usage.cpu_seconds == cpu_seconds(done, 1769) == 1769.0
    assert ended[0].detail["sha256"] == "ab" * 32
    # The tenant's running count of active exports: one more at the submission, one less at the end.
    assert (dict(submitted[0].counts), dict(ended[0].counts)) == ({"active_tasks": 1}, {"active_tasks": -1})
    assert task_events(done, done, 1769) == []


def test_a_runs_mail_is_a_delivery_made_or_failed_recorded_once_per_outcome() -> None:
    run = new_task(
        task_id="exp_2",
        user_id="alice",
        export_type="orders",
        format=ExportFormat.CSV,
        filters={},
        now=AT,
        retention=timedelta(hours=24),
        caller={"tenant_id": "acme"},
        tenant="acme",
    ).model_copy(update={"schedule_id": "sch_1"})
    result = ExportResult(
        key="results/exp_2/a.csv", bytes=10, rows=1, sha256="cd" * 32, content_type="text/csv", file_name="a.csv"
    )
    done = complete(run.model_copy(update={"status": "RUNNING", "started_at": AT}), result, AT, timedelta(hours=24))
    link_until = AT + timedelta(hours=12)

    made = mail_event(done, ["finance@acme.example"], ["old@elsewhere.example"], AT, link_until, None)
    refused = mail_event(done, ["finance@acme.example"], [], AT, link_until, "SES refused the message")
    nobody = mail_event(done, [], ["old@elsewhere.example"], AT, None, None)

    assert (made.action, made.actor, made.tenant, made.claims) == (
        AuditAction.DELIVERY_MADE,
        "system",
        "acme",
        {"tenant_id": "acme"},
    )
    assert made.detail["destination"] == ["finance@acme.example"]
    assert made.detail["refused"] == ["old@elsewhere.example"]
    assert (made.detail["file"], made.detail["sha256"]) == ("results/exp_2/a.csv", "cd" * 32)
    assert made.detail["link_expires_at"] == "2026-12-01T21:30:00Z"
    assert (refused.action, refused.detail["error"]) == (AuditAction.DELIVERY_FAILED, "SES refused the message")
    assert (nobody.action, nobody.detail["error"]) == (
        AuditAction.DELIVERY_FAILED,
        "no recipient is allowed by the deployment",
    )
    # A mail refused, then sent on a retried delivery, leaves both records; a repeat of either, none.
    assert made.event_id != refused.event_id == nobody.event_id


def test_a_file_delivery_is_recorded_once_per_outcome_and_attempt_with_the_customers_error() -> None:
    run = new_task(
        task_id="exp_3",
        user_id="alice",
        export_type="orders",
        format=ExportFormat.CSV,
        filters={},
        now=AT,
        retention=timedelta(hours=24),
        caller={"tenant_id": "acme"},
        tenant="acme",
    )
    result = ExportResult(
        key="results/exp_3/a.csv", bytes=10, rows=1, sha256="ab" * 32, content_type="text/csv", file_name="a.csv"
    )
    done = complete(run.model_copy(update={"status": "RUNNING", "started_at": AT}), result, AT, timedelta(hours=24))
    error = DeliveryError(code="DESTINATION_UNREACHABLE", step="AUTH", message="the server refused our login as acme")
    failed = Delivery(
        destination_id="dst_1", status=DeliveryStatus.FAILED, attempts=6, remote_path="a.csv", error=error
    )
    # Delivered encrypted: the file at the destination is not the export's.
    delivered = Delivery(
        destination_id="dst_1",
        status=DeliveryStatus.DELIVERED,
        attempts=7,
        remote_path="a.csv.pgp",
        delivered_at=AT,
        sha256="ef" * 32,
        size_bytes=420,
    )

    lost = file_delivery_event(done, failed, "sftp", AT)
    made = file_delivery_event(done, delivered, "sftp", AT)

    assert (lost.action, lost.actor, lost.tenant) == (AuditAction.DELIVERY_FAILED, "system", "acme")
    assert lost.detail["channel"] == "destination" and lost.detail["kind"] == "sftp"
    assert lost.detail["error"] == {"code": "DESTINATION_UNREACHABLE", "step": "AUTH", "message": error.message}
    # Nothing arrived: no delivered file's hash, the export's file it was to be.
    assert (lost.detail["sha256"], lost.detail["bytes"], lost.detail["attempts"]) == (None, None, 6)
    assert (lost.detail["file"], lost.detail["export_sha256"]) == ("results/exp_3/a.csv", "ab" * 32)
    assert made.action is AuditAction.DELIVERY_MADE and made.detail["error"] is None
    # The delivered file's own hash and size, as the customer checks them; the export's beside them.
    assert (made.detail["sha256"], made.detail["bytes"], made.detail["export_sha256"]) == ("ef" * 32, 420, "ab" * 32)
    assert made.detail["delivered_at"] == "2026-12-01T09:30:00Z"
    # A repeat records nothing twice; the delivery retried on request that then succeeds is its own record.
    assert file_delivery_event(done, failed, "sftp", AT).event_id == lost.event_id != made.event_id
