"""Unit tests of exports/core/, named after the module each one tests."""
