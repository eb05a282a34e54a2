"""How the host's process takes memory: glibc's malloc set up when the fisrig package is
first imported (fisrig/__init__.py imports this before anything else), Arrow's pool when the
records are first used (results calls set_up_arrow).

A run's conversion and report make arrays of megabytes, one after another, tens of
gigabytes in all for the main job, and on the machines we measure on (VMs) a page of
memory the kernel hands out anew costs about 1 s a GB to zero and map. So memory a
process has had is kept for its next array instead of going back to the kernel: glibc's
malloc keeps what is freed (M_TRIM_THRESHOLD) and serves every array from its heap, the
largest too (M_MMAP_MAX 0: glibc would map each array over 32 MiB anew and unmap it when
freed), from one arena for every thread (M_ARENA_MAX 1: another thread's arena maps what
its 64 MiB heaps cannot hold, whatever M_MMAP_MAX says), and Arrow allocates with that
malloc (its system pool) rather than its bundled mimalloc. Measured:
- on the main job's 36.1 M records (2026-11-27, 2 CPUs), with arrays up to 32 MiB from the
  heap: converting them to records.parquet 25.9 -> 21.9 s of CPU; rebuilding the report
  from it 22.6 -> 20.5 s;
- every array from the one heap (2026-12-01): the report's work on the JEDEC test's
  37.7 M-command NCQ+TRIM replay (phase_work, as the end of that run waits for it) 8.3 and
  6.7 s -> 3.4 and 4.2 s, its process's system time 11.1 and 9.3 s -> 3.1 and 4.4, its
  peak resident memory 7.45 -> 6.36 GB.
What the conversion kept is given back before the report (give_back: malloc_trim returns
the heap's free pages, those amid it too).

M_ARENA_MAX holds only for arenas not made yet: a thread that had malloc'd before it (numpy
and pyarrow start theirs at import) keeps an arena of its own, which glibc then hands to new
threads in turn with the main one, and a 200 MiB array made on such a thread was mapped
anew every other time (measured; tests/host/test_process_memory.py holds the set-up to
never). So this is set up before numpy's
or Arrow's first import in a process that imports fisrig first, as `fisrig` itself does; a
program that imports numpy first gets it on its main thread.
"""
from __future__ import annotations

import ctypes

_M_TRIM_THRESHOLD, _M_MMAP_MAX, _M_ARENA_MAX = -1, -4, -8  # glibc's malloc.h
_KEEP_FREED = 1 << 30


def _glibc():
    try:
        libc = ctypes.CDLL(None)
        return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


def set_up_malloc() -> None:
    if libc := _glibc():  # not glibc: its own malloc's ways stand
        libc.mallopt(_M_TRIM_THRESHOLD, _KEEP_FREED)
        libc.mallopt(_M_MMAP_MAX, 0)
        libc.mallopt(_M_ARENA_MAX, 1)


def set_up_arrow() -> None:
    import pyarrow as pa
    pa.set_memory_pool(pa.system_memory_pool())


def give_back() -> None:
    """The freed memory malloc kept goes back to the kernel (before a phase of larger arrays)."""
    if libc := _glibc():
        libc.malloc_trim(0)


set_up_malloc()
