"""The whole rig SoC in litex_sim: VexRiscv running the LiteX BIOS, main RAM, the host
bridge, the engine's ring front end on the bus and the SATA core on the simulated drive's
pins (our litex_sim module). Descriptors go into the submission ring in the ring RAM and the
doorbell is rung, through the BIOS console or through the host bridge; the engine fetches
them, runs them against the drive and writes its records into the completion ring, where
they are read back the same way."""
import struct
import time

import pytest

from fisrig.targets.rig import bridge, soc_run
from fisrig_hw.soc import soc_build
from fisrig.targets.rig.bios_console import BiosConsole
from fisrig_hw.descriptor import *

from fisrig.sata.ata import IDENTIFY_DEVICE as IDENTIFY, READ_DMA_EXT, WRITE_DMA_EXT
# Offsets in the ring RAM, which the CPU does not cache: through the BIOS console the
# records are read by the CPU, which would see stale lines of cached main RAM.
SQ, CQ, DATA = 0x0000, 0x1000, 0x4000
ENTRIES = 8


@pytest.fixture(scope="module")
def soc_dir():
    build_dir = soc_build.default_build_dir()
    soc_build.build(build_dir)
    return build_dir


def test_the_built_soc_evaluates_on_its_clocks_rising_edge_alone(soc_dir):
    """Verilator's list of the built model's triggers: the one that lets the simulation
    skip the clock's falling edge (soc_build.triggers; sim/litex_sim/eval_untraced.cpp)."""
    import os
    assert soc_build.triggers(os.path.join(soc_dir, "gateware", "obj_dir")) == ["@(posedge sys_clk)"]


class BridgeAccess:
    """The host bridge (UARTBone through serial2loopback, on 127.0.0.1), with the console's four verbs."""
    def __init__(self, bridge, regs):
        self.bridge, self.regs = bridge, regs
        self.write_bytes, self.read_bytes = bridge.write_bytes, bridge.read_bytes

    def csr_write(self, name, value):
        self.bridge.write(self.regs[name], value)

    def csr_read(self, name):
        return self.bridge.read(self.regs[name])


@pytest.fixture(params=["bios_console", "host_bridge"])
def access(request, soc_dir, tmp_path):
    """The SoC running in its own directory, reached through the BIOS console (the CPU does
    each access) or through the host bridge (a Wishbone master of its own)."""
    port = soc_run.free_port()
    soc_run.prepare(soc_dir, str(tmp_path), None, b"", "tiny-1gb", "boot_us=100", port)
    console = BiosConsole(soc_dir, sim_dir=str(tmp_path))
    b = None
    try:
        if request.param == "bios_console":
            yield console, console
        else:
            b = bridge.connect(port)
            b.open()
            yield BridgeAccess(b, console.regs), console
    finally:
        if b:
            b.close()
        out = console.close()
    assert "[fisrig_drive] link up at cycle" in out, out[-2000:]


def records(io, ram, count):
    raw = io.read_bytes(ram + CQ, 80 * count)
    return [unpack_cpl(raw[80 * i:80 * (i + 1)]) for i in range(count)]


def test_descriptors_through_the_rings(access):
    io, console = access
    ram = console.mems["ring_ram"]
    assert io.csr_read("ctrl_scratch") == 0x12345678  # LiteX's reset value: the path works
    descs = [
        pack_desc(protocol=Protocol.LINK, command=LINK_WAIT_UP, user_tag=1),
        pack_desc(protocol=Protocol.PIO_IN, command=IDENTIFY, user_tag=2, device=0x40,
                  data_source=DATA_RAM, data_word=0),
        pack_desc(protocol=Protocol.DMA_OUT, command=WRITE_DMA_EXT, user_tag=3, device=0x40,
                  lba=4096, count=16, data_source=DATA_STAMP, data_word=11, compress_pct=100),
        pack_desc(protocol=Protocol.DMA_IN, command=READ_DMA_EXT, user_tag=4, device=0x40,
                  lba=4096, count=16, data_source=DATA_STAMP, data_word=11, compress_pct=100,
                  flags=FLAG_CHECK),
    ]
    for i, d in enumerate(descs):
        io.write_bytes(ram + SQ + 32 * i, d)
    for name, value in [("rings_sq_base", ram + SQ), ("rings_sq_entries", ENTRIES),
                        ("rings_cq_base", ram + CQ), ("rings_cq_entries", ENTRIES),
                        ("rings_data_base", ram + DATA), ("rings_enable", 1)]:
        io.csr_write(name, value)
    io.csr_write("rings_sq_tail", len(descs))  # the doorbell
    # The link-up event record, then one record per descriptor.
    deadline = time.monotonic() + 300
    while io.csr_read("rings_cq_tail") < len(descs) + 1:
        assert time.monotonic() < deadline, "records did not arrive"
    assert io.csr_read("rings_sq_head") == len(descs)
    assert io.csr_read("rig_link_ready") == 1
    recs = records(io, ram, len(descs) + 1)
    event, by_tag = recs[0], {r["user_tag"]: r for r in recs[1:]}
    assert event["user_tag"] == USER_TAG_EVENT and event["slot"] == EV_LINK_UP
    assert sorted(by_tag) == [1, 2, 3, 4]
    for tag, r in by_tag.items():
        assert r["result"] == RESULT_OK and r["check_errors"] == 0, (tag, r)
    assert by_tag[3]["sectors"] == 16 and by_tag[4]["sectors"] == 16
    # The IDENTIFY page came into the data window by DMA: words 27..46, the model.
    words = struct.unpack("<256H", io.read_bytes(ram + DATA, 512))
    model = b"".join(struct.pack(">H", w) for w in words[27:47]).decode().strip()
    assert model == "fisrig SIM-T1 tiny"
    # One clock: the stamps of each command are in phase order on the engine's counter,
    # and the counter the CPU reads runs on past them.
    for r in by_tag.values():
        stamps = [r[k] for k in PHASES if r[k]]
        assert stamps == sorted(stamps), r
    # The rails from a CSR: off (the link goes down, an event record), on (it comes back).
    def wait_records(n):
        deadline = time.monotonic() + 300
        while io.csr_read("rings_cq_tail") < n:
            assert time.monotonic() < deadline, "records did not arrive"
    io.csr_write("rig_power_off", 1)
    assert io.csr_read("rig_rails") == 0
    wait_records(len(descs) + 2)
    io.csr_write("rig_power_on", 1)
    assert io.csr_read("rig_rails") == 1
    wait_records(len(descs) + 3)
    down, up = records(io, ram, len(descs) + 3)[-2:]
    assert (down["slot"], up["slot"]) == (EV_LINK_DOWN, EV_LINK_UP)
    assert up["ts_status"] - down["ts_status"] > 750_000  # LiteSATA's 5 ms stability wait
    io.csr_write("rig_ts_latch", 1)
    hi, lo = struct.unpack("<2I", io.read_bytes(console.regs["rig_ts"], 8))  # CSR words: high first
    assert (hi << 32 | lo) > by_tag[4]["ts_status"]
    # A cut armed from CSRs (no descriptor): 300 ticks after the 1st Data FIS of a write;
    # the write ends LINK_LOST and a POWER_CUT event carries the cut's tick.
    taken = len(descs) + 3
    io.csr_write("rings_cq_head", taken)  # room in the 8-entry completion ring
    io.csr_write("rig_power_trigger", EVENT_DATA | 1 << 8)
    io.csr_write("rig_power_delay", 300)
    io.csr_write("rig_power_arm", 1)
    assert io.csr_read("rig_power_armed") == 1
    io.write_bytes(ram + SQ + 32 * len(descs), pack_desc(
        protocol=Protocol.DMA_OUT, command=WRITE_DMA_EXT, user_tag=5, device=0x40, lba=8192,
        count=64, data_source=DATA_STAMP, data_word=12))
    io.csr_write("rings_sq_tail", len(descs) + 1)
    wait_records(taken + 2)
    time.sleep(1)  # a LINK_DOWN event may follow the two
    tail = io.csr_read("rings_cq_tail")
    after = [unpack_cpl(io.read_bytes(ram + CQ + 80 * (i % ENTRIES), 80)) for i in range(taken, tail)]
    cut = [r for r in after if r["user_tag"] == USER_TAG_EVENT and r["slot"] == EV_POWER_CUT]
    write = [r for r in after if r["user_tag"] == 5]
    assert len(cut) == 1 and len(write) == 1, [(r["user_tag"], r["slot"], r["result"]) for r in after]
    # The cut came 300 ticks into the write's first Data FIS: nothing of it counts as moved
    # (the drive never answered it), and the cut's record says what it counted from.
    assert write[0]["result"] == RESULT_LINK_LOST and write[0]["data_dwords"] == 0
    at = (taken + after.index(cut[0])) % ENTRIES
    trigger = unpack_cut(io.read_bytes(ram + CQ + 80 * at, 80))["ts_trigger"]
    assert trigger > write[0]["ts_h2d"] and cut[0]["ts_status"] - trigger == 300, (cut, write, trigger)
    assert io.csr_read("rig_power_armed") == 0 and io.csr_read("rig_rails") == 0
    io.csr_write("rig_power_on", 1)
