"""Unit tests of exports/push/, named after the module each one tests."""
