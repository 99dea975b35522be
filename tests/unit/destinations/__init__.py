"""Unit tests of exports/destinations/, named after the module each one tests."""
