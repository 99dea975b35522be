"""A task's deliveries, pure: the path template (what it may name, and that no value leaves its
directory), the states a delivery moves through, and the plan submit makes from the destinations
an export names (the caller's tenant's, usable, ACTIVE; another tenant's is as unknown as none)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from exports.core import deliveries as d
from exports.finishing.destinations.model import DestinationState
from exports.finishing.destinations.ports import DestinationNotFound
from exports.finishing.destinations.service import HostKeyNotConfirmed, delivery_plan
from tests.builders_destinations import HOST_KEY, destination, sftp_target
from tests.unit.finishing.destinations.test_service import ADMIN, deps

NOW = datetime(2026, 12, 6, 9, tzinfo=UTC)
ERROR = d.DeliveryError(code="DESTINATION_UNREACHABLE", message="the server is down", step="TCP")


@pytest.mark.parametrize("template", ["{file}", "{type}/{date}/{file}", "exports/{task_id}-{file}", "a.b/{date}_x"])
def test_a_template_of_known_placeholders_under_the_destination_is_taken(template: str) -> None:
    assert d.check_template(template) == template


@pytest.mark.parametrize(
    ("template", "says"),
    [
        ("{schedule}", "unknown placeholder {schedule}"),
        ("{file!r}", "unknown placeholder {file}"),
        ("{file:>9}", "unknown placeholder {file}"),
        ("{file", "unbalanced braces"),
        ("/abs/{file}", "relative"),
        ("../{file}", "relative"),
        ("a//{file}", "relative"),
        ("", "1 to 512"),
    ],
)
def test_a_template_that_names_more_or_leaves_its_directory_is_refused(template: str, says: str) -> None:
    with pytest.raises(d.TemplateError, match=says.replace("{", r"\{").replace("}", r"\}")):
        d.check_template(template)


def test_rendering_puts_each_value_in_one_segment_and_refuses_one_that_would_not_be() -> None:
    assert d.render("{type}/{date}/{task_id}-{file}", "orders", "2026-12-06", "exp_1", "o.csv") == (
        "orders/2026-12-06/exp_1-o.csv"
    )
    for file_name in ("../escape.csv", "a/b.csv", ".."):
        with pytest.raises(d.TemplateError):
            d.render("{file}", "orders", "2026-12-06", "exp_1", file_name)


def test_the_sidecar_is_what_sha256sum_checks() -> None:
    assert d.sha256_line("ab" * 32, "/upload/x/o.csv") == f"{'ab' * 32}  o.csv\n".encode()


def test_a_delivery_counts_its_attempts_keeps_its_last_error_and_clears_it_once_delivered() -> None:
    [first] = d.initial(("dst_1",))
    assert (first.status, first.attempts, first.ended) == (d.DeliveryStatus.PENDING, 0, False)

    failed_once = d.attempt_failed(first, ERROR, final=False, remote_path="/upload/o.csv")
    assert (failed_once.status, failed_once.attempts, failed_once.error) == (d.DeliveryStatus.PENDING, 1, ERROR)
    assert (failed_once.sha256, failed_once.size_bytes) == (None, None)
    delivered = d.delivered(failed_once, "/upload/o.csv", NOW, "ab" * 32, 10)
    assert (delivered.status, delivered.attempts, delivered.error, delivered.delivered_at) == (
        d.DeliveryStatus.DELIVERED,
        2,
        None,
        NOW,
    )
    # The delivered file's own hash and size (the encrypted file's when encrypted).
    assert (delivered.sha256, delivered.size_bytes) == ("ab" * 32, 10)
    # Ended deliveries stay as they are when the retries run out or the export had no file.
    assert d.given_up(delivered) == delivered == d.skipped(delivered)


def test_given_up_keeps_the_last_error_or_says_the_retries_ran_out() -> None:
    [pending] = d.initial(("dst_1",))
    assert d.given_up(pending).error == d.GIVEN_UP and d.given_up(pending).status is d.DeliveryStatus.FAILED
    tried = d.attempt_failed(pending, ERROR, final=False, remote_path=None)
    assert d.given_up(tried).error == ERROR
    assert d.skipped(pending).status is d.DeliveryStatus.SKIPPED


def test_a_failed_attempt_after_a_delivery_forgets_the_delivered_files_hash() -> None:
    # A delivery made again on request that fails holds no file of a known hash any more.
    [pending] = d.initial(("dst_1",))
    delivered = d.delivered(pending, "/upload/o.csv", NOW, "ab" * 32, 10)

    failed = d.attempt_failed(delivered, ERROR, final=True, remote_path=None)

    assert (failed.status, failed.sha256, failed.size_bytes) == (d.DeliveryStatus.FAILED, None, None)


def test_the_plan_names_the_tenant_and_the_template_of_usable_destinations() -> None:
    given = deps()
    given.store.create(destination(1), 10)
    given.store.create(destination(2), 10)
    ids = (destination(1).destination_id, destination(2).destination_id)

    plan = delivery_plan(ids, None, ADMIN, given)

    assert plan == d.DeliveryPlan(tenant="acme", destination_ids=ids, path_template=d.DEFAULT_PATH_TEMPLATE)
    assert delivery_plan((), None, ADMIN, given) is None


def test_another_tenants_destination_is_not_found_naming_its_place_as_for_none_at_all() -> None:
    given = deps()
    given.store.create(destination(1, tenant="initech"), 10)
    theirs, unknown = destination(1).destination_id, "dst_01JABCDEFGHJKMNPQRSTVWXYZ0"
    given.store.create(destination(2), 10)
    ours = destination(2).destination_id

    with pytest.raises(DestinationNotFound) as other_tenant:
        delivery_plan((ours, theirs), None, ADMIN, given)
    with pytest.raises(DestinationNotFound) as nowhere:
        delivery_plan((ours, unknown), None, ADMIN, given)

    assert other_tenant.value.field == nowhere.value.field == "destinations.1"
    assert other_tenant.value.message.replace(theirs, "ID") == nowhere.value.message.replace(unknown, "ID")


def test_a_destination_waiting_for_its_host_key_is_a_conflict_naming_its_place() -> None:
    given = deps()
    given.store.create(destination(1), 10)
    unconfirmed = sftp_target(host_key_fingerprint=None, offered_host_key_fingerprint=HOST_KEY)
    given.store.create(destination(2, target=unconfirmed, state=DestinationState.HOST_KEY_UNCONFIRMED), 10)
    ids = (destination(1).destination_id, destination(2).destination_id)

    with pytest.raises(HostKeyNotConfirmed) as waiting:
        delivery_plan(ids, None, ADMIN, given)

    assert waiting.value.field == "destinations.1"
    assert "/confirm" in waiting.value.message


def test_only_a_failed_delivery_is_retried_on_request_in_the_next_round() -> None:
    [pending] = d.initial(("dst_01JABCDEFGHJKMNPQRSTVWXYZ0",))
    failed = d.attempt_failed(pending, ERROR, final=True, remote_path="/upload/f.csv")
    delivered = d.delivered(pending, "/upload/f.csv", NOW, "a" * 64, 1)

    assert d.retry_refusal(failed) is None
    assert d.retry_refusal(pending) is d.RetryRefusal.IN_PROGRESS
    assert d.retry_refusal(delivered) is d.RetryRefusal.ALREADY_DELIVERED
    assert d.retry_refusal(d.skipped(pending)) is d.RetryRefusal.NO_FILE
    retried = d.retried(failed)
    assert (retried.status, retried.requested_retries, retried.attempts) == (d.DeliveryStatus.PENDING, 1, 1)
    assert (retried.error, retried.remote_path) == (ERROR, "/upload/f.csv")
    with pytest.raises(ValueError, match="DELIVERED"):
        d.retried(delivered)


def test_a_round_attempts_only_its_own_pending_deliveries() -> None:
    first, second = d.initial(("dst_01JABCDEFGHJKMNPQRSTVWXYZ0", "dst_01JABCDEFGHJKMNPQRSTVWXYZ1"))
    retried = d.retried(d.attempt_failed(first, ERROR, final=True, remote_path=None))

    # The workflow's round (0): the destinations never retried on request, still pending.
    assert [d.owned_by(x, 0) for x in (retried, second)] == [False, True]
    # The first retry's round: its destination only, and not once it ended.
    assert d.owned_by(retried, 1, retried.destination_id)
    assert not d.owned_by(retried, 1, second.destination_id)
    assert not d.owned_by(d.given_up(retried), 1, retried.destination_id)
