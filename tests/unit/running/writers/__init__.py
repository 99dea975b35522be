"""Unit tests of exports/running/writers/, named after the module each one tests."""
