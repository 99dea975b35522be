"""Unit tests of exports/running/fan_out/, named after the module each one tests."""
