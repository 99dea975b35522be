"""Unit tests of exports/sources/, named after the module each one tests."""
