"""The reference format, the block header, and the errors of the object store.

A :class:`Ref` is what travels instead of a payload: 40 bytes naming an
arena, a range in it and the generation of the block it lies in, so that a
consumer can tell a stale or forged reference from a live one (the block
header the producer rewrites on free carries the generation too)."""

from __future__ import annotations

import fcntl
import logging
import mmap
import struct
from collections.abc import Hashable
from typing import NamedTuple

from hprm_core.errors import HprmError

log = logging.getLogger("hprm.object_store")


ALIGN = 64  # block alignment: cache line, and enough for every numpy dtype
HEADER = 64  # per-block header, keeps the data 64-byte aligned
DEFAULT_ARENA_BYTES = 64 << 20
DEFAULT_MAX_BYTES = 1 << 30
ARENA_PREFIX = "hprm-arena-"

_REF = struct.Struct("<QQQQQ")  # arena_id, offset, length, generation, block
_HDR = struct.Struct("<8sQQQ")  # magic, generation, capacity, reserved
_MAGIC = b"HPRMBLK1"
_FREED = b"HPRMFREE"
_PAGE = mmap.PAGESIZE
_REQUIRED_SEALS = fcntl.F_SEAL_SHRINK


class ObjectStoreError(HprmError):
    """Misuse of the object store, or a reference it cannot honour."""


class StaleRefError(ObjectStoreError):
    """A reference to a block that was freed, reused, never existed, or lies in
    an arena this process does not have."""


class StoreFullError(ObjectStoreError):
    """No room for an allocation under the store's ``on_full`` policy."""


def _round_up(n: int, to: int) -> int:
    return (n + to - 1) // to * to


class _RefFields(NamedTuple):
    arena_id: int
    offset: int
    length: int
    generation: int
    block: int


class Ref(_RefFields):
    """Where an object lies: ``length`` bytes at ``offset`` of arena
    ``arena_id``, inside the block whose data starts at ``block`` (equal to
    ``offset`` unless the reference names part of a block, the default) and
    was allocated with ``generation``. A named tuple: one is made for every
    large message on each side, where a frozen dataclass's constructor (a call
    per field) cost 3x as much run cold.

    >>> r = Ref(arena_id=7, offset=64, length=10, generation=3)
    >>> Ref.unpack(r.pack()) == r, len(r.pack()), r.block
    (True, 40, 64)
    """

    __slots__ = ()

    SIZE = _REF.size

    def __new__(
        cls, arena_id: int, offset: int, length: int, generation: int, block: int = -1
    ) -> Ref:
        return tuple.__new__(cls, (arena_id, offset, length, generation,
                                   offset if block == -1 else block))  # fmt: skip

    @staticmethod
    def malformed(fields: tuple[int, ...]) -> bool:
        """Whether unpacked (arena, offset, length, generation, block) cannot be a Ref:
        generation 0 is never allocated, and a block starts at or before its offset."""
        return fields[3] == 0 or fields[4] > fields[1]

    def pack(self) -> bytes:
        """The fixed 40-byte little-endian wire form."""
        return _REF.pack(*self)

    @classmethod
    def unpack(cls, buf: bytes | bytearray | memoryview) -> Ref:
        """Inverse of :meth:`pack`; a wrong size or impossible field is an
        :class:`ObjectStoreError`."""
        if len(buf) != _REF.size:
            raise ObjectStoreError(f"a packed Ref is {_REF.size} bytes, got {len(buf)}")
        fields = _REF.unpack(buf)
        if cls.malformed(fields):
            a, off, _, gen, block = fields
            raise ObjectStoreError(
                f"malformed Ref (arena {a:#x}, offset {off}, block {block}, generation {gen})"
            )
        return tuple.__new__(cls, fields)

    def describe(self) -> str:
        return (
            f"arena {self.arena_id:#x} offset {self.offset} length {self.length} "
            f"generation {self.generation}"
        )


class ArenaInfo(NamedTuple):
    """An arena as passed between processes: its id, memfd and size in bytes."""

    arena_id: int
    fd: int
    size: int


class Release(NamedTuple):
    """A release token: the consumer dropped its last view of ``ref``, which it
    received from ``owner`` (the peer to send the token to)."""

    owner: Hashable
    ref: Ref
