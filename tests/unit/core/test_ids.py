"""Task ids: ``exp_`` + a ULID, sortable by creation time."""

import random
from datetime import UTC, datetime, timedelta

import pytest
from ulid import ULID

from exports.core.ids import TASK_ID_PREFIX, is_task_id, new_task_id

CROCKFORD = set("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
START = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
# A fixed id of START (a fresh one would give the parametrised cases other names in each xdist
# worker, which then refuse to run).
VALID = "exp_01JN8S7QG0EKWFA3RZACMR3QMS"


def test_new_id_is_prefixed_ulid():
    task_id = new_task_id(START)

    assert task_id.startswith("exp_")
    assert TASK_ID_PREFIX == "exp_"
    ulid_part = task_id.removeprefix("exp_")
    assert len(ulid_part) == 26
    assert set(ulid_part) <= CROCKFORD
    assert is_task_id(task_id)


def test_id_carries_its_creation_time_to_the_millisecond():
    moment = datetime(2025, 3, 1, 12, 0, 5, 123_999, tzinfo=UTC)
    assert ULID.from_str(new_task_id(moment).removeprefix("exp_")).datetime == moment.replace(microsecond=123_000)


def test_ids_made_at_the_same_moment_differ():
    assert len({new_task_id(START) for _ in range(100)}) == 100


def test_ids_sort_by_creation_time():
    steps_ms = [1, 1, 2, 999, 1_000, 60_000, 86_400_000, 1, 365 * 86_400_000, 7]
    moments = [START]
    for step in steps_ms:
        moments.append(moments[-1] + timedelta(milliseconds=step))
    ids = [new_task_id(moment) for moment in moments]
    shuffled = ids.copy()
    random.Random(4).shuffle(shuffled)

    assert sorted(shuffled) == ids


@pytest.mark.parametrize(
    "value",
    [
        "",
        "exp_",
        VALID.removeprefix("exp_"),
        VALID[:-1],
        VALID + "0",
        VALID.lower(),
        VALID.replace("exp_", "EXP_"),
        VALID.replace("exp_", "task_"),
        " " + VALID,
        VALID + " ",
        "exp_" + "I" * 26,
        "exp_" + "L" * 26,
        "exp_" + "O" * 26,
        "exp_" + "U" * 26,
        "exp_0123456789abcdef0123456789",
        "exp_5f0c3a52-6b8e-4c1e-9a55-0e0c7c4b2a11",
        "../" + VALID,
    ],
)
def test_is_task_id_rejects_junk(value):
    assert not is_task_id(value)


def test_is_task_id_rejects_a_trailing_newline():
    # BUG: TASK_ID_PATTERN ends in "$", which also matches just before a final "\n".
    assert not is_task_id(VALID + "\n")
