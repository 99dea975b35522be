"""What every stage of a task's life shares: the task and its states (one transition table), the
errors, the export type's contract, the configuration, the ports to the task records, queue and
result store, and the AWS adapters every function needs (:mod:`.aws`). The task model, its states
and the rules in it touch no AWS SDK (the ``pure-rules`` import contract in pyproject.toml)."""
