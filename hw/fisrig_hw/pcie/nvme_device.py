"""The simulated NVMe controller at its link's TLP interface (sim/nvme's device_c.h, the native
build's lib/libfisrig_nvme_device.so) on a SimPCIePHY's streams in a Migen simulation: a beat
each way each cycle, a cycle a beat time (4 ns at Gen2 x4). What the root port's gateware is
held to before the Verilator runner links the same library."""
from __future__ import annotations

import ctypes
import os

from migen import passive

from fisrig_hw.native import native_build


class _Beat(ctypes.Structure):
    _fields_ = [("valid", ctypes.c_uint8), ("first", ctypes.c_uint8), ("last", ctypes.c_uint8),
                ("be", ctypes.c_uint8), ("dat", ctypes.c_uint64)]


class DeviceUnavailable(RuntimeError):
    pass


def _library():
    path = os.path.join(native_build(), "lib", "libfisrig_nvme_device.so")
    if not os.path.exists(path):
        raise DeviceUnavailable(f"build the native parts first (make native): {path}")
    lib = ctypes.CDLL(path)
    lib.fisrig_nvme_device_new.restype = ctypes.c_void_p
    lib.fisrig_nvme_device_new.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint, ctypes.c_uint,
                                           ctypes.c_char_p, ctypes.c_size_t]
    lib.fisrig_nvme_device_clock.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Beat), ctypes.c_int, ctypes.POINTER(_Beat)]
    lib.fisrig_nvme_device_free.argtypes = [ctypes.c_void_p]
    lib.fisrig_nvme_device_cycles.restype = ctypes.c_uint64
    lib.fisrig_nvme_device_cycles.argtypes = [ctypes.c_void_p]
    lib.fisrig_nvme_device_stats_string.restype = ctypes.c_size_t
    lib.fisrig_nvme_device_stats_string.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    return lib


class NvmeBeatDevice:
    """The device on `phy` (a SimPCIePHY): run(phy) is the Migen process that clocks it."""

    def __init__(self, profile: str = "tiny-1gb", faults: str | None = None, gen: int = 2, lanes: int = 4):
        self._lib = _library()
        err = ctypes.create_string_buffer(256)
        self._dev = self._lib.fisrig_nvme_device_new(profile.encode(), faults.encode() if faults else None,
                                                     gen, lanes, err, len(err))
        if not self._dev:
            raise ValueError(err.value.decode())
        self.tlps_to_rig: list[list[tuple[int, int]]] = []  # each TLP the device sent, as beats

    def stats(self) -> dict[str, int]:
        buf = ctypes.create_string_buffer(1024)
        self._lib.fisrig_nvme_device_stats_string(self._dev, buf, len(buf))
        return {k: int(v) for k, v in (line.split() for line in buf.value.decode().splitlines())}

    def close(self) -> None:
        if self._dev:
            self._lib.fisrig_nvme_device_free(self._dev)
            self._dev = None

    @passive
    def run(self, phy):
        """Each cycle an edge: the rig's beat on phy.sink taken (the device is always ready),
        whether the rig took the device's beat on phy.source, and the device's next beat put there."""
        yield phy.sink.ready.eq(1)
        out = _Beat()
        beats: list[tuple[int, int]] = []
        while True:
            b_in = _Beat()
            if (yield phy.sink.valid):
                b_in.valid, b_in.first, b_in.last = 1, (yield phy.sink.first), (yield phy.sink.last)
                b_in.be, b_in.dat = (yield phy.sink.be), (yield phy.sink.dat)
            took = bool(out.valid) and bool((yield phy.source.ready))
            if took:
                beats.append((out.dat, out.be))
                if out.last:
                    self.tlps_to_rig.append(beats)
                    beats = []
            self._lib.fisrig_nvme_device_clock(self._dev, ctypes.byref(b_in), int(took), ctypes.byref(out))
            yield phy.source.valid.eq(out.valid)
            yield phy.source.first.eq(out.first)
            yield phy.source.last.eq(out.last)
            yield phy.source.be.eq(out.be)
            yield phy.source.dat.eq(out.dat)
            yield
