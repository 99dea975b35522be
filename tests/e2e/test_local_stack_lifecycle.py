"""A local mode you can leave running: a busy port is reported at once, `make run`'s stack stops
when `make` is killed, and a PostgreSQL a killed stack left running is stopped by the next one."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.stack_process import DYNAMODB_DEMO, READY_LINE, ROOT, free_port

pytestmark = pytest.mark.e2e

START_TIMEOUT_SEC = 180
STOP_TIMEOUT_SEC = 30


def environment(folder: Path, port: int) -> dict[str, str]:
    """A small stack of its own: the DynamoDB demo types, a PostgreSQL data folder in ``folder``."""
    env = {
        **os.environ,
        "PORT": str(port),
        "EXPORTS_AWS_PORT": str(free_port()),
        "EXPORTS_CONFIG": str(DYNAMODB_DEMO),
        "EXPORTS_DEMO_ORDERS": "10",
        "EXPORTS_DEMO_DYNAMODB_ORDERS": "10",
        "EXPORTS_POSTGRES_DIR": str(folder / "pg"),
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("AWS_ENDPOINT_URL", None)
    return env


def wait_for(condition: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.2)


def postmaster(folder: Path) -> int | None:
    """The pid of the running PostgreSQL of ``folder``, if any."""
    pid_file = folder / "pg" / "postmaster.pid"
    if not pid_file.exists():
        return None
    pid = int(pid_file.read_text().split()[0])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    return pid


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
    pid = postmaster(tmp_path)
    if pid is not None:  # a failed test must not leave a server behind
        os.kill(pid, signal.SIGINT)


def test_a_busy_port_is_reported_at_once_and_nothing_starts(folder: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        started = time.monotonic()
        run = subprocess.run(
            [sys.executable, "-m", "local_stack"],
            cwd=ROOT,
            env=environment(folder, port),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert run.returncode == 1
    assert f"could not start: [Errno 98] port {port} is in use" in run.stderr
    assert "Traceback" not in run.stderr
    assert time.monotonic() - started < 20  # before PostgreSQL, the demo data and the embedded AWS
    assert postmaster(folder) is None


def test_the_stack_make_run_starts_stops_when_make_is_killed(folder: Path) -> None:
    log = folder / "stack.log"
    # The parent stands in for make: it starts the stack as make's recipe does, then waits.
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys, time\n"
            f"subprocess.Popen([sys.executable, '-m', 'local_stack', '--stop-with-parent'], "
            f"stdout=open({str(log)!r}, 'w'), stderr=subprocess.STDOUT)\n"
            "time.sleep(600)\n",
        ],
        cwd=ROOT,
        env=environment(folder, free_port()),
    )
    try:
        wait_for(lambda: log.exists() and READY_LINE in log.read_text(), START_TIMEOUT_SEC, "the stack")
        server = postmaster(folder)
        assert server is not None
        parent.kill()  # kill -9 of make
        parent.wait()
        wait_for(lambda: "stopping ..." in log.read_text() and gone(server), STOP_TIMEOUT_SEC, "the stack to stop")
    finally:
        parent.kill()


def start(folder: Path, env: dict[str, str], name: str) -> tuple[subprocess.Popen[bytes], Path]:
    """``python -m local_stack`` with its output in ``folder/name.log``, once it is ready."""
    log = folder / f"{name}.log"
    with log.open("w") as out:
        process = subprocess.Popen([sys.executable, "-m", "local_stack"], cwd=ROOT, env=env, stdout=out, stderr=out)

    def ready() -> bool:
        if process.poll() is not None:
            pytest.fail(f"the {name} stack ended:\n{log.read_text()}")
        return READY_LINE in log.read_text()

    wait_for(ready, START_TIMEOUT_SEC, f"the {name} stack")
    return process, log


def test_a_postgresql_a_killed_stack_left_running_is_stopped_by_the_next(folder: Path) -> None:
    env = environment(folder, free_port())
    first, _ = start(folder, env, "first")
    abandoned = postmaster(folder)
    first.kill()  # kill -9 of the service: its PostgreSQL keeps running
    first.wait()
    assert abandoned is not None and not gone(abandoned)

    second, log = start(folder, env, "second")
    try:
        assert f"stopping the PostgreSQL a killed local stack left running (pid {abandoned})" in log.read_text()
        assert gone(abandoned)
    finally:
        second.send_signal(signal.SIGINT)
        second.wait(timeout=STOP_TIMEOUT_SEC)
    assert postmaster(folder) is None  # and the one it started stops with it
