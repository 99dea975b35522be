"""``make run`` under concurrent requests (found by ``scripts/load.py``): the local gateway served
requests on several threads at once through one API function, whose Powertools resolver keeps the
current event in a module global, so a request could run as another request's user (its task
created for someone else, a 404 on the owner's next read). Lambda gives an environment one event
at a time; the gateway now does too."""

import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from exports.core.config.env import Env
from local_stack.gateway import Gateway
from local_stack.local_users import LocalUser
from tests.stack_process import Stack, recent, running_stack

pytestmark = pytest.mark.e2e

REPEATERS = 1
SUBMITTERS = 3
SUBMITS = 8


def test_the_gateway_hands_the_function_one_request_at_a_time() -> None:
    running, most = 0, 0
    lock = threading.Lock()

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.02)  # long enough for the other threads' requests to arrive meanwhile
        with lock:
            running -= 1
        return {"statusCode": 200, "body": event["requestContext"]["authorizer"]["jwt"]["claims"]["sub"]}

    gateway = Gateway(handler, {"alice-token": LocalUser("alice"), "bob-token": LocalUser("bob")}, port=0)
    serving = threading.Thread(target=gateway.serve_forever, daemon=True)
    serving.start()
    answers: list[tuple[str, str]] = []

    def ask(token: str, user: str) -> None:
        response = requests.get(f"{gateway.url}/v1/x", headers={"Authorization": f"Bearer {token}"}, timeout=10)
        answers.append((user, response.text))

    try:
        pairs = [("alice-token", "alice"), ("bob-token", "bob")] * 4
        clients = [threading.Thread(target=ask, args=pair) for pair in pairs]
        for client in clients:
            client.start()
        for client in clients:
            client.join(10)
    finally:
        gateway.shutdown()
    assert most == 1
    assert sorted(answers) == sorted((user, user) for user in ["alice", "bob"] * 4)


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with running_stack(demo_orders=500, environment={Env.MAX_ACTIVE_TASKS_PER_USER: "1000"}) as started:
        yield started


def test_every_accepted_submit_names_a_task_that_exists(stack: Stack) -> None:
    accepted: list[str] = []
    answers: Counter = Counter()
    lock = threading.Lock()

    def submit(session: requests.Session, user: str, day: str) -> None:
        body: dict[str, Any] = {"export_type": "orders", "filters": {"date_from": day, "date_to": day}}
        response = session.post(f"{stack.url}/v1/exports", json=body, headers=stack.headers(user), timeout=10)
        with lock:
            answers[(user, response.status_code)] += 1
            if response.status_code == 202 and user == "bob":
                accepted.append(response.json()["task_id"])

    def repeat_the_same() -> None:
        session = requests.Session()
        for _ in range(SUBMITS):
            submit(session, "alice", recent(1))

    def submit_distinct(n: int) -> None:
        session = requests.Session()
        for k in range(SUBMITS):
            submit(session, "bob", recent(n * SUBMITS + k))

    clients = [threading.Thread(target=repeat_the_same) for _ in range(REPEATERS)]
    clients += [threading.Thread(target=submit_distinct, args=(n,)) for n in range(SUBMITTERS)]
    for client in clients:
        client.start()
    for client in clients:
        client.join(120)

    missing = [
        task_id
        for task_id in accepted
        if requests.get(f"{stack.url}/v1/exports/{task_id}", headers=stack.headers("bob"), timeout=10).status_code
        == 404
    ]
    assert len(accepted) == SUBMITTERS * SUBMITS, answers
    assert missing == [], f"{len(missing)} of {len(accepted)} accepted tasks do not exist; answers {dict(answers)}"
