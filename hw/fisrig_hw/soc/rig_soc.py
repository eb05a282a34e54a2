"""The rig's part of a LiteX SoC, the same in simulation (sim_soc) and on boards
(fisrig_boards): the SATA core's status and controls (RigStatus), the CPU bus watcher, the
engine's ring front end as a bus master, the ring RAM with a second port of its own for the
host bridge, and the tick gate. Their registers have the same names, and the ring RAM and
the tick gate the same addresses, on every SoC; the firmware and the host find the
registers' addresses in each SoC's generated csr.h and csr.json."""

from migen import *

from litex.soc.integration.soc import SoCRegion
from litex.soc.interconnect import wishbone

from fisrig_hw.soc.bus_activity import BusActivity
from fisrig_hw.soc.rig_status import RigStatus
from fisrig_hw.soc.rings import EngineRings
from fisrig_hw.soc.tick_gate import SIZE as TICK_GATE_SIZE, TickGate

# The rings' RAM, in the CPU's IO region (0x8000_0000 up: never cached). The engine writes
# completions and the host the record ring's head behind the CPU's back; in cached RAM the
# firmware had to drop its whole data cache (VexRiscv has no per-line invalidate) before
# every look, and then missed on everything else it touched. 256 KiB: the record ring's
# 2,048 records (baremetal_if.h) and the engine's rings.
RING_RAM_BASE, RING_RAM_SIZE = 0x9000_0000, 0x4_0000
# The tick gate (fisrig_hw.soc.tick_gate): where the firmware waits for its run's first tick.
TICK_GATE_BASE = 0x9100_0000


def add_rig(soc, sata, bridge):
    """Adds the rig around `sata` (a RigCore already in the SoC, in its sys domain) to
    `soc`; `bridge` is the host bridge's Wishbone master (UARTBone's or Etherbone's), which
    reaches the ring RAM through its own port and everything else through the SoC's bus."""
    soc.rig = RigStatus(sata)
    soc.cpu_bus = BusActivity(soc.cpu.ibus, soc.cpu.dbus)
    soc.rings = EngineRings(engine=sata.engine)
    soc.bus.add_master(name="engine_rings", master=soc.rings.bus)
    # The ring RAM has two ports: the SoC's bus (the CPU and the engine) and the host
    # bridge's own. The host drains the record ring when its process gets to it (wall
    # time); through the shared bus each of its reads held the CPU and the engine a few
    # cycles at a time no run could repeat, and every later command moved with them.
    ring_mem = Memory(32, RING_RAM_SIZE // 4)
    soc.ring_ram = wishbone.SRAM(ring_mem, bus=wishbone.Interface(
        data_width=32, address_width=soc.bus.address_width))
    soc.bus.add_slave("ring_ram", soc.ring_ram.bus,
                      SoCRegion(origin=RING_RAM_BASE, size=RING_RAM_SIZE, cached=False))
    soc.ring_ram_host = wishbone.SRAM(ring_mem, bus=wishbone.Interface(
        data_width=32, address_width=soc.bus.address_width))
    bridge_to_bus = wishbone.Interface(data_width=32, address_width=soc.bus.address_width)
    ring_words = (RING_RAM_SIZE // 4).bit_length() - 1

    def in_ring_ram(adr):
        return adr[ring_words:] == (RING_RAM_BASE >> 2) >> ring_words
    soc.bridge_decoder = wishbone.Decoder(bridge, [
        (in_ring_ram, soc.ring_ram_host.bus), (lambda adr: ~in_ring_ram(adr), bridge_to_bus)])
    soc.bus.add_master(name="bridge", master=bridge_to_bus)
    soc.tick_gate = TickGate(sata.now, address_width=soc.bus.address_width)
    soc.bus.add_slave("tick_gate", soc.tick_gate.bus,
                      SoCRegion(origin=TICK_GATE_BASE, size=TICK_GATE_SIZE, cached=False))
