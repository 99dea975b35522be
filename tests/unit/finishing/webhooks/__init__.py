"""Unit tests of exports/finishing/webhooks/, named after the module each one tests."""
