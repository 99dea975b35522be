"""The allocator of the Arrow buffers a Parquet file or a workbook's rows are made from (the
driver's arrays cast, row groups gathered, the writer's pages, the cells' strings): the C
library's ``malloc``, not pyarrow's default
mimalloc. mimalloc takes fresh memory for new buffers and, where the kernel backs it with
transparent huge pages, the first touch of each costs a 2 MiB page cleared by the kernel: 0.4 to
0.7 s of system CPU in a million-row export of 1.5 to 2 s of client CPU (docs/performance.md,
"PostgreSQL → Parquet: the client's CPU"). Which allocator makes no difference to a value or a
byte of the file; for XLSX through Arrow it also keeps the peak RSS of a million demo orders
at 184 MiB instead of 210.

It is the process's default pool that is set: ``ParquetWriter`` takes a ``memory_pool`` but its
column writers allocate their pages from the default pool whatever it is given. Only the Parquet
writers and the XLSX engine's Arrow rows use pyarrow in the worker."""

from __future__ import annotations


def use_system_allocator() -> None:
    """Make the C library's allocator pyarrow's default memory pool (idempotent)."""
    import pyarrow as pa

    pa.set_memory_pool(pa.system_memory_pool())
