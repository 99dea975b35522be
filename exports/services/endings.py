"""Ending a task: the terminal write, then the hand-over to the lifecycle workflow."""

from __future__ import annotations

import logging

from exports.domain.errors import ExportsError
from exports.domain.task import Task
from exports.services.dependencies import Dependencies
from exports.services.retries import write_task

logger = logging.getLogger(__name__)


def end_task(before: Task, after: Task, deps: Dependencies) -> Task:
    """Write the terminal ``after`` (conditionally on ``before``, again on transient faults),
    then tell the workflow.

    Raises :class:`ConditionFailed` if someone else changed the task first, and
    :class:`RetryableError` if the write kept failing. If telling the workflow fails the task
    stays ended: the workflow picks the outcome up at the deadline.
    """
    write_task(before, after, deps)
    try:
        deps.tasks.release_dedup(after)
    except ExportsError:
        # Harmless: a marker whose holder has ended is taken over by the next identical submit.
        logger.warning("could not release the dedup key", exc_info=True)
    # From here on the task has ended whatever happens: nothing may raise, or a caller would
    # take the ended task for one that still needs ending (and e.g. retry a finished export).
    try:
        token = after.lifecycle_token
        if token is None:
            # The workflow may have stored its token after ``before`` was read.
            stored = deps.tasks.get(after.task_id)
            token = stored.lifecycle_token if stored else None
        if token:
            deps.lifecycle.report_end(token, after)
    except ExportsError:
        logger.warning("could not report the task's end; the deadline will", exc_info=True)
    return after
