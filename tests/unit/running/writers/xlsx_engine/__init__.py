"""Unit tests of exports/running/writers/xlsx_engine/, named after the module each one tests."""
