"""Unit tests of exports/accepting/, named after the module each one tests."""
