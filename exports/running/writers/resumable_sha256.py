"""SHA-256 whose running state can be saved and restored in another process.

A long CSV export is written by several worker invocations, and the file's sha256 must cover
every byte. ``hashlib`` objects cannot be pickled or rebuilt from a state, so the running hash
uses OpenSSL's ``SHA256_Init/Update/Final`` through ``ctypes`` (the library ``hashlib`` uses,
at the same speed) and saves its ``SHA256_CTX`` as portable values: the eight
chaining words, the length in bits and the bytes of the unfinished 64-byte block. Those values
are the whole state of SHA-256 (FIPS 180-4), so a restored hash continues exactly where the
saved one stopped, on any machine.

When OpenSSL's functions are missing (or fail the self-check below), :func:`new_sha256` falls
back to ``hashlib``: the digest is the same, only :meth:`snapshot` is unavailable, so such a run
cannot hand over to a new invocation.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import logging
from dataclasses import dataclass
from functools import cache
from typing import Any, Protocol

_BLOCK_BYTES = 64
_DIGEST_BYTES = 32

logger = logging.getLogger(__name__)


class NotResumable(Exception):
    """This hash cannot save its state (no OpenSSL SHA256_CTX available)."""


@dataclass(frozen=True)
class Sha256State:
    """The complete state of a running SHA-256, as portable values."""

    words: tuple[int, ...]
    length_bits: int
    pending: bytes

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form (the checkpoint stores it)."""
        return {"words": list(self.words), "length_bits": self.length_bits, "pending": self.pending.hex()}

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> Sha256State:
        """The state :meth:`to_json` wrote; ``ValueError`` if it cannot be one."""
        words = tuple(int(word) for word in value["words"])
        pending = bytes.fromhex(value["pending"])
        length_bits = int(value["length_bits"])
        if len(words) != 8 or not all(0 <= word < 2**32 for word in words):
            raise ValueError("a SHA-256 state has eight 32-bit words")
        if len(pending) >= _BLOCK_BYTES or length_bits % 8 or (length_bits // 8) % _BLOCK_BYTES != len(pending):
            raise ValueError("the pending bytes do not match the length")
        return cls(words, length_bits, pending)


class RunningSha256(Protocol):
    """What the sink needs from a running hash."""

    def update(self, data: bytes) -> None:
        """Hash ``data`` next."""

    def hexdigest(self) -> str:
        """The digest of everything so far (the hash can go on afterwards)."""

    def snapshot(self) -> Sha256State:
        """The state to continue from elsewhere; :class:`NotResumable` if it has none."""


class _Sha256Ctx(ctypes.Structure):
    # openssl/sha.h: SHA_LONG h[8]; SHA_LONG Nl, Nh; SHA_LONG data[16]; unsigned int num, md_len;
    _fields_ = (
        ("h", ctypes.c_uint32 * 8),
        ("Nl", ctypes.c_uint32),
        ("Nh", ctypes.c_uint32),
        ("data", ctypes.c_uint8 * _BLOCK_BYTES),
        ("num", ctypes.c_uint),
        ("md_len", ctypes.c_uint),
    )


# Sonames to try when ``find_library`` finds nothing (it needs ldconfig or a compiler, which a
# Lambda runtime may lack): OpenSSL 3, then 1.1.
_SONAMES = ("libcrypto.so.3", "libcrypto.so.1.1")


@cache
def _libcrypto() -> Any | None:
    """OpenSSL's libcrypto with the SHA-256 functions typed, or None (logged: long exports then
    cannot hand over)."""
    lib = None
    for name in filter(None, (ctypes.util.find_library("crypto"), *_SONAMES)):
        try:
            lib = ctypes.CDLL(name)
            functions = (lib.SHA256_Init, lib.SHA256_Update, lib.SHA256_Final)
            break
        except (OSError, AttributeError):
            lib = None
    if lib is None:
        logger.warning("OpenSSL's SHA-256 is not available; long exports cannot hand over")
        return None
    for function in functions:
        function.restype = ctypes.c_int
    lib.SHA256_Init.argtypes = (ctypes.POINTER(_Sha256Ctx),)
    lib.SHA256_Update.argtypes = (ctypes.POINTER(_Sha256Ctx), ctypes.c_char_p, ctypes.c_size_t)
    lib.SHA256_Final.argtypes = (ctypes.c_char_p, ctypes.POINTER(_Sha256Ctx))
    return lib if _self_check(lib) else None


class OpenSslSha256:
    """A running SHA-256 on OpenSSL's ``SHA256_CTX``, saved and restored as :class:`Sha256State`."""

    def __init__(self, lib: Any, state: Sha256State | None = None) -> None:
        self._lib = lib
        self._ctx = _Sha256Ctx()
        if lib.SHA256_Init(ctypes.byref(self._ctx)) != 1:
            raise RuntimeError("SHA256_Init failed")
        if state is not None:
            self._restore(state)

    def update(self, data: bytes) -> None:
        """Hash ``data`` next."""
        if not isinstance(data, bytes):
            data = bytes(data)
        if self._lib.SHA256_Update(ctypes.byref(self._ctx), data, len(data)) != 1:
            raise RuntimeError("SHA256_Update failed")

    def hexdigest(self) -> str:
        """The digest so far, computed on a copy so the hash can go on."""
        copy = _Sha256Ctx()
        ctypes.pointer(copy)[0] = self._ctx
        digest = ctypes.create_string_buffer(_DIGEST_BYTES)
        if self._lib.SHA256_Final(digest, ctypes.byref(copy)) != 1:
            raise RuntimeError("SHA256_Final failed")
        return digest.raw.hex()

    def snapshot(self) -> Sha256State:
        """The state as portable values."""
        ctx = self._ctx
        return Sha256State(
            words=tuple(ctx.h),
            length_bits=(ctx.Nh << 32) | ctx.Nl,
            pending=bytes(ctx.data)[: ctx.num],
        )

    def _restore(self, state: Sha256State) -> None:
        ctx = self._ctx
        for index, word in enumerate(state.words):
            ctx.h[index] = word
        ctx.Nl = state.length_bits & 0xFFFFFFFF
        ctx.Nh = state.length_bits >> 32
        ctypes.memmove(ctx.data, state.pending, len(state.pending))
        ctx.num = len(state.pending)
        ctx.md_len = _DIGEST_BYTES


class HashlibSha256:
    """The fallback: ``hashlib``'s SHA-256, which cannot be saved."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()

    def update(self, data: bytes) -> None:
        """Hash ``data`` next."""
        self._hash.update(data)

    def hexdigest(self) -> str:
        """The digest so far."""
        return self._hash.hexdigest()

    def snapshot(self) -> Sha256State:
        """Always :class:`NotResumable`."""
        raise NotResumable("hashlib cannot save a SHA-256 state")


def _self_check(lib: Any) -> bool:
    """Whether a state saved mid-block and restored in a fresh context gives hashlib's digests."""
    message = bytes(range(256)) * 3
    for cut in (0, 1, 63, 64, 65, 200, len(message)):
        first = OpenSslSha256(lib)
        first.update(message[:cut])
        second = OpenSslSha256(lib, Sha256State.from_json(first.snapshot().to_json()))
        second.update(message[cut:])
        if second.hexdigest() != hashlib.sha256(message).hexdigest():
            return False
    return True


def resumable_available() -> bool:
    """Whether running hashes can be saved on this machine."""
    return _libcrypto() is not None


def new_sha256(state: Sha256State | None = None) -> RunningSha256:
    """A running SHA-256, continuing from ``state`` if given (which needs OpenSSL)."""
    lib = _libcrypto()
    if lib is not None:
        return OpenSslSha256(lib, state)
    if state is not None:
        raise NotResumable("cannot continue a saved SHA-256 state without OpenSSL's SHA256_CTX")
    return HashlibSha256()
