"""Tests that start processes: fresh interpreters (what a cold start imports, SnapStart's hooks,
the lazy tracer, reproducible PDFs), pytest itself, and outside readers of our files (gzip,
unzip). Kept out of tests/unit so that `make check` runs in seconds."""
