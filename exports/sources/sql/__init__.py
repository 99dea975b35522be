"""What any SQL source kind reuses: the SQL export type (keyset pages, resume, partitions,
counts), the ports a SQL reader fulfils, the shared kind (:class:`.kind.SqlKind`) and how its
types are made, and the connection pieces (secrets, CA bundle) PostgreSQL and MySQL share."""
