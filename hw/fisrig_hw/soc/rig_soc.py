"""The rig's part of a LiteX SoC, the same in simulation (sim_soc) and on boards
(fisrig_boards): the SATA core's status and controls (RigStatus), the CPU bus watcher, the
engine's ring front end as a bus master, the ring RAM with a second port of its own for the
host bridge (and main RAM's, where the SoC gives one), and the tick gate. Their registers
have the same names, and the ring RAM and the tick gate the same addresses, on every SoC;
the firmware and the host find the registers' addresses in each SoC's generated csr.h and
csr.json."""

from functools import reduce
from operator import or_

from migen import *

from litex.soc.integration.soc import SoCRegion
from litex.soc.interconnect import wishbone

from fisrig_hw.soc.bus_activity import BusActivity
from fisrig_hw.soc.rig_status import RigStatus
from fisrig_hw.soc.rig_capture import (CSR_LOCATIONS as CAPTURE_CSR_LOCATIONS, CSR_PAGING as CAPTURE_CSR_PAGING,
                                        CSR_REGION as CAPTURE_CSR_REGION, RING_BASE as CAPTURE_RING_BASE,
                                        RigCapture, RingBus)
from fisrig_hw.soc.rings import EngineRings
from fisrig_hw.soc.tick_gate import SIZE as TICK_GATE_SIZE, TickGate

# The rings' RAM, in the CPU's IO region (0x8000_0000 up: never cached). The engine writes
# completions and the host the record ring's head behind the CPU's back; in cached RAM the
# firmware had to drop its whole data cache (VexRiscv has no per-line invalidate) before
# every look, and then missed on everything else it touched. 32 KiB: the engine's rings and
# the record ring's indexes (14 KiB), the mailbox at 28 KiB (baremetal_if.h); the records
# are in main RAM. (It was 256 KiB with the records in it: yosys counted 71 block RAMs on the
# STLV7325 then, 15 now; 79.5 and 23.5 on the Acorn.)
RING_RAM_BASE, RING_RAM_SIZE = 0x9000_0000, 0x8000
# The tick gate (fisrig_hw.soc.tick_gate): where the firmware waits for its run's first tick.
TICK_GATE_BASE = 0x9100_0000


def _in_region(origin, size):
    """A Wishbone word address's match for [origin, origin + size), size a power of two and
    origin aligned to it."""
    assert size & (size - 1) == 0 and origin % size == 0, (origin, size)
    words = (size // 4).bit_length() - 1
    return lambda adr: adr[words:] == (origin >> 2) >> words


def add_rig(soc, sata, bridge, main_ram=None, capture_ring=None):
    """Adds the rig around `sata` (a RigCore already in the SoC, in its sys domain) to
    `soc`; `bridge` is the host bridge's Wishbone master (UARTBone's or Etherbone's), which
    reaches the ring RAM through its own port and everything else through the SoC's bus.
    main_ram: (origin, size, memory) of a main RAM whose Memory takes a second port for the
    bridge too (the simulated SoC's, where the records drain from). On a board the bridge
    reaches DRAM through the SoC's bus, and so through LiteX's L2 cache, which writes back and
    holds the firmware's latest records: a DRAM port of the bridge's own would read behind it.
    capture_ring: the analyzer's capture ring's store where it is not the rig core's own block
    RAM (capture_dram.DRAMCaptureStore: its `bus` and `region_size()`), read at the same
    RING_BASE."""
    soc.rig = RigStatus(sata)
    soc.cpu_bus = BusActivity(soc.cpu.ibus, soc.cpu.dbus)
    soc.rings = EngineRings(engine=sata.engine)
    soc.bus.add_master(name="engine_rings", master=soc.rings.bus)
    # The ring RAM (and the simulated SoC's main RAM, which holds the records) has two
    # ports: the SoC's bus (the CPU and the engine) and the host bridge's own. The host
    # drains the record ring when its process gets to it (wall time); through the shared
    # bus each of its reads held the CPU and the engine a few cycles at a time no run could
    # repeat, and every later command moved with them.
    ring_mem = Memory(32, RING_RAM_SIZE // 4)
    soc.ring_ram = wishbone.SRAM(ring_mem, bus=wishbone.Interface(
        data_width=32, address_width=soc.bus.address_width))
    soc.bus.add_slave("ring_ram", soc.ring_ram.bus,
                      SoCRegion(origin=RING_RAM_BASE, size=RING_RAM_SIZE, cached=False))
    soc.ring_ram_host = wishbone.SRAM(ring_mem, bus=wishbone.Interface(
        data_width=32, address_width=soc.bus.address_width))
    bridge_to_bus = wishbone.Interface(data_width=32, address_width=soc.bus.address_width)
    own = [(_in_region(RING_RAM_BASE, RING_RAM_SIZE), soc.ring_ram_host.bus)]
    if main_ram is not None:
        origin, size, mem = main_ram
        soc.main_ram_host = wishbone.SRAM(mem, bus=wishbone.Interface(
            data_width=32, address_width=soc.bus.address_width))
        own.append((_in_region(origin, size), soc.main_ram_host.bus))
    # The analyzer's capture ring's entries, the bridge's alone (the CPU has no use for them).
    if getattr(sata, "capture", None) is not None:
        if capture_ring is None:
            soc.wire_capture_ring = capture_ring = RingBus(sata.capture, address_width=soc.bus.address_width)
        own.append((_in_region(CAPTURE_RING_BASE, capture_ring.region_size()), capture_ring.bus))
    soc.bridge_decoder = wishbone.Decoder(bridge, own + [
        (lambda adr: ~reduce(or_, [match(adr) for match, _ in own]), bridge_to_bus)])
    soc.bus.add_master(name="bridge", master=bridge_to_bus)
    soc.tick_gate = TickGate(sata.now, address_width=soc.bus.address_width)
    soc.bus.add_slave("tick_gate", soc.tick_gate.bus,
                      SoCRegion(origin=TICK_GATE_BASE, size=TICK_GATE_SIZE, cached=False))
    # The analyzer's capture ring, read by the host; its CSRs (wire_capture_*: the host's, not
    # the firmware's rig_*) at the last location, not among the others by name (LiteX's order),
    # so that the firmware's CSR addresses, and the code its CPU times were fitted to, stay.
    if getattr(sata, "capture", None) is not None:
        if (soc.mem_map["csr"], soc.csr.n_locs, soc.csr.paging) != (CAPTURE_CSR_REGION, CAPTURE_CSR_LOCATIONS,
                                                                    CAPTURE_CSR_PAGING):
            raise ValueError("the capture's CSRs go at rig_capture.CSR_BASE: this SoC's CSR region is laid out "
                             "otherwise")
        soc.csr.add("wire_capture", n=soc.csr.n_locs - 1)
        soc.wire_capture = RigCapture(sata.capture, [sata.capture_tx, sata.capture_rx])
