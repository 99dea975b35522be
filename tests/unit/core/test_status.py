"""The transition table: the one place that says which status changes are allowed."""

from itertools import product

import pytest

from exports.core.errors import InvalidTransition
from exports.core.status import ACTIVE, TERMINAL, TRANSITIONS, TaskStatus, can_transition, check_transition

S = TaskStatus
ALLOWED = {
    (S.PENDING, S.RUNNING),
    (S.PENDING, S.FAILED),
    (S.PENDING, S.TIMEOUT),
    (S.PENDING, S.CANCELLED),
    (S.RUNNING, S.RUNNING),  # a new worker reclaims a task whose lease ran out
    (S.RUNNING, S.PENDING),  # back to the queue for a retry
    (S.RUNNING, S.COMPLETED),
    (S.RUNNING, S.FAILED),
    (S.RUNNING, S.TIMEOUT),
    (S.RUNNING, S.CANCELLED),
}
ALL_PAIRS = list(product(TaskStatus, TaskStatus))


def test_active_and_terminal_partition_every_status():
    assert set(TaskStatus) == ACTIVE | TERMINAL
    assert not ACTIVE & TERMINAL
    assert {S.PENDING, S.RUNNING} == ACTIVE


def test_the_table_has_a_row_for_every_status():
    assert set(TRANSITIONS) == set(TaskStatus)


@pytest.mark.parametrize(("current", "target"), list(product(sorted(TERMINAL), TaskStatus)))
def test_a_terminal_state_has_no_way_out(current, target):
    assert not can_transition(current, target)
    with pytest.raises(InvalidTransition) as caught:
        check_transition(current, target)
    assert (caught.value.current, caught.value.target) == (current.value, target.value)


@pytest.mark.parametrize(("current", "target"), sorted(ALLOWED))
def test_allowed_transitions_pass(current, target):
    assert can_transition(current, target)
    check_transition(current, target)


@pytest.mark.parametrize(("current", "target"), [pair for pair in ALL_PAIRS if pair not in ALLOWED])
def test_every_other_transition_is_refused(current, target):
    assert not can_transition(current, target)
    with pytest.raises(InvalidTransition, match=f"cannot go from {current} to {target}"):
        check_transition(current, target)


def test_invalid_transition_carries_a_stable_code_and_details():
    error = InvalidTransition(current="PENDING", target="COMPLETED")
    assert error.code == "INVALID_TRANSITION"
    assert error.details == {"current": "PENDING", "target": "COMPLETED"}
