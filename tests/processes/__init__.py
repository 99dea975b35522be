"""Tests that start processes: fresh interpreters (what a cold start imports, SnapStart's hooks,
the lazy tracer, reproducible PDFs), pytest itself, and outside programs that read what we write
(gzip, unzip, pdfimages and pdftotext for PDF logos, ssh-keygen for destinations' keys). Kept out
of tests/unit so that `make check` stays fast."""
