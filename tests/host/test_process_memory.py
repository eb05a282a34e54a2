"""process_memory's set-up holds in a process that imports fisrig first, as `fisrig` does:
the report's arrays, the largest too and those made on the phase work's threads, come from
glibc's one heap and are reused there once freed, rather than mapped anew (whose pages this
machine faults in at about 1 s a GB). Each case runs in a fresh interpreter: pytest's own
workers have made threads (and so malloc arenas) before any test imports fisrig."""
import ctypes
import json
import subprocess
import sys

import pytest

PROBE = r"""
import fisrig  # first, as the fisrig command imports it
import ctypes, json, sys, threading
import numpy as np
import fisrig.results  # Arrow's pool, as a run has it

class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2
SIZE = 200 << 20  # bytes: far over glibc's 32 MiB at which it would map an array of its own

def made(on_thread):
    box = []
    make = lambda: box.append(np.ones(SIZE // 8, dtype=np.int64))
    if on_thread:
        t = threading.Thread(target=make)
        t.start()
        t.join()
    else:
        make()
    return box[0]

on_thread = sys.argv[1] == "thread"
seen = []
base = libc.mallinfo2()
for _ in range(6):  # glibc hands arenas to new threads in turn: six threads see every one
    a = made(on_thread)
    during = libc.mallinfo2()
    del a
    after = libc.mallinfo2()
    seen.append({"mapped": during.hblkhd - base.hblkhd, "heap": during.arena, "kept": after.fordblks})
print(json.dumps({"size": SIZE, "seen": seen}))
"""


@pytest.mark.parametrize("where", ["main", "thread"], ids=["main thread", "other threads"])
def test_large_arrays_come_from_the_heap_and_its_memory_is_used_again(where):
    if not hasattr(ctypes.CDLL(None), "mallinfo2"):
        pytest.skip("not glibc 2.33 or later: no mallinfo2 to read the heap with")
    done = subprocess.run([sys.executable, "-c", PROBE, where], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    seen = out["seen"]
    assert [s["mapped"] for s in seen] == [0] * 6  # never mapped apart
    assert all(s["kept"] >= out["size"] for s in seen)  # freed, kept for the next array (M_TRIM_THRESHOLD)
    # The heap does not grow an array's worth each time: freed memory serves the next
    # arrays. (On a thread glibc now and then takes a second array's worth once before it
    # reuses both: seen in about half the runs.)
    assert max(s["heap"] for s in seen) < 2.5 * out["size"]
