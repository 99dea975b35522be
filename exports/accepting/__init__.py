"""Use cases: what the handlers call. They see ports, never SDK clients."""
