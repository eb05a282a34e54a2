"""Memory a process has had is kept for its next array instead of going back to the kernel:
a run's conversion and report make arrays of megabytes, one after another, and on VMs a page
the kernel hands out anew costs about 1 s a GB to zero and map. keep_freed() (once, before
the first array: the store and the report call it) has glibc's malloc keep what is freed
(M_TRIM_THRESHOLD) and serve arrays up to 32 MiB, its most, from its heap
(M_MMAP_THRESHOLD), and Arrow allocate with that malloc (its system pool) rather than its
bundled mimalloc, and every thread allocate from malloc's one main arena (M_ARENA_MAX): a
thread's own arena lives in heaps of 64 MB that glibc unmaps once empty, so a thread new to
a run (the summary's, a sweep worker's) got fresh pages for arrays the process had had
before; give_back() returns what was kept before a phase of larger arrays, which glibc
serves by mmap anyway. What it saves: docs/performance.md, "The records store's memory".
"""
from __future__ import annotations

import ctypes

import pyarrow as pa

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8  # glibc's malloc.h
_KEEP_FREED = 1 << 30
_MMAP_AT = 32 << 20  # glibc's largest, on 64-bit
_kept = False


def _glibc():
    try:
        libc = ctypes.CDLL(None)
        return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


def keep_freed() -> None:
    """From here on, the process keeps what it frees (idempotent)."""
    global _kept
    if _kept:
        return
    _kept = True
    pa.set_memory_pool(pa.system_memory_pool())
    if libc := _glibc():  # not glibc: its own malloc's ways stand
        libc.mallopt(_M_TRIM_THRESHOLD, _KEEP_FREED)
        libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_AT)
        libc.mallopt(_M_ARENA_MAX, 1)


def give_back() -> None:
    """The freed memory malloc kept goes back to the kernel (before a phase of larger arrays)."""
    if libc := _glibc():
        libc.malloc_trim(0)
