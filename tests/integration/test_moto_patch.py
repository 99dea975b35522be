"""local_stack.moto_patch: a patch stays until its last user uninstalls it; the local stack's
patches: moto's server lists the same service folders, once, and botocore sessions share one
loader (installed for the whole test session by tests/conftest.py)."""

import botocore.session
from moto import backends

from local_stack.embedded_aws import LISTED_ONCE, SHARED_LOADER
from local_stack.moto_patch import CountedPatch


class Service:
    def answer(self) -> str:
        return "moto's"


def test_a_patch_stays_until_as_many_uninstalls_as_installs():
    patch = CountedPatch(Service, "answer", lambda original: lambda self: f"faster than {original(self)}")
    patch.install()
    patch.install()  # an in-process local stack in a session that installed it, say
    patch.uninstall()
    assert Service().answer() == "faster than moto's"
    assert patch.original(Service()) == "moto's"

    patch.uninstall()
    assert Service().answer() == "moto's"
    patch.uninstall()  # one too many changes nothing
    assert Service().answer() == "moto's"


def test_the_servers_service_folders_are_listed_once_and_are_motos_own():
    own = list(backends.list_of_moto_modules())
    LISTED_ONCE.install()
    try:
        assert backends.list_of_moto_modules() is backends.list_of_moto_modules()
        assert list(backends.list_of_moto_modules()) == own
    finally:
        LISTED_ONCE.uninstall()
    assert backends.list_of_moto_modules is LISTED_ONCE.original


def test_botocore_sessions_share_one_loader_while_it_is_installed():
    first, second = botocore.session.Session(), botocore.session.Session()
    assert first.get_component("data_loader") is second.get_component("data_loader")
    assert first.get_service_model("dynamodb").operation_names == second.get_service_model("dynamodb").operation_names
    SHARED_LOADER.install()  # a local stack in the session, say
    SHARED_LOADER.uninstall()
    assert botocore.session.Session().get_component("data_loader") is first.get_component("data_loader")
