"""PostgreSQL sources: SQL export types over a database the workers can reach."""
