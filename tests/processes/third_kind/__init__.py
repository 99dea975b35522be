"""A third destination kind, registered by a test alone (tests/processes/test_third_destination_kind.py)."""
