"""Fan-out: one large export written by several workers at once into one file (docs/fan-out.md).

The worker that claimed the task plans it (:mod:`.plan`: the partitions, the staged plan, the
one upload, the workflow started), each partition's invocation writes its rows as numbered parts
of that upload (:mod:`.partition`), the assembler completes the file (:mod:`.assemble`), and
:mod:`.workflow` holds the three steps the fan-out workflow invokes (write a partition,
assemble, abandon) and what each ends the task with.

Beside the package: what a format that splits does in each step (its
:class:`~exports.running.formats.split.SplitLayout`), the bytes of a partition and the glue
(:mod:`exports.running.writers.partitioned`), numbered parts (:mod:`exports.running.writers.segment_upload`), the
partition plans of the declared types (:mod:`exports.core.partitions`), the state machine
(:func:`exports.core.workflows.fan_out_definition`).
Every object of an attempt goes through :class:`exports.running.attempt_files.AttemptFiles`.
"""
