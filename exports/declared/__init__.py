"""How an operator declares sources and export types (exports.toml): the file's model, its
parameters and templates, and what every declared type shares. The source kinds extend it; the
loader and builder (:mod:`exports.export_types`) sit above both."""
