"""Unit tests of exports/running/formats/, named after the module each one tests."""
