"""Unit tests of exports/audit/, named after the module each one tests."""
