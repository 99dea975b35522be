"""The push channel over the real local stack: tickets, the WebSocket protocol, tenancy, and
events from the task writes (docs/push.md)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from websockets.exceptions import InvalidStatus
from websockets.sync.client import ClientConnection, connect
from websockets.typing import Subprotocol

from tests.stack_process import Stack, recent, running_stack, slow_filters

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    # Progress every 0.2 s: a year of orders takes about a second on a quiet machine, less than the
    # 2 s default, and the progress test needs at least one progress write.
    with running_stack(demo_orders=1500, environment={"EXPORTS_PROGRESS_INTERVAL_SEC": "0.2"}) as running:
        yield running


def ticket(stack: Stack, user: str = "alice") -> dict:
    answer = requests.post(f"{stack.url}/v1/stream-tickets", headers=stack.headers(user), timeout=10)
    assert answer.status_code == 201, answer.text
    return answer.json()


def open_socket(stack: Stack, user: str = "alice") -> ClientConnection:
    given = ticket(stack, user)
    return connect(
        given["url"],
        subprotocols=[Subprotocol("exports.v1"), Subprotocol("ticket." + given["ticket"])],
        open_timeout=10,
    )


def receive(socket: ClientConnection, timeout: float = 20) -> dict:
    return json.loads(socket.recv(timeout=timeout))


def submit(stack: Stack, user: str, filters: dict) -> str:
    body: dict[str, Any] = {"export_type": "orders", "format": "csv", "filters": filters}
    answer = requests.post(f"{stack.url}/v1/exports", json=body, headers=stack.headers(user), timeout=10)
    assert answer.status_code == 202, answer.text
    return answer.json()["task_id"]


def until_terminal(socket: ClientConnection, task_id: str) -> list[dict]:
    events = []
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        message = receive(socket, timeout=max(1.0, deadline - time.monotonic()))
        if message.get("type", "").startswith("export.") and message["data"]["task_id"] == task_id:
            events.append(message)
            if message["data"]["status"] in ("COMPLETED", "FAILED", "TIMEOUT", "CANCELLED"):
                return events
    pytest.fail(f"no terminal event; got {events}")


def test_ticket_names_the_websocket_url_and_expires_in_60_s(stack):
    given = ticket(stack)
    assert given["url"].startswith("ws://127.0.0.1:")
    assert given["expires_in"] == 60
    assert given["ticket"] not in given["url"]


def test_connect_selects_the_protocol_and_answers_ping(stack):
    with open_socket(stack) as socket:
        assert socket.subprotocol == "exports.v1"
        socket.send(json.dumps({"action": "ping"}))
        assert receive(socket) == {"type": "pong"}


def test_a_ticket_is_single_use(stack):
    given = ticket(stack)
    protocols = ["exports.v1", "ticket." + given["ticket"]]
    with connect(given["url"], subprotocols=protocols, open_timeout=10):
        pass
    with pytest.raises(InvalidStatus) as refused:
        connect(given["url"], subprotocols=protocols, open_timeout=10)
    assert refused.value.response.status_code == 403


def test_unknown_ticket_missing_credential_and_token_in_url_are_refused(stack):
    url = ticket(stack)["url"]
    with pytest.raises(InvalidStatus) as unknown:
        connect(url, subprotocols=[Subprotocol("exports.v1"), Subprotocol("ticket.not-a-ticket")], open_timeout=10)
    assert unknown.value.response.status_code == 403
    # A long-lived token in the URL (it would end up in access logs) is no credential.
    with pytest.raises(InvalidStatus) as in_url:
        connect(f"{url}?token={stack.tokens['alice']}", subprotocols=[Subprotocol("exports.v1")], open_timeout=10)
    assert in_url.value.response.status_code == 401


def test_bad_messages_are_answered_with_the_field(stack):
    with open_socket(stack) as socket:
        socket.send(json.dumps({"action": "subscribe"}))
        answer = receive(socket)
        assert answer["type"] == "error" and answer["error"]["code"] == "VALIDATION_ERROR"
        socket.send("not json")
        assert receive(socket)["error"]["field"] == "body"


def fresh(events: list[dict]) -> list[dict]:
    """What a client keeps: each event whose seq is above the last one kept."""
    kept: list[dict] = []
    for event in events:
        if not kept or event["seq"] > kept[-1]["seq"]:
            kept.append(event)
    return kept


def test_own_task_is_pushed_from_pending_to_completed_with_increasing_seq(stack):
    with open_socket(stack) as socket:
        socket.send(json.dumps({"action": "subscribe", "all": True}))
        assert receive(socket) == {"type": "subscribed", "task_id": None, "all": True}
        task_id = submit(stack, "alice", slow_filters(1))
        events = fresh(until_terminal(socket, task_id))
    types = [event["type"] for event in events]
    assert types[0] == "export.pending" and types[1] == "export.running", types
    assert "export.progress" in types, types
    assert types[-1] == "export.completed", types
    progress = [event["data"]["progress"] for event in events]
    assert progress == sorted(progress) and progress[-1] == 100
    assert events[-1]["data"]["download_url"]


def test_subscribe_to_a_task_sends_its_current_state_first(stack):
    task_id = submit(stack, "alice", slow_filters(2))
    with open_socket(stack) as socket:
        socket.send(json.dumps({"action": "subscribe", "task_id": task_id}))
        assert receive(socket) == {"type": "subscribed", "task_id": task_id, "all": False}
        current = receive(socket)
        assert current["data"]["task_id"] == task_id
        events = until_terminal(socket, task_id)
    # Later events of the stream may be older than the state sent first: the seq says which.
    kept = fresh([current, *events])
    assert kept[0] is current
    assert kept[-1]["type"] == "export.completed"


def test_resubscribe_sends_the_current_state_first(stack):
    task_id = submit(stack, "alice", {"date_from": recent(20), "date_to": recent(1)})
    with open_socket(stack) as socket:
        socket.send(json.dumps({"action": "subscribe", "task_id": task_id}))
        until_terminal(socket, task_id)
    # A client reconnecting after the end still gets the terminal state at once.
    with open_socket(stack) as socket:
        socket.send(json.dumps({"action": "subscribe", "task_id": task_id}))
        assert receive(socket)["type"] == "subscribed"
        current = receive(socket)
        assert current["type"] == "export.completed" and current["data"]["task_id"] == task_id


def test_another_users_task_is_not_found_and_never_pushed(stack):
    with open_socket(stack, "bob") as bob:
        bob.send(json.dumps({"action": "subscribe", "all": True}))
        assert receive(bob) == {"type": "subscribed", "task_id": None, "all": True}
        task_id = submit(stack, "alice", slow_filters(3))
        bob.send(json.dumps({"action": "subscribe", "task_id": task_id}))
        answer = receive(bob)
        assert answer["type"] == "error" and answer["error"]["code"] == "TASK_NOT_FOUND"
        assert answer["task_id"] == task_id
        with open_socket(stack, "alice") as alice:
            alice.send(json.dumps({"action": "subscribe", "all": True}))
            assert receive(alice)["type"] == "subscribed"
            requests.post(f"{stack.url}/v1/exports/{task_id}/cancel", headers=stack.headers("alice"), timeout=10)
            seen = until_terminal(alice, task_id)
            assert seen[-1]["type"] == "export.cancelled"
        # bob's all-tasks subscription got nothing of alice's.
        with pytest.raises(TimeoutError):
            bob.recv(timeout=3)


def task_polls(stack: Stack, task_id: str) -> int:
    """The gateway's request log lines of GETs of the task (polls)."""
    return stack.output().count(f"GET /v1/exports/{task_id} ")


def test_exportctl_wait_follows_the_push_channel_without_polling(stack):
    from tests.client.e2e_support import Exportctl

    exportctl = Exportctl(stack.url, stack.tokens["alice"])
    answer = exportctl(
        "submit", "orders", "--from", recent(30), "--to", recent(0), "--format", "csv", "--wait", "--json"
    )
    assert answer.returncode == 0, answer.stderr
    task_id = json.loads(answer.stdout)["task_id"]
    assert json.loads(answer.stdout)["status"] == "COMPLETED"
    time.sleep(1.5)  # the request log is written as requests end
    assert task_polls(stack, task_id) == 0
    assert "POST /v1/stream-tickets 201" in stack.output()


def test_sdk_wait_sees_a_cancel_over_the_push_channel(stack):
    from exports_client import ExportsClient

    task_id = submit(stack, "alice", slow_filters(4))
    with ExportsClient(stack.url, stack.tokens["alice"]) as sdk:
        seen = []

        def cancel_once(task) -> None:
            seen.append(task.status)
            if len(seen) == 1:
                requests.post(f"{stack.url}/v1/exports/{task_id}/cancel", headers=stack.headers(), timeout=10)

        final = sdk.wait(task_id, timeout=60, on_update=cancel_once)
    assert final.status == "CANCELLED"
    assert task_polls(stack, task_id) == 0


def test_without_a_push_channel_wait_polls():
    from exports_client import ExportsClient

    with running_stack(demo_orders=50, environment={"EXPORTS_WS_PORT": "-1"}) as quiet:
        answer = requests.post(f"{quiet.url}/v1/stream-tickets", headers=quiet.headers(), timeout=10)
        assert answer.status_code == 404
        assert answer.json()["error"]["code"] == "PUSH_NOT_AVAILABLE"
        task_id = submit(quiet, "alice", {"date_from": recent(5), "date_to": recent(0)})
        with ExportsClient(quiet.url, quiet.tokens["alice"]) as sdk:
            assert sdk.wait(task_id, timeout=60).status == "COMPLETED"
        time.sleep(1.5)
        assert task_polls(quiet, task_id) >= 1
