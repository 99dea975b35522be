"""Unit tests of exports/sources/mysql/, named after the module each one tests."""
