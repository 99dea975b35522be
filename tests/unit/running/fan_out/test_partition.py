"""A split export's progress: partitions writing at once show the sum of their rows, none drops
another's count, and each write still renews the lease and checks that the task is ours."""

from datetime import timedelta

import pytest

from exports.core.errors import LostOwnership
from exports.core.task import cancel, requeue
from exports.running.fan_out.partition import PartitionProgress
from tests.unit.export_fakes import make_world, reclaim, running_task

PLANNED = 1000


def test_the_task_shows_every_partitions_rows_summed() -> None:
    world = make_world()
    task = running_task(world)
    first, second = (PartitionProgress(task, world.deps, k, PLANNED) for k in (0, 1))

    first.on_row(100)
    first.flush()
    second.on_row(300)
    second.flush()  # read before the first partition's write: it reads again, keeps 0's count
    world.clock.advance(5)
    first.on_row(250)
    first.flush()

    stored = world.tasks.get(task.task_id)
    assert stored.partition_rows == {"0": 250, "1": 300}
    assert (stored.rows_written, stored.progress) == (550, 55)
    assert stored.lease_expires_at == world.clock() + timedelta(seconds=world.deps.settings.lease_sec)


def test_a_partition_of_a_cancelled_task_stops_at_its_next_write() -> None:
    world = make_world()
    task = running_task(world)
    progress = PartitionProgress(task, world.deps, 0, PLANNED)
    world.tasks.tasks[task.task_id] = cancel(task, world.clock(), timedelta(hours=1))

    with pytest.raises(LostOwnership):
        progress.flush()


def test_a_new_attempt_starts_with_no_partition_counts() -> None:
    world = make_world()
    task = running_task(world)
    PartitionProgress(task, world.deps, 0, PLANNED).flush()

    stored = world.tasks.get(task.task_id)
    assert stored is not None
    world.tasks.update(stored, requeue(stored, "X", "again"))
    again = reclaim(world, task.task_id)

    assert again.partition_rows is None and again.rows_written == 0
