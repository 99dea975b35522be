"""Unit tests of exports/running/writers/pdf/, named after the module each one tests."""
