"""Running an export: the worker's handling of a queue message (claim, limits, deadline), the
run's context, the formats and their writers streaming parts to S3, long exports continued in a
new invocation, split exports written in parallel (:mod:`.fan_out`), and how a run ends its task
(:mod:`.endings`), handing it to the lifecycle workflow."""
