"""Unit tests of exports/running/, named after the module each one tests."""
