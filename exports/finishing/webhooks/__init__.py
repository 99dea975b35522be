"""Callbacks to clients: where they may go (SSRF guard) and how they are signed."""
