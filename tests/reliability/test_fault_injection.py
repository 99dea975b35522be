"""Hundreds of tasks through the real handlers on moto while faults hit them at random.

A simulator, not a sleep-and-hope test: one loop submits tasks through the API function, plays
SQS's event source for the worker function (batches of one to three messages, acknowledged or
let go like Lambda does) and cancels tasks, while seeded faults strike: DynamoDB and S3
throttling, worker exceptions mid-export, the process dying after the terminal write (before
the workflow hears of it and before the message is acknowledged), duplicate deliveries, cancels
and deadlines landing mid-export, and a callback receiver that flaps. The lifecycle workflow runs
for real (moto's Step Functions, our lifecycle and callback functions), with its retry waits
compressed.

Then the promise is checked for every task that got a ``202``: exactly one terminal state (from
the table's stream of changes), at most one result object and only for COMPLETED tasks, no open
multipart upload, quota counters back to zero, no lost and no premature callback, and the API
shows the same thing as the table.

Replay a failure with ``EXPORTS_FAULT_SEED=<seed printed in the failure>``; a longer run with
``EXPORTS_FAULT_TASKS`` (up to 270 tasks; ``make test`` runs 60).
"""

import hashlib
import json
import os
import random
import socket
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import pytest
from types_boto3_sqs.type_defs import MessageTypeDef
from types_boto3_stepfunctions.type_defs import ExecutionListItemTypeDef

from exports.config.env import Env
from exports.config.retry import CALLBACK_RETRY
from exports.domain.status import TERMINAL, TRANSITIONS, TaskStatus
from functions.lifecycle import handler as lifecycle
from functions.submit.handler import lambda_handler as api_handler
from local_stack.demo_orders import demo_orders
from local_stack.embedded_aws import REGION, Resources, put_items
from tests.builders import FakeContext, http_event
from tests.integration.conftest import SEED_DAY
from tests.polling import poll_until
from tests.reliability.conftest import (
    StatusHistory,
    make_faults,
    objects_by_task,
    open_uploads,
    quota,
    status_history,
    task_records,
)
from tests.reliability.faults import LANE_NAMES, Faults, Lanes, crash

SEED = int(os.environ.get("EXPORTS_FAULT_SEED", "20261129"))
TASKS = int(os.environ.get("EXPORTS_FAULT_TASKS", "60"))
USERS = 8
MAX_STEPS = 6000
TIME_BUDGET_SEC = 150
# Deliveries: how often each fault strikes. The rarer ones are set to strike a few times in
# make test's 60 tasks.
THROTTLE_RATE = 0.04
API_THROTTLE_RATE = 0.03
CRASH_RATE = 0.08
CANCEL_MID_EXPORT_RATE = 0.08
EXPIRE_MID_EXPORT_RATE = 0.06
DUPLICATE_RATE = 0.08
DIE_BEFORE_ACK_RATE = 0.08
CANCEL_RATE = 0.06
DIE_AFTER_END_SHARE = 0.08
CALLBACK_SHARE = 0.35
# Where a worker exception strikes inside an export, and where a cancel or the deadline lands
# (the last: just before the worker's own terminal write).
EXPORT_POINTS = (
    ("dynamodb", "Query"),
    ("s3", "CreateMultipartUpload"),
    ("s3", "UploadPart"),
    ("s3", "CompleteMultipartUpload"),
)
RACE_POINTS = (*EXPORT_POINTS, ("dynamodb", "TransactWriteItems"))


# A callback receiver that flaps -----------------------------------------------------------------

RESET = 0  # close the connection without an answer


@dataclass
class Hook:
    task_id: str
    status: str
    seq: int
    webhook_id: str
    answer: int


@dataclass
class FlappingReceiver:
    """Answers each callback at random: mostly 204, often 5xx or 429, sometimes a dropped
    connection, rarely a final 410."""

    rng: random.Random
    url: str = ""
    calls: list[Hook] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self) -> int:
        with self.lock:
            return self.rng.choices([204, 500, 503, 429, RESET, 410], weights=[55, 14, 10, 6, 10, 5])[0]


@pytest.fixture
def flapping_receiver() -> Iterator[FlappingReceiver]:
    script = FlappingReceiver(random.Random(SEED + 1))

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            answer = script.answer()
            with script.lock:
                script.calls.append(
                    Hook(
                        body["data"]["task_id"],
                        body["data"]["status"],
                        body["data"]["callback_seq"],
                        self.headers["webhook-id"],
                        answer,
                    )
                )
            if answer == RESET:
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            self.send_response(answer)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    script.url = f"http://127.0.0.1:{server.server_port}/hooks"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield script
    finally:
        server.shutdown()
        server.server_close()


# The simulation -------------------------------------------------------------------------------


@dataclass
class Plan:
    """One export a user will ask for, and what will go wrong with it."""

    user: str
    body: dict[str, Any]
    die_after_end: bool
    attempts: int = 0


@dataclass
class Simulation:
    resources: Resources
    faults: Faults
    lanes: Lanes
    rng: random.Random
    receiver: FlappingReceiver
    plans: list[Plan] = field(default_factory=list)
    promised: dict[str, Plan] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)
    died_after_end: set[str] = field(default_factory=set)
    cancelled_ok: set[str] = field(default_factory=set)
    log: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    violations: list[str] = field(default_factory=list)
    outcomes: Counter = field(default_factory=Counter)
    steps: int = 0
    history: StatusHistory | None = None

    # Actors ---------------------------------------------------------------------------------

    def submit_some(self) -> None:
        burst = [self.plans.pop(0) for _ in range(min(len(self.plans), self.rng.randint(1, 6)))]
        accepted = []
        for plan in burst:
            plan.attempts += 1
            with self.faults.throttling(API_THROTTLE_RATE):
                result = api_handler(http_event("POST", "/v1/exports", plan.body, user=plan.user), FakeContext())
            status = result["statusCode"]
            self.outcomes[f"submit {status}"] += 1
            if status == 202:
                task_id = json.loads(result["body"])["task_id"]
                self.promised[task_id] = plan
                self.log[task_id].append(f"step {self.steps}: 202")
                accepted.append(task_id)
            elif status in (429, 503):
                if "Retry-After" not in (result.get("headers") or {}):
                    self.violations.append(f"submit answered {status} without Retry-After")
                if plan.attempts < 30:
                    self.plans.append(plan)
                elif _code(result) != "WOULD_TIME_OUT":
                    self.violations.append(f"submit answered {status} 30 times: {result['body']}")
                else:
                    # Admission by deadline: a short deadline behind a slow lane may never fit;
                    # the client gives up, as the SDK does after its wait (docs/capacity.md).
                    self.outcomes["submit gave up"] += 1
            else:
                self.violations.append(f"submit answered {status}: {result['body']}")
        self._learn_tokens(accepted)

    def _learn_tokens(self, task_ids: list[str]) -> None:
        """Wait until each new task's workflow stored its token (the workflow starts at submit)."""
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        deadline = time.monotonic() + 20
        waiting = set(task_ids)
        while waiting and time.monotonic() < deadline:
            for task_id in list(waiting):
                item = dynamodb.get_item(
                    TableName=self.resources.tasks_table, Key={"task_id": {"S": task_id}}, ConsistentRead=True
                ).get("Item", {})
                if "lifecycle_token" in item:
                    self.tokens[task_id] = item["lifecycle_token"]["S"]
                    waiting.discard(task_id)
            if waiting:
                time.sleep(0.01)
        for task_id in waiting:
            self.violations.append(f"{task_id}: its workflow never stored a token")

    def cancel_one(self) -> None:
        candidates = sorted(self.promised)
        if not candidates:
            return
        task_id = self.rng.choice(candidates)
        user = self.promised[task_id].user
        with self.faults.throttling(API_THROTTLE_RATE):
            result = api_handler(http_event("POST", f"/v1/exports/{task_id}/cancel", user=user), FakeContext())
        self.outcomes[f"cancel {result['statusCode']}"] += 1
        self.log[task_id].append(f"step {self.steps}: cancel -> {result['statusCode']}")
        if result["statusCode"] == 200:
            self.cancelled_ok.add(task_id)
        elif result["statusCode"] not in (409, 503):
            self.violations.append(f"{task_id}: cancel answered {result['statusCode']}: {result['body']}")

    def deliver(self) -> bool:
        """One worker invocation on the next messages of a random lane; False if all lanes are empty."""
        for lane in self.rng.sample(LANE_NAMES, len(LANE_NAMES)):
            messages = self.lanes.receive(lane, self.rng.randint(1, 3))
            if messages:
                break
        else:
            return False
        task_ids = [_task_id_of(m) for m in messages]
        for task_id in task_ids:
            self.log[task_id].append(
                f"step {self.steps}: delivered (receive {m_count(messages, task_id)}) with {task_ids}"
            )
        self._arm(task_ids)
        with self.faults.throttling(THROTTLE_RATE):
            delivery = self.lanes.invoke(lane, messages)
            first_try_failed = set(delivery.failed)
            receive_count = max(int(m["Attributes"]["ApproximateReceiveCount"]) for m in messages)
            if not delivery.died and receive_count < 3 and self.rng.random() < DUPLICATE_RATE:
                self.outcomes["duplicate delivery"] += 1
                self.lanes.invoke(lane, messages)
        self.faults.disarm()
        delivery.failed = first_try_failed
        acknowledge = not (receive_count < 3 and self.rng.random() < DIE_BEFORE_ACK_RATE)
        if delivery.died:
            self.outcomes["worker died"] += 1
        elif not acknowledge:
            self.outcomes["died before ack"] += 1
        self.lanes.settle(lane, delivery, acknowledge=acknowledge and not delivery.died)
        return True

    def _arm(self, task_ids: list[str]) -> None:
        """Choose what goes wrong in this invocation."""
        for task_id in task_ids:
            plan = self.promised.get(task_id)
            if plan and plan.die_after_end and task_id not in self.died_after_end and task_id in self.tokens:
                token = self.tokens[task_id]

                def died_after_end(
                    service: str, operation: str, params: dict[str, Any], task_id: str = task_id
                ) -> None:
                    from tests.reliability.faults import WorkerDied

                    self.died_after_end.add(task_id)
                    self.log[task_id].append(f"step {self.steps}: worker died after the terminal write")
                    raise WorkerDied("after the terminal write, before telling the workflow")

                def carries_token(service: str, operation: str, params: dict[str, Any], token: str = token) -> bool:
                    return params.get("taskToken") == token

                self.faults.once("stepfunctions", "SendTaskSuccess", died_after_end, when=carries_token)
        target = task_ids[0]
        roll = self.rng.random()
        service, operation = self.rng.choice(EXPORT_POINTS if roll < CRASH_RATE else RACE_POINTS)
        if roll < CRASH_RATE:
            self.outcomes[f"crash at {operation}"] += 1
            self.faults.once(service, operation, crash)
        elif roll < CRASH_RATE + CANCEL_MID_EXPORT_RATE and target in self.promised:
            self.outcomes[f"cancel at {operation}"] += 1
            self.faults.once(service, operation, lambda *_: self._cancel_now(target))
        elif roll < CRASH_RATE + CANCEL_MID_EXPORT_RATE + EXPIRE_MID_EXPORT_RATE and target in self.promised:
            self.outcomes[f"deadline at {operation}"] += 1
            self.faults.once(service, operation, lambda *_: self._expire_now(target))

    def _cancel_now(self, task_id: str) -> None:
        user = self.promised[task_id].user
        result = api_handler(http_event("POST", f"/v1/exports/{task_id}/cancel", user=user), FakeContext())
        self.log[task_id].append(f"step {self.steps}: cancel mid-export -> {result['statusCode']}")
        if result["statusCode"] == 200:
            self.cancelled_ok.add(task_id)

    def _expire_now(self, task_id: str) -> None:
        status = lifecycle.lambda_handler({"action": "expire", "task_id": task_id}, FakeContext())["status"]
        self.log[task_id].append(f"step {self.steps}: deadline mid-export -> {status}")

    # The loop -------------------------------------------------------------------------------

    def run(self) -> None:
        started = time.monotonic()
        while self.steps < MAX_STEPS and time.monotonic() - started < TIME_BUDGET_SEC:
            self.steps += 1
            roll = self.rng.random()
            if self.plans and roll < 0.2:
                self.submit_some()
            elif roll < 0.2 + CANCEL_RATE:
                self.cancel_one()
            elif not self.deliver():
                if self.plans:
                    self.submit_some()
                elif self.lanes.depth() == 0:
                    return
        self.violations.append(f"the simulation did not drain in {self.steps} steps / {TIME_BUDGET_SEC} s")

    def fast_forward_deadlines(self) -> None:
        """Nothing is queued any more: a task still active now waits for its deadline. Report it
        (the service stopped working on an accepted export), then play the workflow's deadline
        (its Expire step) so that every other invariant can be checked on ended tasks."""
        records = task_records(self.resources)
        for task_id in sorted(self.promised):
            status = records[task_id]["status"]
            if status in TERMINAL:
                continue
            self.violations.append(
                f"{task_id}: left {status} with nothing queued: it would only end at its deadline {self.log[task_id]}"
            )
            self.log[task_id].append(f"deadline fast-forwarded from {status}")
            lifecycle.lambda_handler({"action": "expire", "task_id": task_id}, FakeContext())


def _task_id_of(message: MessageTypeDef) -> str:
    try:
        return json.loads(message["Body"])["task_id"]
    except (ValueError, KeyError):
        return "?"


def m_count(messages: list[MessageTypeDef], task_id: str) -> str:
    return next((m["Attributes"]["ApproximateReceiveCount"] for m in messages if _task_id_of(m) == task_id), "?")


def plans(rng: random.Random, callback_url: str) -> list[Plan]:
    """Distinct exports (distinct filters: no deduplication, distinct hot keys) for USERS users."""
    ranges = rng.sample([(offset, span) for offset in range(90) for span in range(3)], TASKS)
    made = []
    for n, (offset, span) in enumerate(ranges):
        filters: dict[str, Any] = {
            "date_from": (SEED_DAY - timedelta(days=offset + span)).isoformat(),
            "date_to": (SEED_DAY - timedelta(days=offset)).isoformat(),
        }
        if rng.random() < 0.3:
            filters["columns"] = rng.sample(["order_id", "amount", "status", "customer_name", "note"], 3)
        die_after_end = rng.random() < DIE_AFTER_END_SHARE
        body: dict[str, Any] = {
            "export_type": "orders",
            "format": rng.choice(["csv", "csv", "csv", "xlsx"]),
            "filters": filters,
            "priority": rng.randint(1, 10),
            # A task whose end the workflow never hears of is picked up at its deadline: keep it short.
            "timeout_sec": 10 if die_after_end else 600,
        }
        if rng.random() < CALLBACK_SHARE:
            body["callback_url"] = callback_url
        made.append(Plan(user=f"user-{n % USERS}", body=body, die_after_end=die_after_end))
    return made


# The invariants -------------------------------------------------------------------------------


def check_states(sim: Simulation) -> dict[str, dict[str, Any]]:
    records = task_records(sim.resources)
    assert sim.history is not None
    history = sim.history()
    for task_id in sim.promised:
        record = records.get(task_id)
        if record is None or record["status"] not in TERMINAL:
            sim.violations.append(f"{task_id}: not ended even at its deadline: {record and record['status']}")
    for task_id, changes in history.items():
        endings = 0
        for old, new in changes:
            if old and new and old != new and TaskStatus(new) not in TRANSITIONS[TaskStatus(old)]:
                sim.violations.append(f"{task_id}: {old} -> {new} is not a transition {sim.log[task_id]}")
            if new in TERMINAL and old not in TERMINAL:
                endings += 1
        if endings > 1:
            sim.violations.append(f"{task_id}: ended {endings} times: {changes}")
    for task_id in sim.cancelled_ok:
        if records[task_id]["status"] != TaskStatus.CANCELLED:
            sim.violations.append(f"{task_id}: cancel answered 200 but it ended {records[task_id]['status']}")
    for task_id in sim.died_after_end:
        if records[task_id]["status"] not in TERMINAL:
            sim.violations.append(f"{task_id}: the worker died after ending it, yet it is not ended")
    return records


def check_files(sim: Simulation, records: dict[str, dict[str, Any]]) -> None:
    s3 = boto3.client("s3", region_name=REGION)
    history = sim.history() if sim.history else {}
    objects = objects_by_task(sim.resources)
    for task_id, keys in objects.items():
        record = records.get(task_id, {})
        results = [key for key in keys if not key.endswith("/checkpoint.bin")]
        if len(results) > 1:
            sim.violations.append(f"{task_id}: {len(results)} result objects")
        if results and record.get("status") != TaskStatus.COMPLETED:
            status, changes = record.get("status"), history.get(task_id)
            sim.violations.append(f"{task_id}: a result object for a {status} task {changes} {sim.log[task_id]}")
    for task_id, record in records.items():
        if record["status"] != TaskStatus.COMPLETED:
            continue
        result = record["result"]
        if objects.get(task_id, []) != [result["key"]]:
            sim.violations.append(f"{task_id}: COMPLETED but its object is missing: {objects.get(task_id)}")
            continue
        data = s3.get_object(Bucket=sim.resources.bucket, Key=result["key"])["Body"].read()
        if len(data) != result["bytes"] or hashlib.sha256(data).hexdigest() != result["sha256"]:
            sim.violations.append(f"{task_id}: the object does not match its record (partial or foreign file)")
    uploads = open_uploads(sim.resources)
    if uploads:
        sim.violations.append(f"{len(uploads)} multipart uploads left open: {[u['Key'] for u in uploads][:5]}")


def check_quotas(sim: Simulation, records: dict[str, dict[str, Any]]) -> None:
    for n in range(USERS):
        user = f"user-{n}"
        counted = quota(sim.resources, user)
        active = sum(1 for r in records.values() if r["user_id"] == user and r["status"] not in TERMINAL)
        if counted != active or counted != 0:
            sim.violations.append(f"{user}: quota counter {counted}, active tasks {active}")


def wait_for_workflows(sim: Simulation, limit_sec: float = 40) -> None:
    """Every ended task's workflow finishes (a task that did not end keeps its workflow waiting)."""
    sfn = boto3.client("stepfunctions", region_name=REGION)
    ended = {task_id for task_id, record in task_records(sim.resources).items() if record["status"] in TERMINAL}

    def running(executions: list[ExecutionListItemTypeDef]) -> list[ExecutionListItemTypeDef]:
        return [e for e in executions if e["status"] == "RUNNING" and e["name"] in ended]

    executions = poll_until(
        lambda: sfn.list_executions(stateMachineArn=sim.resources.state_machine_arn, maxResults=1000)["executions"],
        lambda executions: not running(executions),
        timeout_sec=limit_sec,
        interval_sec=0.2,
    )
    if still := running(executions):
        sim.violations.append(f"workflows still running after {limit_sec} s: {[e['name'] for e in still][:5]}")
        return
    failed = [e["name"] for e in executions if e["status"] not in ("SUCCEEDED", "RUNNING")]
    if failed:
        sim.violations.append(f"workflows that did not succeed: {failed[:5]}")


def check_callbacks(sim: Simulation, records: dict[str, dict[str, Any]]) -> None:
    calls: dict[str, list[Hook]] = defaultdict(list)
    for call in sim.receiver.calls:
        calls[call.task_id].append(call)
    for task_id, record in records.items():
        if not record.get("subscribers"):
            if calls.get(task_id):
                sim.violations.append(f"{task_id}: called back without a callback_url")
            continue
        received = calls.get(task_id, [])
        state = (record.get("subscribers") or [{}])[0].get("state") or {}
        if task_id in sim.promised and not received:
            sim.violations.append(f"{task_id}: callback lost ({record['status']}, {state}) {sim.log[task_id]}")
            continue
        if not received:
            continue
        if {(c.status, c.seq) for c in received} != {(record["status"], record["status_seq"])}:
            sim.violations.append(f"{task_id}: premature or stale callback {[(c.status, c.seq) for c in received]}")
        if len({c.webhook_id for c in received}) != 1:
            sim.violations.append(f"{task_id}: retries of one event carried different webhook-ids")
        accepted = [c for c in received if 200 <= c.answer < 300]
        expected = "DELIVERED" if accepted else "FAILED"
        if len(accepted) > 1 or (accepted and received[-1] is not accepted[0]):
            sim.violations.append(f"{task_id}: delivered more than once {[c.answer for c in received]}")
        if state.get("status") != expected or state.get("attempts") != len(received):
            sim.violations.append(f"{task_id}: callback recorded {state}, receiver saw {[c.answer for c in received]}")
        if (
            expected == "FAILED"
            and len(received) < 1 + CALLBACK_RETRY.retries
            and received[-1].answer in (500, 503, 429)
        ):
            sim.violations.append(f"{task_id}: a retryable callback was given up early {[c.answer for c in received]}")


def check_api(sim: Simulation, records: dict[str, dict[str, Any]]) -> None:
    for task_id, plan in sorted(sim.promised.items()):
        result = api_handler(http_event("GET", f"/v1/exports/{task_id}", user=plan.user), FakeContext())
        view = json.loads(result["body"])
        if result["statusCode"] != 200 or view["status"] != records[task_id]["status"]:
            sim.violations.append(f"{task_id}: the API shows {result['statusCode']} {view.get('status')}")
        elif bool(view.get("download_url")) != (view["status"] == TaskStatus.COMPLETED):
            sim.violations.append(f"{task_id}: download link on a {view['status']} task")


@pytest.fixture
def simulation(
    running_aws: Resources,
    flapping_receiver: FlappingReceiver,
    monkeypatch: pytest.MonkeyPatch,
) -> Simulation:
    put_items(running_aws.orders_table, demo_orders(400, SEED_DAY))
    monkeypatch.setenv(Env.HOT_KEY_BURST, "50")
    faults = make_faults(SEED)
    # A lost SendTaskSuccess would only make the workflow wait for the deadline.
    faults.spared = frozenset({("sfn", "SendTaskSuccess")})
    rng = random.Random(SEED)
    sim = Simulation(running_aws, faults, Lanes(running_aws), rng, flapping_receiver)
    sim.history = status_history(running_aws)
    sim.plans = plans(rng, flapping_receiver.url)
    return sim


def test_every_accepted_task_ends_once_with_its_file_complete_or_absent_and_its_callback_accounted_for(
    simulation: Simulation,
) -> None:
    sim = simulation
    started = time.monotonic()
    sim.run()
    sim.fast_forward_deadlines()
    wait_for_workflows(sim)
    records = check_states(sim)
    check_files(sim, records)
    check_quotas(sim, records)
    check_callbacks(sim, records)
    check_api(sim, records)
    if sim.lanes.depth(dead_letters=True):
        sim.violations.append(f"{sim.lanes.depth(dead_letters=True)} messages in the DLQs")

    ended = Counter(str(records[t]["status"]) for t in sim.promised)
    summary = (
        f"seed {SEED} (replay: EXPORTS_FAULT_SEED={SEED}); {len(sim.promised)} tasks accepted in {sim.steps} steps, "
        f"{time.monotonic() - started:.0f} s; ended {dict(ended)}; events {dict(sim.outcomes)}; "
        f"faults {dict(sim.faults.injected)}"
    )
    print(summary)
    assert not sim.violations, f"{len(sim.violations)} violations, {summary}:\n" + "\n".join(sim.violations[:40])
    assert len(sim.promised) >= 0.95 * TASKS, summary


def _code(result: dict[str, Any]) -> str | None:
    """The error code of an API answer, if it has one."""
    try:
        return str(json.loads(result["body"])["error"]["code"])
    except (ValueError, KeyError, TypeError):
        return None
