"""MySQL sources (RDS MySQL, Aurora MySQL, MariaDB): SQL export types over a database the workers can reach."""
