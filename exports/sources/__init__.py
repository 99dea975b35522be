"""Source kinds: one package per kind (its declaration model, what the loader checks, how its
export types and readers are built, what the deployment grants it), registered once in
:mod:`exports.sources.registry`. docs/how-to/add-a-source-kind.md walks through adding one."""
