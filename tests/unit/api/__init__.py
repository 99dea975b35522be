"""Unit tests of exports/api/, named after the module each one tests."""
