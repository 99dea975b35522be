"""Unit tests of exports/core/config/, named after the module each one tests."""
