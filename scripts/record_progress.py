"""Record the progress a client sees of one large CSV export on the local stack: the series the
ETA's tests replay (tests/client/progress_3m_csv.json; docs/console.md, "The export console").

``python -m scripts.record_progress [--orders 3000000] [--out series.json]`` starts the local
stack on free ports with its PostgreSQL demo (``--orders`` orders), submits a CSV of
``orders_all_tenants`` (every order: its 120 days), reads the task every 0.5 s until it ends and
writes the states seen, seconds from the submit's answer.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from datetime import date, timedelta
from pathlib import Path
from typing import Any, Final

import requests

from tests import stack_process
from tests.stack_process import running_stack

POLL_SEC: Final = 0.5
TERMINAL: Final = frozenset({"COMPLETED", "FAILED", "CANCELLED", "EXPIRED", "TIMED_OUT"})


def record(orders: int) -> dict[str, Any]:
    """The export's outcome and the states polled, in order."""
    stack_process.READY_TIMEOUT_SEC = 1800  # loading millions of demo orders takes minutes
    with running_stack(demo_orders=orders, postgres=True) as stack:
        headers = stack.headers("carol")  # orders_all_tenants is for the admin group
        today = date.today()
        body: dict[str, Any] = {
            "export_type": "orders_all_tenants",
            "format": "csv",
            "filters": {"date_from": (today - timedelta(days=120)).isoformat(), "date_to": today.isoformat()},
        }
        answer = requests.post(f"{stack.url}/v1/exports", json=body, headers=headers, timeout=30)
        answer.raise_for_status()
        task_id = answer.json()["task_id"]
        submitted = time.monotonic()
        series: list[dict[str, Any]] = []
        while True:
            task = requests.get(f"{stack.url}/v1/exports/{task_id}", headers=headers, timeout=30).json()
            at = round(time.monotonic() - submitted, 3)
            series.append({"at": at} | {key: task[key] for key in ("status", "progress", "rows_written")})
            if task["status"] in TERMINAL:
                break
            time.sleep(POLL_SEC)
    return {
        "recorded": f"python -m scripts.record_progress --orders {orders}; load average {os.getloadavg()[0]:.1f}",
        "rows": task.get("rows"),
        "size_bytes": task.get("size_bytes"),
        "series": series,
    }


def main() -> None:
    """Record, and write the series as JSON (one state a line)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=3_000_000)
    parser.add_argument("--out", type=Path, default=Path("series.json"))
    arguments = parser.parse_args()
    recorded = record(arguments.orders)
    states = ",\n".join(f"  {json.dumps(state)}" for state in recorded.pop("series"))
    head = json.dumps(recorded, indent=1)[:-2]
    arguments.out.write_text(f'{head},\n "series": [\n{states}\n ]\n}}\n')


if __name__ == "__main__":
    main()
