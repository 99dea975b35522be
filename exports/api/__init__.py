"""The HTTP API: its resolver and route registry (:mod:`.app`), what several routes answer with
(:mod:`.answers`), and one module of routes per group (:mod:`.routes`)."""
