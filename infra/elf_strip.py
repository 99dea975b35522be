"""Strip the symbol tables and debug sections of the native libraries in a Lambda package, in
pure Python: the arm64 libraries are built on any machine (a Mac, an x86_64 Linux whose GNU
``strip`` does not read arm64 files), so no binutils are assumed.

What goes: sections no loader reads (not ``SHF_ALLOC``): the static symbol table (``.symtab``)
with its string table, and ``.debug_*`` sections. What stays: every byte the program headers map
(code, data, ``.dynsym``, ``.dynstr``: what the dynamic linker and ``ctypes`` resolve by), every
other section header, and the remaining non-allocated sections (``.comment``, the section name
table) moved down behind the mapped bytes. The same as ``strip --strip-unneeded`` does to a
shared library's file size, nothing more: a file of any other shape is left as it is
(:func:`strip_file` says whether it changed it).

A file is changed only when the sections to drop come after every allocated section in the
section header table (as linkers write them), so the section indices that ``.dynsym`` entries
and relocations name keep their meaning, and no kept section links to a dropped one.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

ELF_MAGIC: Final = b"\x7fELF"
_ELFCLASS64: Final = 2
_ELFDATA2LSB: Final = 1
# The ELF64 file header (little endian): e_ident, e_type, e_machine, e_version, e_entry, e_phoff,
# e_shoff, e_flags, e_ehsize, e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx.
_HEADER: Final = struct.Struct("<16sHHIQQQIHHHHHH")
# Where e_shoff, and e_shnum with e_shstrndx, are in it (rewritten after stripping).
_SHOFF_AT: Final = 0x28
_SHNUM_AT: Final = 0x3C
# An ELF64 section header and a program header.
_SECTION: Final = struct.Struct("<IIQQQQIIQQ")
_PROGRAM: Final = struct.Struct("<IIQQQQQQ")
_SHF_ALLOC: Final = 0x2
_SHF_INFO_LINK: Final = 0x40
_SHT_SYMTAB: Final = 2
_SHT_NOBITS: Final = 8
_SHT_REL: Final = 9
_SHT_RELA: Final = 4
# File names of native libraries in a package: CPython extensions and shared libraries (``.so``,
# ``.so.2600``, ``.so.3``).
_LIBRARY_SUFFIX: Final = ".so"


@dataclass(frozen=True)
class _Section:
    name: int
    type: int
    flags: int
    addr: int
    offset: int
    size: int
    link: int
    info: int
    align: int
    entsize: int

    def pack(self) -> bytes:
        return _SECTION.pack(
            self.name,
            self.type,
            self.flags,
            self.addr,
            self.offset,
            self.size,
            self.link,
            self.info,
            self.align,
            self.entsize,
        )

    @property
    def allocated(self) -> bool:
        return bool(self.flags & _SHF_ALLOC)

    def end(self) -> int:
        return self.offset + (0 if self.type == _SHT_NOBITS else self.size)


def _sections(data: bytes, offset: int, count: int, size: int) -> list[_Section]:
    return [_Section(*_SECTION.unpack_from(data, offset + index * size)) for index in range(count)]


def _name(data: bytes, names: _Section, section: _Section) -> bytes:
    start = names.offset + section.name
    return data[start : data.index(b"\0", start)]


def _dropped(data: bytes, sections: list[_Section], names: _Section) -> set[int]:
    """Indices of the sections to drop: the static symbol table, its strings, debug sections."""
    dropped: set[int] = set()
    for index, section in enumerate(sections):
        if section.allocated or index == 0:
            continue
        name = _name(data, names, section)
        if section.type == _SHT_SYMTAB:
            dropped.update((index, section.link))
        elif name.startswith((b".debug_", b".zdebug_")):
            dropped.add(index)
    return {index for index in dropped if 0 < index < len(sections) and not sections[index].allocated}


def _align(value: int, alignment: int) -> int:
    return value if alignment <= 1 else -(-value // alignment) * alignment


def stripped(data: bytes) -> bytes | None:
    """``data`` (an ELF file) without its static symbols and debug sections; None when it is not
    a 64-bit little-endian ELF file, has nothing to drop, or is not laid out as this expects."""
    if len(data) < _HEADER.size or data[:4] != ELF_MAGIC or data[4] != _ELFCLASS64 or data[5] != _ELFDATA2LSB:
        return None
    fields = _HEADER.unpack_from(data)
    phoff, shoff, ehsize = fields[5], fields[6], fields[8]
    phentsize, phnum, shentsize, shnum, shstrndx = fields[9:]
    if shoff == 0 or shnum == 0 or shentsize != _SECTION.size or phentsize not in (0, _PROGRAM.size):
        return None
    sections = _sections(data, shoff, shnum, shentsize)
    dropped = _dropped(data, sections, sections[shstrndx])
    if not dropped or shstrndx in dropped:
        return None
    if min(dropped) < max(index for index, section in enumerate(sections) if section.allocated):
        return None  # an allocated section after a dropped one: its index would move
    kept = [index for index in range(shnum) if index not in dropped]
    new_index = {old: new for new, old in enumerate(kept)}
    # Everything the loader maps, and every allocated section, stays where it is.
    programs = (_PROGRAM.unpack_from(data, phoff + index * phentsize) for index in range(phnum))
    mapped_end = max(
        [ehsize, phoff + phnum * phentsize]
        + [offset + filesz for (_type, _flags, offset, _vaddr, _paddr, filesz, _memsz, _align) in programs]
        + [section.end() for section in sections if section.allocated]
    )
    out = bytearray(data[:mapped_end])
    headers: list[_Section] = []
    for old in kept:
        section = sections[old]
        link = section.link
        if link:
            if link in dropped:
                return None  # a kept section refers to a dropped one (e.g. relocations of .symtab)
            link = new_index[link]
        info = section.info
        if section.type in (_SHT_REL, _SHT_RELA) and section.flags & _SHF_INFO_LINK and info:
            if info in dropped:
                return None
            info = new_index[info]
        offset = section.offset
        if old != 0 and not section.allocated and section.type != _SHT_NOBITS and section.size:
            if section.offset < mapped_end:
                return None  # unmapped bytes inside the mapped range: not a layout this handles
            offset = _align(len(out), max(section.align, 1))
            out.extend(b"\0" * (offset - len(out)))
            out.extend(data[section.offset : section.offset + section.size])
        headers.append(replace(section, link=link, info=info, offset=offset))
    new_shoff = _align(len(out), 8)
    out.extend(b"\0" * (new_shoff - len(out)))
    for section in headers:
        out.extend(section.pack())
    struct.pack_into("<Q", out, _SHOFF_AT, new_shoff)
    struct.pack_into("<HH", out, _SHNUM_AT, len(headers), new_index[shstrndx])
    return bytes(out) if len(out) < len(data) else None


def native_libraries(package_dir: Path) -> Iterator[Path]:
    """The ELF files of a package (``*.so`` and versioned ``*.so.N``), in a stable order."""
    for path in sorted(package_dir.rglob("*")):
        if path.is_file() and not path.is_symlink() and _LIBRARY_SUFFIX in path.suffixes:
            yield path


def strip_file(path: Path) -> bool:
    """Strip ``path`` in place; whether it changed."""
    data = path.read_bytes()
    smaller = stripped(data)
    if smaller is None:
        return False
    path.write_bytes(smaller)
    return True


def strip_package(package_dir: Path) -> int:
    """Strip every native library of a package; the bytes saved."""
    saved = 0
    for path in native_libraries(package_dir):
        before = path.stat().st_size
        if strip_file(path):
            saved += before - path.stat().st_size
    return saved
