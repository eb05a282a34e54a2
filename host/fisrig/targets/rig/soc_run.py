"""A compiled program on the rig SoC in litex_sim: the firmware and the program go into
main RAM's image, the BIOS boots the firmware, and each record the firmware writes into its
record ring is drained through the host bridge and handed on as it comes (so a run stopped
half-way keeps what it took). Each run has its own
directory (its main RAM image and its drive's profile and faults), so runs never share
files with the build or with each other."""

import json
import os
import re
import time

from fisrig_hw import contract
from fisrig_hw.soc import soc_build

from fisrig.targets.rig import bridge
from fisrig.targets.rig.bios_console import BiosConsole, ConsoleTimeout

RECORD_BYTES = contract.SIZES["fisrig_run_record"]
# struct fisrig_record_ring (fisrig/baremetal_if.h): byte offsets of its words and records.
_RING = contract.FIELDS["fisrig_record_ring"]
RING_ENTRIES, RING_TAIL, RING_HEAD, RING_RECORDS_AT = (
    _RING[f][0] for f in ("entries", "tail", "head", "records_at"))
RING_LINE = re.compile(r"record ring at 0x([0-9a-f]{8})")


def ring_entries(program_bytes, program_room):
    """The records the firmware's ring holds for a program of `program_bytes`, where main RAM
    holds `program_room` bytes after the boot header (the mailbox's program_room): its
    records go after the program, from there rounded up to FISRIG_RECORD_RING_ALIGN, as many
    as the largest power of two that fits (baremetal_if.h; fisrig_fw_ring_reset). The boot
    header's end is 8 bytes past a 64 KiB boundary on every SoC, so the rounding is the same
    wherever main RAM is."""
    align = contract.FISRIG_RECORD_RING_ALIGN
    end = contract.SIZES["fisrig_boot_header"] + min(program_bytes, program_room)
    skip = -end % align
    room = program_room - min(program_bytes, program_room)
    fit = max(room - skip, 0) // RECORD_BYTES
    return 1 << (fit.bit_length() - 1) if fit else 0


class SocRunError(RuntimeError):
    pass


free_port = soc_build.free_port


def prepare(build_dir, run_dir, firmware, program, profile, faults, bridge_port=None):
    """run_dir gets links to the built simulation's files, its own sim_config.js (the
    drive's profile and faults, the bridge's port) and its own main RAM image (the build's
    when there is no firmware)."""
    soc_build.stage_run_dir(os.path.join(build_dir, "gateware"), run_dir, {"profile": profile, "faults": faults},
                            bridge_port)
    with open(os.path.join(run_dir, "sim_main_ram.init"), "w") as f:
        f.write(soc_build.main_ram_image(firmware, program) if firmware else "")


class RingDrain:
    """Takes records out of the firmware's record ring through the bridge (struct
    fisrig_record_ring in the ring RAM: entries, tail, head and where the records are in main
    RAM)."""
    BURST = 255 // (RECORD_BYTES // 4)  # records a bridge read: UARTBone moves at most 255 words

    def __init__(self, bridge, address, on_record):
        self.bridge, self.address, self.on_record = bridge, address, on_record
        self.entries, self.records_at = (bridge.read(address + f) for f in (RING_ENTRIES, RING_RECORDS_AT))
        if self.entries & (self.entries - 1):
            raise SocRunError(f"the record ring at 0x{address:08x} says it has {self.entries} entries, "
                              "not a power of two: not a fisrig firmware of this version")
        self.head = 0

    def once(self, between=None):
        """Takes what has been written since the last call; returns how many. between(), if
        given, after each burst (the capture's windows: a long drain does not hold them)."""
        tail = self.bridge.read(self.address + RING_TAIL)
        taken = 0
        while self.head != tail:
            if between and taken:
                between()
            slot = self.head & (self.entries - 1)
            n = min((tail - self.head) & 0xFFFFFFFF, self.BURST, self.entries - slot)
            raw = self.bridge.read_bytes(self.records_at + RECORD_BYTES * slot, RECORD_BYTES * n)
            for i in range(n):
                self.on_record(raw[RECORD_BYTES * i:RECORD_BYTES * (i + 1)])
            self.head = (self.head + n) & 0xFFFFFFFF
            taken += n
            self.bridge.write(self.address + RING_HEAD, self.head)  # room for the firmware again
        return taken


def rig_now(link, regs):
    """The rig's counter, through the bridge (RigStatus: latch, then the 64-bit CSR, its
    high word first, in one read of two words: one round trip)."""
    link.write(regs["rig_ts_latch"], 1)
    hi, lo = link.read(regs["rig_ts"], 2)
    return hi << 32 | lo


def _boot(build_dir, run_dir, firmware, program, profile, faults):
    """The simulation started in run_dir with this main RAM, and `boot` sent to its BIOS;
    (console, bridge port). The console is closed if anything fails."""
    port = free_port()
    prepare(build_dir, run_dir, firmware, program, profile, faults, port)
    console = BiosConsole(build_dir, sim_dir=run_dir)
    try:
        console.send("boot 0x{:08x}".format(console.mems["main_ram"]))
    except BaseException:
        console.close()
        raise
    return console, port


def boot_resident(build_dir, run_dir, firmware, profile="tiny-1gb", faults="boot_us=100", on_console=None):
    """The simulated SoC as a board stands between plans: the firmware booted with no program,
    so that it stays resident and takes programs through the bridge's mailbox
    (baremetal_if.h; fisrig.targets.rig.board_run). Returns (console, bridge port) once it serves;
    the caller closes the console, which ends the simulation."""
    on_console = on_console or (lambda line: None)
    console, port = _boot(build_dir, run_dir, firmware, b"", profile, faults)
    try:
        while True:
            line = console.read_line(120)
            on_console(line)
            if "resident, mailbox at" in line:
                return console, port
    except BaseException:
        console.close()
        raise


def drain_to_outcome(drain, outcome_now, deadline, too_long, pause_s=0.005, also=None):
    """Drains the record ring until the firmware's outcome has come (outcome_now(): the
    outcome dict once there is one, else None) and every record it counts is taken; past
    `deadline` (monotonic), raises too_long(records taken). also(), if given, each time
    round and between the record ring's bursts (the capture ring's windows). Returns the
    outcome."""
    outcome, taken = None, 0
    while outcome is None or taken < outcome["records"]:
        if also:
            also()
        got = drain.once(also)
        taken += got
        if outcome is None:
            outcome = outcome_now()
        if time.monotonic() > deadline:
            raise too_long(taken)
        if not got:
            time.sleep(pause_s)
    return outcome


def run(build_dir, run_dir, firmware, program, on_record, profile="tiny-1gb",
        faults="boot_us=100", timeout=1800, on_console=None, host_lag_ticks=0, capture_out=None):
    """Runs program; on_record(bytes) gets each record (struct fisrig_run_record) as the firmware writes it
    into its record ring, drained through the host bridge; on_console(line) each other
    line the firmware prints; returns the firmware's outcome (the JSON fisrig-model
    prints). host_lag_ticks: the host leaves the ring looking full until that many ticks
    after the run's start tick, as a host held up by its machine would (the firmware waits
    and says so). capture_out: where the analyzer's capture windows go (capture.bin:
    fisrig.capture.ring), each read through the bridge as the ring holds it."""
    on_console = on_console or (lambda line: None)
    console, port = _boot(build_dir, run_dir, firmware, program, profile, faults)
    link = None
    deadline = time.monotonic() + timeout
    try:
        ring = None
        while ring is None:
            line = console.read_line(120)
            on_console(line)
            m = RING_LINE.search(line)
            if m:
                ring = int(m.group(1), 16)
            elif line.startswith("{"):
                return json.loads(line)  # ended before it could run (a bad program)
        link = bridge.connect(port)
        link.open()
        drain = RingDrain(link, ring, on_record)
        if host_lag_ticks:
            link.write(ring + RING_HEAD, -drain.entries & 0xFFFFFFFF)  # tail 0 - head = entries: full
            while rig_now(link, console.regs) < contract.FISRIG_RUN_START_TICK + host_lag_ticks:
                time.sleep(0.02)
            link.write(ring + RING_HEAD, 0)

        def outcome_now():
            outcome, line = None, console.poll_line()
            while line is not None:
                if line.startswith("{"):
                    outcome = json.loads(line)
                else:
                    on_console(line)
                if "illegal" in line.lower() or "trap" in line.lower():
                    raise SocRunError("the firmware crashed: " + line)
                if outcome is not None:
                    return outcome  # what it prints after (resident, waiting) is not this run's
                line = console.poll_line()
            return None
        windows = None
        if capture_out is not None:
            from fisrig.capture import ring
            windows = ring.Drain(link, console.regs, capture_out)
        outcome = drain_to_outcome(drain, outcome_now, deadline, lambda taken: SocRunError(
            "the run took longer than {} s; {} records taken".format(timeout, taken)),
            also=windows.once if windows else None)
        if windows:
            windows.finish()
        return outcome
    except (ConsoleTimeout, bridge.BridgeTimeout) as e:
        raise SocRunError(str(e)) from None
    finally:
        if link:
            link.close()
        console.close()
