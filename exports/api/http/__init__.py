"""The HTTP edge: who is calling, what the request envelope may be, how errors look."""
