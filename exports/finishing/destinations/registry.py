"""The destination kinds this deployment knows, registered once: the models of the resource
(what is stored, what a request gives, what an answer shows, what a change may carry) are built
from :data:`KINDS` when they are imported, the composition roots build each kind's adapter
from it, and no other module names a kind.
docs/how-to/add-a-destination-kind.md says what a kind is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Annotated, Any, Union, cast

from pydantic import BaseModel, Field

from exports.finishing.destinations.kind import Kind, KindAdapter, KindContext
from exports.finishing.destinations.kinds.s3 import S3Kind
from exports.finishing.destinations.kinds.sftp import SftpKind

# The one registration of each kind, by the name its destinations carry (``kind``), in the order
# the API's document lists them.
KINDS: Mapping[str, Kind] = MappingProxyType({kind.name: kind for kind in (S3Kind(), SftpKind())})


def one_of(models: Iterable[type[BaseModel]]) -> Any:
    """The discriminated union (on ``kind``) of ``models``: how the resource's models take any
    registered kind's target, spec or view."""
    return Annotated[Union[tuple(models)], Field(discriminator="kind")]  # noqa: UP007 (a union of a tuple)


def kind_enum() -> type[StrEnum]:
    """The registered kinds' names as the enum the API's document shows (``DestinationKind``)."""
    kinds = cast(type[StrEnum], StrEnum("DestinationKind", {name.upper(): name for name in KINDS}))
    kinds.__doc__ = "Where files go."
    return kinds


def patch_fields() -> dict[str, Any]:
    """Every kind's fields of ``PATCH /v1/destinations/{id}``, in registration order."""
    return {name: annotation for kind in KINDS.values() for name, annotation in kind.patch_fields.items()}


def adapters(context: KindContext) -> dict[str, KindAdapter]:
    """Each kind's adapter, built from ``context``: what a composition root hands the service
    and the delivery."""
    return {name: kind.adapter(context) for name, kind in KINDS.items()}
