"""Scheduled exports (docs/schedules.md): recurring exports in a time zone, each firing an
ordinary export task.

Pure modules (no boto3, no environment, no clock of their own): :mod:`.model` (the schedule,
its states and pause reasons), :mod:`.expression` (cron and ``every`` in a zone, next runs,
the shortest interval), :mod:`.scheduler_expression` (EventBridge Scheduler's form),
:mod:`.windows` (relative date windows), :mod:`.outcome` (a run's end on its schedule) and
:mod:`.mail` (the message of a run). The services (:mod:`.service`, :mod:`.firing`,
:mod:`.run_end`) work through the ports of :mod:`.ports`.
"""
