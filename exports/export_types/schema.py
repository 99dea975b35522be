"""The model a declaration file is validated with: :class:`DeclarationFile` with each
registered source kind's model among the sources and its key among a type's keys (where the
key of a kind stood before kinds were registered: after the :class:`TypeHead` keys)."""

from __future__ import annotations

import functools
import operator
from typing import Annotated, Any

from pydantic import Field, create_model

from exports.declared.model import DeclarationFile, Identifier, TypeDecl, TypeHead
from exports.sources.registry import kinds


@functools.cache
def declaration_model() -> type[DeclarationFile]:
    """Built on first use (a cold start that reads no declaration builds no model)."""
    registered = kinds()
    # Each kind's key: optional, one of them per type (the loader checks there is exactly one).
    reads: dict[str, Any] = {kind.type_key: (kind.read_model | None, None) for kind in registered}
    kind_keys = create_model("TypeReads", __base__=TypeHead, __module__=TypeHead.__module__, **reads)
    # Fields in the order of the bases' MRO reversed: the head's, the kinds' keys, then the rest.
    type_model = create_model("TypeDecl", __base__=(TypeDecl, kind_keys), __module__=TypeDecl.__module__)
    # A source is told apart by its ``kind``: an unknown one is refused naming the known ones.
    one_of: Any = functools.reduce(operator.or_, (kind.source_model for kind in registered))
    source: Any = Annotated.__class_getitem__((one_of, Field(discriminator="kind")))  # type: ignore[attr-defined]
    return create_model(
        "DeclarationFile",
        __base__=DeclarationFile,
        __module__=DeclarationFile.__module__,
        sources=(dict[Identifier, source], Field(default_factory=dict)),
        types=(dict[Identifier, type_model], Field(default_factory=dict)),
    )
