"""File formats: one module per :class:`~exports.core.task.ExportFormat` member, named after it
(``CSV_GZ`` -> :mod:`exports.running.formats.csv_gz`), whose ``SPEC``
(:class:`~exports.running.formats.spec.FormatSpec`) says everything the service does differently
for it; :func:`exports.running.formats.registry.format_spec` finds it (docs/how-to/add-a-format.md).

Beside them: what a writer works with (:mod:`.run`), how a format splits (:mod:`.split`), and
the writer of the formats whose rows follow one another and that continue from a checkpoint
(:mod:`.lines`). The bytes themselves are :mod:`exports.running.writers`'.
"""
