"""local_stack.moto_patch: a patch stays until its last user uninstalls it; the local stack's
patch of moto's server lists the same service folders, once."""

from moto import backends

from local_stack.embedded_aws import LISTED_ONCE
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
