"""Feeds on `make run`'s stack, over real HTTP and the embedded PostgreSQL, with the schedule
loop's clock under the test's control (``EXPORTS_LOCAL_CLOCK=manual``): the demo type
``order_changes`` reads ``orders.updated_at``; a trigger keeps every version the test writes in
a history table, and the files of the feed's runs are checked against it. Empty runs skipped,
the latest file for its owner only, and a permalink that stops at once when revoked."""

from __future__ import annotations

import csv
import io
import itertools
import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
import requests

from tests.receiver import receiver
from tests.stack_process import Stack, running_stack

pytestmark = pytest.mark.e2e

TENANT = "acme"  # alice's (local-users.toml)
HISTORY = """
CREATE TABLE order_history (order_id text, updated_at timestamptz, status text, PRIMARY KEY (order_id, updated_at));
CREATE FUNCTION keep_history() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO order_history VALUES (NEW.order_id, NEW.updated_at, NEW.status);
    RETURN NEW;
END $$;
CREATE TRIGGER orders_history AFTER INSERT OR UPDATE ON orders FOR EACH ROW EXECUTE FUNCTION keep_history();
"""


class Clock:
    """The schedule loop's clock, as the test moves it (wall time plus what it advanced)."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.offset = timedelta()

    def now(self) -> datetime:
        return (datetime.now(UTC) + self.offset).replace(microsecond=0)

    def advance(self, seconds: float) -> list[dict[str, Any]]:
        answer = api(self.stack, "POST", "/local/clock", json={"advance_sec": seconds})
        assert answer.status_code == 200, answer.text
        self.offset += timedelta(seconds=seconds)
        return answer.json()["fired"]

    def arrival(self, seconds: float, schedule_id: str) -> list[dict[str, Any]]:
        """Advance ``seconds``, then on until the schedule's firing has arrived: it arrives at an
        instant of its own within its flexible window (two minutes for every 10 minutes)."""
        fired = self.advance(seconds)
        for _ in range(5):
            if any(entry["schedule_id"] == schedule_id for entry in fired):
                break
            fired += self.advance(30)
        return fired


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with running_stack(demo_orders=200, postgres=True, environment={"EXPORTS_LOCAL_CLOCK": "manual"}) as running:
        with psycopg.connect(running.database_uri, autocommit=True) as conn:
            conn.execute(HISTORY)
        yield running


@pytest.fixture(scope="module")
def clock(stack: Stack) -> Clock:
    return Clock(stack)


def api(stack: Stack, method: str, path: str, user: str = "alice", **kwargs: Any) -> requests.Response:
    return requests.request(method, f"{stack.url}{path}", headers=stack.headers(user), timeout=30, **kwargs)


def sql(stack: Stack, statement: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(stack.database_uri, autocommit=True) as conn:
        cursor = conn.execute(statement, params)
        return cursor.fetchall() if cursor.description else []


def ended(stack: Stack, task_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        view = api(stack, "GET", f"/v1/exports/{task_id}").json()
        if view["status"] not in ("PENDING", "RUNNING"):
            return view
        assert time.monotonic() < deadline, view
        time.sleep(0.2)


def fired_run(fired: list[dict[str, Any]], schedule_id: str) -> str:
    [entry] = [entry for entry in fired if entry["schedule_id"] == schedule_id]
    assert entry["outcome"] == "created", entry
    return str(entry["task_id"])


def recorded(stack: Stack, schedule_id: str, task_id: str) -> dict[str, Any]:
    """The schedule once the run's end reached it (the callback function records it)."""
    deadline = time.monotonic() + 60
    while True:
        view = api(stack, "GET", f"/v1/schedules/{schedule_id}").json()
        if (view["last_run"] or {}).get("task_id") == task_id:
            return view
        assert time.monotonic() < deadline, view
        time.sleep(0.2)


def change(stack: Stack, clock: Clock, order_id: str, status: str, *, new: bool = False) -> None:
    """Insert or update one of alice's orders, its updated_at the loop's now (as a trigger at
    commit would set it)."""
    at = clock.now()
    if new:
        sql(
            stack,
            "INSERT INTO orders (order_id, tenant_id, order_date, created_at, customer_id, customer_name, status,"
            " item_count, amount, currency, updated_at)"
            " VALUES (%s, %s, %s, %s, 'C-1', 'Feed Test', %s, 1, 10.00, 'EUR', %s)",
            order_id,
            TENANT,
            at.date(),
            at,
            status,
            at,
        )
    else:
        sql(stack, "UPDATE orders SET status = %s, updated_at = %s WHERE order_id = %s", status, at, order_id)


def file_rows(view: dict[str, Any]) -> list[tuple[str, datetime]]:
    body = requests.get(view["download_url"], timeout=10).content.decode("utf-8-sig")
    rows = list(csv.DictReader(io.StringIO(body, newline="")))
    return [(row["Order ID"], datetime.fromisoformat(row["Changed at (UTC)"]).replace(tzinfo=UTC)) for row in rows]


def window(view: dict[str, Any]) -> tuple[datetime, datetime]:
    filters = view["filters"]
    return datetime.fromisoformat(filters["changed_from"]), datetime.fromisoformat(filters["changed_to"])


def test_a_feed_sends_every_change_once_across_a_failed_run_and_a_pause(stack: Stack, clock: Clock) -> None:
    existing = [row[0] for row in sql(stack, "SELECT order_id FROM orders WHERE tenant_id = %s ORDER BY 1", TENANT)]
    body = {"export_type": "order_changes", "filters": {"changed_from": "since_last_run"}, "every": {"minutes": 10}}
    created = api(stack, "POST", "/v1/schedules", json=body)
    assert created.status_code == 201, created.text
    schedule_id = created.json()["schedule_id"]
    tasks: list[str] = []

    def run(seconds: float) -> dict[str, Any]:
        task_id = fired_run(clock.arrival(seconds, schedule_id), schedule_id)
        tasks.append(task_id)
        return ended(stack, task_id)

    # Run 1, at its creation (a rate fires at its start): nothing changed since.
    assert run(0)["rows"] == 0
    # Run 2: inserts, updates, a row updated twice.
    change(stack, clock, "FEED-1", "pending", new=True)
    change(stack, clock, "FEED-2", "pending", new=True)
    change(stack, clock, existing[0], "refunded")
    change(stack, clock, existing[1], "shipped")
    clock.offset += timedelta(seconds=1)
    change(stack, clock, existing[1], "delivered")
    second_id = fired_run(clock.arrival(600, schedule_id), schedule_id)
    tasks.append(second_id)
    # Changed while run 2 runs: after its window's end, so in a later run's.
    change(stack, clock, "FEED-1", "paid")
    change(stack, clock, existing[2], "cancelled")
    assert ended(stack, second_id)["status"] == "COMPLETED"
    recorded(stack, schedule_id, second_id)
    # Run 3 fails (its table is away): the watermark stays.
    change(stack, clock, existing[3], "paid")
    change(stack, clock, "FEED-3", "pending", new=True)
    sql(stack, "ALTER TABLE orders RENAME TO orders_away")
    try:
        failed = run(600)
    finally:
        sql(stack, "ALTER TABLE orders_away RENAME TO orders")
    assert failed["status"] == "FAILED", failed
    watermark = recorded(stack, schedule_id, failed["task_id"])["watermark"]
    assert datetime.fromisoformat(watermark) == window(ended(stack, second_id))[1]
    # Paused over a firing, then resumed: the changes meanwhile go in the next run.
    assert api(stack, "PATCH", f"/v1/schedules/{schedule_id}", json={"state": "PAUSED"}).status_code == 200
    change(stack, clock, "FEED-2", "paid")
    change(stack, clock, existing[0], "paid")
    assert [entry for entry in clock.advance(600) if entry["schedule_id"] == schedule_id] == []
    assert api(stack, "PATCH", f"/v1/schedules/{schedule_id}", json={"state": "ACTIVE"}).status_code == 200
    fourth = run(600)
    assert fourth["status"] == "COMPLETED"
    recorded(stack, schedule_id, fourth["task_id"])
    # Run 5.
    change(stack, clock, existing[4], "shipped")
    change(stack, clock, "FEED-4", "pending", new=True)
    fifth = run(600)
    view = recorded(stack, schedule_id, fifth["task_id"])

    runs = [ended(stack, task_id) for task_id in tasks]
    assert [r["status"] for r in runs] == ["COMPLETED", "COMPLETED", "FAILED", "COMPLETED", "COMPLETED"]
    completed = [r for r in runs if r["status"] == "COMPLETED"]
    # The windows of the COMPLETED runs follow each other without a gap; the failed run's span is
    # covered by the next one; the watermark is the last run's end.
    spans = [window(r) for r in completed]
    assert all(earlier[1] == later[0] for earlier, later in itertools.pairwise(spans))
    assert datetime.fromisoformat(view["watermark"]) == spans[-1][1] and view["feed_run"] is None
    sent: list[tuple[str, datetime]] = []
    for r, (start, end) in zip(completed, spans, strict=True):
        rows = file_rows(r)
        assert all(start <= at < end for _, at in rows), (r["task_id"], rows, start, end)
        sent.extend(rows)
    history = [(order_id, at) for order_id, at, _ in sql(stack, "SELECT * FROM order_history ORDER BY 2")]
    latest_of = {order_id: at for order_id, at in history}
    # No duplicate, nothing that never was, and no gap: each version is sent, or a later
    # version of its row is; every row's last version is sent.
    assert len(sent) == len(set(sent)) and set(sent) <= set(history)
    for order_id, at in history:
        assert (order_id, at) in sent or any(o == order_id and a > at for o, a in sent), (order_id, at)
    assert set(latest_of.items()) <= set(sent)
    # The row updated twice before run 2 was sent once, in its last version.
    assert [a for o, a in sent if o == existing[1]] == [latest_of[existing[1]]]
    assert len(latest_of) == 9


def test_an_empty_run_skipped_sends_nothing_and_the_next_run_sends_normally(stack: Stack, clock: Clock) -> None:
    with receiver([204]) as hook:
        body = {
            "export_type": "order_changes",
            "filters": {"changed_from": "since_last_run"},
            "every": {"minutes": 10},
            "when_empty": "skip",
            "recipients": ["feeds@acme.example"],
            "callback_url": hook.url,
        }
        created = api(stack, "POST", "/v1/schedules", json=body)
        assert created.status_code == 201, created.text
        schedule_id = created.json()["schedule_id"]
        assert created.json()["when_empty"] == "skip"

        # The API stamps the schedule with wall time, behind the loop's clock: the first run
        # catches up with the earlier tests' changes; the next finds none.
        ended(stack, fired_run(clock.arrival(0, schedule_id), schedule_id))
        empty = ended(stack, fired_run(clock.arrival(600, schedule_id), schedule_id))
        change(stack, clock, "FEED-SKIP", "pending", new=True)
        full = ended(stack, fired_run(clock.arrival(600, schedule_id), schedule_id))
        calls = {json.loads(call.body)["data"]["task_id"]: json.loads(call.body)["data"] for call in hook.wait_for(3)}

    assert (empty["status"], empty["rows"], empty["download_url"], empty["file_name"]) == ("COMPLETED", 0, None, None)
    data = calls[empty["task_id"]]
    assert (data["empty"], data["skipped"], data["download_url"]) == (True, True, None)
    later = calls[full["task_id"]]
    assert (later["empty"], later["skipped"], later["rows"]) == (False, False, 1) and later["download_url"]
    assert api(stack, "GET", f"/v1/exports/{empty['task_id']}/download").status_code == 409
    view = recorded(stack, schedule_id, full["task_id"])
    assert view["latest_task_id"] == full["task_id"]
    # The runs with rows were mailed, the empty one was not.
    deadline = time.monotonic() + 30
    while not (
        mail := [m for m in api(stack, "GET", "/local/mailbox").json()["items"] if full["task_id"] in m["text"]]
    ):
        assert time.monotonic() < deadline, "the run with rows was not mailed"
        time.sleep(0.3)
    assert "1 rows" in mail[0]["subject"]
    assert empty["task_id"] not in json.dumps(api(stack, "GET", "/local/mailbox").json())


def test_latest_is_the_owners_newest_file_and_a_revoked_permalink_stops_at_once(stack: Stack, clock: Clock) -> None:
    body = {"export_type": "order_changes", "filters": {"changed_from": "since_last_run"}, "every": {"minutes": 10}}
    schedule_id = api(stack, "POST", "/v1/schedules", json=body).json()["schedule_id"]
    nothing = api(stack, "GET", f"/v1/schedules/{schedule_id}/latest", allow_redirects=False)
    assert nothing.status_code == 404 and nothing.json()["error"]["code"] == "NO_LATEST_FILE"
    first = ended(stack, fired_run(clock.arrival(0, schedule_id), schedule_id))
    recorded(stack, schedule_id, first["task_id"])
    change(stack, clock, "FEED-LATEST", "pending", new=True)
    second = ended(stack, fired_run(clock.arrival(600, schedule_id), schedule_id))
    recorded(stack, schedule_id, second["task_id"])

    mine = api(stack, "GET", f"/v1/schedules/{schedule_id}/latest", allow_redirects=False)
    assert mine.status_code == 302 and mine.headers["Cache-Control"] == "no-store"
    newest = requests.get(mine.headers["Location"], timeout=10).content.decode("utf-8-sig")
    assert "FEED-LATEST" in newest and first["task_id"] != second["task_id"]
    theirs = api(stack, "GET", f"/v1/schedules/{schedule_id}/latest", user="bob", allow_redirects=False)
    assert theirs.status_code == 404 and theirs.json()["error"]["code"] == "SCHEDULE_NOT_FOUND"
    assert api(stack, "POST", f"/v1/schedules/{schedule_id}/permalink", user="bob").status_code == 404

    made = api(stack, "POST", f"/v1/schedules/{schedule_id}/permalink")
    assert made.status_code == 201, made.text
    url = made.json()["url"]
    assert url.startswith(f"{stack.url}/v1/permalinks/{schedule_id}?key=")
    assert api(stack, "GET", f"/v1/schedules/{schedule_id}").json()["permalink"] is True
    open_link = requests.get(url, timeout=10, allow_redirects=False)  # no token
    assert open_link.status_code == 302
    assert "FEED-LATEST" in requests.get(open_link.headers["Location"], timeout=10).content.decode("utf-8-sig")
    wrong = requests.get(url[:-3] + "abc", timeout=10, allow_redirects=False)
    assert wrong.status_code == 404

    assert api(stack, "DELETE", f"/v1/schedules/{schedule_id}/permalink").status_code == 204
    revoked = requests.get(url, timeout=10, allow_redirects=False)
    assert revoked.status_code == 404 and revoked.json()["error"]["code"] == "SCHEDULE_NOT_FOUND"


def test_since_last_run_on_a_type_without_a_change_column_is_refused(stack: Stack) -> None:
    body = {"export_type": "orders", "filters": {"date_from": "since_last_run"}, "every": {"minutes": 10}}
    refused = api(stack, "POST", "/v1/schedules", json=body)
    assert refused.status_code == 422
    assert refused.json()["error"]["field"] == "filters.date_from"
