"""File writers that stream rows into a byte sink, and the sink that uploads them in parts."""
