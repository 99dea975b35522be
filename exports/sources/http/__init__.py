"""HTTP sources: export types over the pages of a JSON API the operator declares."""
