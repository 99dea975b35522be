"""Everything after the file: the lifecycle workflow's deadline and ending, signed callbacks
(:mod:`.webhooks`), a scheduled run's end (its schedule's outcome and mail), and the deliveries of
the file to the customer's own storage. The worker never imports it: the lifecycle workflow
(Step Functions) calls it once a task has ended."""
