"""Accepting an export request: validating it, admitting it (hot keys, quotas, the deadline's
capacity test), deduplicating it and putting it on the queue. What the API and schedule functions
call on a submit; the tables and the queue it writes are in its own adapters."""
