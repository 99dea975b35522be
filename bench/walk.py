"""How far a worker's task walks through our modules before its first byte goes to S3.

The walk is read from a real run, not from the imports: a task is put on the unit suite's fakes
(tests/unit/service_fakes.py) and handed to the worker's service; every call into a module of
``exports`` is recorded until the first part is uploaded. Counted once each, so that a loop over
rows counts as one walk: a *stop* is a call from one module into another, a *room* a module
visited, an *area* a top-level folder of ``exports`` visited, and a *return* a step of the walk
back into an area it had left (the run's context living elsewhere than the code that uses it).
Run it on two checkouts to compare layouts: ``python -m bench.walk``.
"""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any

from tests.unit.builders import make_task
from tests.unit.service_fakes import service_world

UPLOADS = frozenset({"upload_part", "upload_part_number"})


class Stop(BaseException):
    """The first part is being uploaded: the walk ends here (a BaseException, so that the
    service's own handler of a crashed export lets it through)."""


def walk() -> list[tuple[str, str]]:
    """The calls into modules of ``exports`` the worker's task makes until its upload, in order,
    as (calling module, called module)."""
    messages = __import__("exports.running.messages", fromlist=["process_task"])
    world = service_world()
    now = world.clock()
    task = make_task(
        task_id="exp_01JNCS6Z000000000000000001",
        export_type="numbers",
        filters={},
        created_at=now,
        expires_at=now + world.worker.settings.retention,
    )
    world.tasks.create(task, max_active=100)
    world.clock.advance(3)
    message = messages.TaskMessage(task_id=task.task_id, export_type="numbers", priority=task.priority)
    calls: list[tuple[str, str]] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        if frame.f_code.co_name in UPLOADS:
            raise Stop
        module = frame.f_globals.get("__name__", "")
        caller = frame.f_back.f_globals.get("__name__", "") if frame.f_back else ""
        if module.startswith("exports."):
            calls.append((caller, module))

    sys.setprofile(profile)
    try:
        messages.process_task(message, world.worker)
    except Stop:
        pass
    finally:
        sys.setprofile(None)
    return calls


def area(module: str) -> str:
    """The top-level folder of ``exports`` a module sits in (``exports.running.formats.run`` ->
    ``running``; a module at the top is its own)."""
    return module.split(".")[1]


def main() -> None:
    """Print the walk's areas and the counts."""
    calls = walk()
    modules = [called for _, called in calls]
    stops = {(caller, called) for caller, called in calls if caller != called and caller.startswith("exports.")}
    areas = [area(module) for module in modules]
    steps = [name for index, name in enumerate(areas) if index == 0 or areas[index - 1] != name]
    returns = {(steps[index - 1], name) for index, name in enumerate(steps) if name in steps[:index]}
    print("areas in order:", " -> ".join(dict.fromkeys(steps)))
    print("returns:", ", ".join(f"{start} -> {end}" for start, end in sorted(returns)))
    print(
        f"stops {len(stops)}, rooms {len(set(modules))}, areas {len(set(areas))}, "
        f"returns {len(returns)} (distinct steps back into an area left before)"
    )


if __name__ == "__main__":
    main()
