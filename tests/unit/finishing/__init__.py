"""Unit tests of exports/finishing/, named after the module each one tests."""
