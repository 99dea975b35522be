"""Unit tests of exports/export_types/, named after the module each one tests."""
