"""The ``ros2-shm`` variant's image transport: pixels in POSIX shared memory, names on topics.

This is the HPRM paper's second baseline ("ROS 2 + shared memory"): what a ROS 2 team does
by hand when DDS copies of large images hurt. The sim writes each image into a segment it
owns and publishes the message without pixels, with ``frame_id = "shm:NAME"``; readers map
the segment by name. One segment per stream suffices because the loop is lockstep (the sim
writes frame i+1 only after the control of frame i came back, i.e. after every reader is
done with frame i). The owner unlinks its segments on close and at exit, readers never do.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import secrets
from multiprocessing import resource_tracker, shared_memory

import numpy as np

PREFIX = "shm:"


class ShmWriter:
    """Owns one segment per stream; `write` returns the frame_id naming it."""

    def __init__(self) -> None:
        self._segments: dict[str, shared_memory.SharedMemory] = {}
        self._tag = f"carla_demo_{os.getpid()}_{secrets.token_hex(4)}"
        atexit.register(self.close)

    def write(self, stream: str, pixels: np.ndarray) -> str:
        seg = self._segments.get(stream)
        if seg is None or seg.size < pixels.nbytes:
            if seg is not None:
                seg.close()
                seg.unlink()
            seg = shared_memory.SharedMemory(
                f"{self._tag}_{stream}", create=True, size=pixels.nbytes
            )
            self._segments[stream] = seg
        np.ndarray(pixels.shape, np.uint8, seg.buf)[...] = pixels
        return PREFIX + seg.name

    def close(self) -> None:
        for seg in self._segments.values():
            seg.close()
            seg.unlink()
        self._segments.clear()


class ShmReader:
    """Maps segments by name once and hands out views (valid until the next frame)."""

    def __init__(self) -> None:
        self._segments: dict[str, shared_memory.SharedMemory] = {}
        atexit.register(self.close)

    def read(self, frame_id: str, shape: tuple[int, ...]) -> np.ndarray:
        if not frame_id.startswith(PREFIX):
            raise ValueError(f"frame_id {frame_id!r} does not name a shared-memory image")
        name = frame_id[len(PREFIX) :]
        seg = self._segments.get(name)
        if seg is None:
            seg = shared_memory.SharedMemory(name)
            # Python < 3.13 registers attached segments with its resource tracker, which
            # would unlink the owner's segment when this reader exits.
            resource_tracker.unregister(seg._name, "shared_memory")  # type: ignore[attr-defined]
            self._segments[name] = seg
        return np.ndarray(shape, np.uint8, seg.buf)

    def close(self) -> None:
        for seg in self._segments.values():
            with contextlib.suppress(BufferError):  # a view still held: unmapped at exit
                seg.close()
        self._segments.clear()
