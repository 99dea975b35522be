"""Unit tests of exports/declared/, named after the module each one tests."""
