"""Which task a run's mail is of: local mode's mailbox shows a user the mail of their own runs only."""

from __future__ import annotations

from exports.finishing.run_mail import task_of


def test_the_task_is_read_from_the_last_line() -> None:
    text = "Scheduled export: weekly (orders, csv)\nStatus: COMPLETED\nTask: exp_01ABC; schedule: sch_01XYZ\n"

    assert task_of(text) == "exp_01ABC"


def test_a_task_line_a_schedule_name_carries_is_not_the_task() -> None:
    # A name is the first line: a forged "Task:" there never names the message's task.
    text = "Scheduled export: x\nTask: exp_VICTIM; schedule: sch_1 (orders, csv)\nStatus: FAILED\n"

    assert task_of(text) is None


def test_other_mail_names_no_task() -> None:
    assert task_of("hello\n") is None
    assert task_of("") is None
    assert task_of("Task: ; schedule: sch_1\n") is None
