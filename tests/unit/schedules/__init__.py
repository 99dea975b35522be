"""Unit tests of exports/schedules/, named after the module each one tests."""
