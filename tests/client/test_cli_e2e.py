"""The installed `exportctl` as a subprocess against the local stack over real HTTP.

Its stdout and stderr are pipes here, so progress comes as plain lines, not a live bar.
"""

import hashlib
import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import openpyxl
import pytest

from exports_client.output import ExitCode
from tests.client.e2e_support import EXPORTCTL, TIMEOUT_SEC, Exportctl, SlowTasks
from tests.stack_process import recent, slow_filters

pytestmark = pytest.mark.e2e
PROGRESS_LINE = re.compile(
    r"^(exp_\w+) (PENDING|RUNNING|COMPLETED) +(\d+)% +([\d,]+) rows +([\d,]+|-) rows/s"
    r"  ETA (\d:\d\d:\d\d|-:--:--) +\d+\.\ds$"
)


@dataclass
class Finished:
    """The run of ``exportctl submit ... --wait --download DIR`` the tests below share."""

    result: subprocess.CompletedProcess[str]
    folder: Path
    task_id: str


@pytest.fixture(scope="module")
def finished(exportctl: Exportctl, tmp_path_factory: pytest.TempPathFactory) -> Finished:
    folder = tmp_path_factory.mktemp("cli") / "out"
    result = exportctl("submit", "orders", "--from", recent(30), "--to", recent(0), "--format", "xlsx",
                       "--wait", "--download", f"{folder}/")  # fmt: skip
    task_ids = {match.group(1) for match in map(PROGRESS_LINE.match, result.stderr.splitlines()) if match}
    assert len(task_ids) == 1, result.stderr
    return Finished(result, folder, task_ids.pop())


def test_submit_wait_download_shows_progress_lines_then_prints_the_path(finished: Finished) -> None:
    result = finished.result
    assert result.returncode == ExitCode.OK, result.stderr

    # stdout: only the path of the file, which is a workbook with a header and the rows
    path = Path(result.stdout.strip())
    assert result.stdout == f"{path}\n"
    assert path == finished.folder / f"orders_{recent(30)}_{recent(0)}.xlsx"
    rows = list(openpyxl.load_workbook(path, read_only=True).active.iter_rows(values_only=True))
    assert rows[0][0] == "Order ID"

    # stderr: plain progress lines (no terminal codes), ending COMPLETED with every row
    assert "\x1b[" not in result.stderr
    progress = [m.groups() for m in map(PROGRESS_LINE.match, result.stderr.splitlines()) if m]
    percents = [int(percent) for _, _, percent, *_ in progress]
    assert percents == sorted(percents)
    assert progress[-1][1:4] == ("COMPLETED", "100", f"{len(rows) - 1:,}")
    assert progress[-1][5] == "0:00:00"
    assert progress[-1][4] != "-"  # the rows/s of the whole run
    summary = result.stderr.splitlines()[-1]
    assert re.fullmatch(rf"{finished.task_id}: {len(rows) - 1:,} rows, [\d.]+ KiB, sha256 verified", summary)


def test_status_shows_the_task_as_a_table_or_as_json(exportctl: Exportctl, finished: Finished) -> None:
    table = exportctl("status", finished.task_id)
    as_json = exportctl("status", finished.task_id, "--json")

    assert table.returncode == as_json.returncode == ExitCode.OK
    fields = dict(line.split(None, 1) for line in table.stdout.splitlines() if line.strip())
    assert fields["task"] == finished.task_id
    assert fields["status"] == "COMPLETED"
    assert f"exportctl download {finished.task_id}" in table.stderr
    task = json.loads(as_json.stdout)
    assert task["status"] == "COMPLETED"
    assert task["file_name"] == f"orders_{recent(30)}_{recent(0)}.xlsx"


def test_list_json_has_the_task(exportctl: Exportctl, finished: Finished) -> None:
    result = exportctl("list", "--json", "--status", "completed", "--limit", "50")

    assert result.returncode == ExitCode.OK
    tasks = json.loads(result.stdout)
    assert finished.task_id in {task["task_id"] for task in tasks}
    assert {task["status"] for task in tasks} == {"COMPLETED"}


def test_download_saves_the_same_file_again(exportctl: Exportctl, finished: Finished, tmp_path: Path) -> None:
    target = tmp_path / "copy.xlsx"
    result = exportctl("download", finished.task_id, "--output", str(target))

    assert result.returncode == ExitCode.OK, result.stderr
    assert result.stdout == f"{target}\n"
    original = Path(finished.result.stdout.strip())
    assert hashlib.sha256(target.read_bytes()).digest() == hashlib.sha256(original.read_bytes()).digest()


def test_types_lists_what_can_be_exported(exportctl: Exportctl) -> None:
    table = exportctl("types")
    as_json = exportctl("types", "--json")

    assert table.returncode == as_json.returncode == ExitCode.OK
    orders = re.search(r"^orders \(([^)]*)\): Orders", table.stdout, re.MULTILINE)
    assert orders is not None, table.stdout
    assert {"csv", "xlsx"} <= set(orders.group(1).split(", "))
    assert re.search(r"^\s+date_from\s+date\s+yes\s+-\s+First order date", table.stdout, re.MULTILINE)
    assert "orders" in {t["name"] for t in json.loads(as_json.stdout)}


def test_a_bad_token_exits_with_the_auth_code_and_says_what_to_check(exportctl: Exportctl) -> None:
    result = exportctl("list", token="not-a-token")

    assert result.returncode == ExitCode.AUTH == 3
    assert result.stdout == ""
    assert result.stderr == (
        "exportctl: 401 UNAUTHORIZED: a valid bearer token is required. Check EXPORTS_TOKEN or --token.\n"
    )


def test_an_unknown_id_exits_with_the_not_found_code(exportctl: Exportctl) -> None:
    result = exportctl("status", "exp_01J00000000000000000000000")

    assert result.returncode == ExitCode.NOT_FOUND == 4
    assert "404 TASK_NOT_FOUND: export task exp_01J00000000000000000000000 not found" in result.stderr


def test_an_invalid_request_names_the_field(exportctl: Exportctl) -> None:
    result = exportctl("submit", "orders", "--from", recent(0), "--to", recent(1))

    assert result.returncode == ExitCode.REJECTED == 5
    assert "422" in result.stderr
    assert "filters.date_to: must not be before date_from" in result.stderr


def test_waiting_past_the_timeout_and_downloading_too_early_have_their_codes(
    exportctl: Exportctl, slow_tasks: SlowTasks
) -> None:
    # An export that runs for seconds, waited for half a second
    slow = slow_filters(2)
    waited = exportctl("submit", "orders", "--from", slow["date_from"], "--to", slow["date_to"], "--wait",
                       "--wait-timeout", "0.5")  # fmt: skip

    assert waited.returncode == ExitCode.TIMEOUT == 9
    task_id = slow_tasks.track(re.search(r"exportctl status (exp_\w+)", waited.stderr).group(1))
    early = exportctl("download", task_id)
    assert early.returncode == ExitCode.REJECTED
    assert "409 TASK_NOT_READY" in early.stderr


def test_retry_submits_a_cancelled_export_again(exportctl: Exportctl, slow_tasks: SlowTasks) -> None:
    cancelled = slow_tasks.submit(3)
    assert exportctl("cancel", cancelled).returncode == ExitCode.OK

    result = exportctl("retry", cancelled, "--json")

    assert result.returncode == ExitCode.OK, result.stderr
    task_id = slow_tasks.track(json.loads(result.stdout)["task_id"])
    assert task_id != cancelled
    status = json.loads(exportctl("status", task_id, "--json").stdout)
    assert status["retry_of"] == cancelled


def test_global_options_before_the_command(exportctl: Exportctl) -> None:
    result = exportctl("--url", exportctl.url, "--json", "list", "--limit", "1")

    assert result.returncode == ExitCode.OK, result.stderr
    assert isinstance(json.loads(result.stdout), list)


def test_a_closed_pipe_ends_quietly(exportctl: Exportctl) -> None:
    # Like `exportctl types | head -0`: the reader is gone before exportctl writes
    env = {**os.environ, "EXPORTS_API_URL": exportctl.url, "EXPORTS_TOKEN": exportctl.token}
    process = subprocess.Popen(
        [str(EXPORTCTL), "types"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    process.stdout.close()
    _, stderr = process.communicate(timeout=TIMEOUT_SEC)

    assert process.returncode == ExitCode.BROKEN_PIPE == 141
    assert stderr == ""
