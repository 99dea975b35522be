"""Unit tests of exports/finishing/destinations/, named after the module each one tests."""
