"""Examples the documentation shows; not part of the service's packages."""
