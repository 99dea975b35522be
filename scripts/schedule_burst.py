"""Many schedules on the same minute, as every Monday-08:00 schedule of a deployment (docs/capacity.md).

``python -m scripts.load --schedules N`` runs it on a stack whose schedule clock is its own
(``EXPORTS_LOCAL_CLOCK=manual``): ``--users`` users create ``N`` daily schedules of ``orders``,
all on the same minute, then the clock moves a minute at a time past the spread window while each
firing's first arrival is counted per minute, then on (half a minute at a time) until every run
has ended, which delivers the firings deferred for capacity. Reported: arrivals per minute of the
window, runs by status, whether every run kept the exact firing time as its ``scheduled_for``, and
any schedule that counted a failure, with the load average before and after. The exports
themselves run in wall time on the stack's workers.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import requests

from exports.config.schedules import Schedules

REQUEST_TIMEOUT_SEC = 30
# Minutes ahead of now the firing is set at least (the schedules are created meanwhile), and the clock
# moves on a minute past the spread window (a firing delivered in its last second still arrives).
_LEAD_MIN = 2
_TAIL_MIN = 1


@dataclass(frozen=True)
class ScheduleBurstResult:
    """What a schedule burst measured."""

    count: int
    users: int
    firing: str
    # First arrivals in each move of the clock (about a minute) from the firing on: (where the
    # move ended, in seconds after the firing; how many arrived in it).
    arrivals: list[tuple[int, int]]
    # Arrivals before the firing's own time (none expected).
    early: int
    runs: int
    statuses: dict[str, int]
    exact_scheduled_for: int
    failing_schedules: list[str]
    ended_in_sec: float
    load_before: float
    load_after: float

    @property
    def failed(self) -> bool:
        """A schedule ran other than exactly once, to COMPLETED, at its exact time, or counted a failure."""
        return (
            self.runs != self.count
            or self.statuses.get("COMPLETED", 0) != self.count
            or self.exact_scheduled_for != self.count
            or bool(self.failing_schedules)
            or self.early > 0
        )

    def text(self) -> str:
        """The report printed by ``make load``."""
        arrivals = ", ".join(f"by +{end} s: {n}" for end, n in self.arrivals)
        return "\n".join(
            [
                f"{self.count} schedules from {self.users} users, all firing at {self.firing}",
                f"first arrivals in each minute's move of the clock: {arrivals}"
                + (f"; {self.early} before it" if self.early else ""),
                f"runs {self.runs}: "
                + ", ".join(f"{status} {n}" for status, n in sorted(self.statuses.items()))
                + f"; scheduled_for exact in {self.exact_scheduled_for}; every run ended {self.ended_in_sec:.0f} s "
                "(wall time) after the firing was due",
                f"schedules counting a failure or not ACTIVE: {len(self.failing_schedules)}"
                + (f" ({', '.join(self.failing_schedules[:5])})" if self.failing_schedules else ""),
                f"load average before {self.load_before:.2f}, after {self.load_after:.2f} ({os.cpu_count()} cores)",
            ]
        )


class _Api:
    def __init__(self, url: str) -> None:
        self._url = url
        self._session = requests.Session()

    def call(self, token: str, method: str, path: str, **kwargs: Any) -> Any:
        response = self._session.request(
            method,
            f"{self._url}{path}",
            headers={"Authorization": f"Bearer {token}"},
            timeout=REQUEST_TIMEOUT_SEC,
            **kwargs,
        )
        response.raise_for_status()
        return response.json()


def run_schedule_burst(url: str, tokens: Sequence[str], count: int, wait_sec: float = 600) -> ScheduleBurstResult:
    """Create ``count`` schedules on one minute, move the clock through their window, follow every
    run to its end (for at most ``wait_sec`` of wall time), and measure."""
    load_before = os.getloadavg()[0]
    api = _Api(url)
    now = datetime.fromisoformat(api.call(tokens[0], "POST", "/local/clock", json={"advance_sec": 0})["now"])
    # Far enough ahead that every schedule exists before it (a minute for each 60 created, which
    # takes longer on a loaded machine).
    lead = timedelta(minutes=_LEAD_MIN + count // 60)
    firing = (now + lead).replace(second=0, microsecond=0)
    owners: dict[str, str] = {}
    for n in range(count):
        token = tokens[n % len(tokens)]
        body = {
            "name": f"Monday orders {n}",
            "export_type": "orders",
            "format": "csv",
            "filters": {"date_from": "previous_day", "columns": ["order_id", "amount"]},
            "cron": f"{firing.minute} {firing.hour} * * *",
            "timezone": "UTC",
            "priority": 1 + n % 10,
        }
        owners[api.call(token, "POST", "/v1/schedules", json=body)["schedule_id"]] = token

    # The manual clock still follows wall time between moves (creating the schedules took some):
    # each move's first arrivals are labelled with where it ended, in seconds after the firing.
    arrivals: list[tuple[int, int]] = []
    seen: set[str] = set()
    last_arrival = firing + timedelta(minutes=Schedules.SPREAD_MAX_MIN + _TAIL_MIN)
    while now < last_arrival:
        moved = api.call(tokens[0], "POST", "/local/clock", json={"advance_sec": 60})
        now = datetime.fromisoformat(moved["now"])
        first = {event["schedule_id"] for event in moved["fired"]} - seen
        seen |= first
        arrivals.append((int((now - firing).total_seconds()), len(first)))
    due = time.monotonic()
    runs = _runs_until_ended(api, owners, tokens[0], time.monotonic() + wait_sec)
    ended_in = time.monotonic() - due
    failing = [
        schedule_id
        for schedule_id, token in owners.items()
        if (view := api.call(token, "GET", f"/v1/schedules/{schedule_id}"))["state"] != "ACTIVE"
        or view["consecutive_failures"] != 0
    ]
    expected = firing.isoformat().replace("+00:00", "Z")
    return ScheduleBurstResult(
        count=count,
        users=len(set(owners.values())),
        firing=expected,
        arrivals=[(end, n) for end, n in arrivals if end >= 0],
        early=sum(n for end, n in arrivals if end < 0),
        runs=len(runs),
        statuses=dict(Counter(run["status"] for run in runs)),
        exact_scheduled_for=sum(1 for run in runs if run["scheduled_for"] == expected),
        failing_schedules=failing,
        ended_in_sec=ended_in,
        load_before=load_before,
        load_after=os.getloadavg()[0],
    )


def _runs_until_ended(api: _Api, owners: dict[str, str], clock_token: str, deadline: float) -> list[dict[str, Any]]:
    """Each schedule's runs once every one has ended, or as they are at ``deadline``; the clock
    moves on meanwhile, which delivers the firings deferred for capacity."""
    while True:
        runs: list[dict[str, Any]] = []
        for schedule_id, token in owners.items():
            runs += api.call(token, "GET", "/v1/exports", params={"schedule_id": schedule_id})["items"]
        ended = all(run["status"] not in ("PENDING", "RUNNING") for run in runs)
        if (len(runs) >= len(owners) and ended) or time.monotonic() > deadline:
            return runs
        api.call(clock_token, "POST", "/local/clock", json={"advance_sec": 30})
        time.sleep(2)
