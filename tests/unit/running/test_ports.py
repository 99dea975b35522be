"""Production's shape is the only shape (issue 35): no port of the worker is optional and one
upload protocol serves the result store, so no service branches on a port a fake switched off."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Protocol

from exports.core import ports
from exports.running.dependencies import WorkerDependencies


def test_every_port_of_the_worker_is_required() -> None:
    defaulted = [
        field.name
        for field in dataclasses.fields(WorkerDependencies)
        if field.init and (field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING)
    ]
    assert defaulted == ["clock", "random"]  # the two that are no outside dependency


def test_one_upload_protocol_and_a_result_store_that_always_has_it() -> None:
    uploads = [
        name
        for name, value in vars(ports).items()
        if inspect.isclass(value) and Protocol in value.__mro__ and name.endswith(("Upload", "Parts"))
    ]
    assert uploads == ["ResultUpload"]
    assert inspect.signature(ports.ResultStore.start_upload).return_annotation == "ResultUpload"
    assert not hasattr(ports.ResultStore, "export_files")
