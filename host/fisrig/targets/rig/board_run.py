"""A compiled program on a rig board through LiteX's litex_server (`--target board --url
HOST:PORT`): the host reaches the board only through the server's Etherbone-over-TCP (LiteX's
RemoteClient), whatever link the server has to the board (Etherbone on Ethernet, UARTBone on
a serial port). The firmware must be booted with no program, so that it stays resident
(fisrig/baremetal_if.h's mailbox): each run puts the program in main RAM, says GO in the
mailbox, drains the record ring as `--target rtl` does (soc_run.RingDrain) and reads the
outcome from the mailbox. The simulated SoC stands in for a board in the tests: the same
firmware booted resident, litex_server in front of its bridge."""
import json
import socket
import time

from fisrig_hw import contract
from fisrig_hw.soc import soc_build
from fisrig_hw.soc.rig_soc import RING_RAM_BASE
from litex.soc.integration.soc_core import SoCCore
from litex.tools.litex_client import RemoteClient

from fisrig.targets.rig.bridge import BridgeTimeout, ByteAccess
from fisrig.targets.rig.soc_run import RingDrain, drain_to_outcome, ring_entries

MAILBOX = RING_RAM_BASE + contract.FISRIG_MAILBOX_OFFSET
_MB = {name: at for name, (at, *_rest) in contract.FIELDS["fisrig_mailbox"].items()}
MAIN_RAM_BASE = SoCCore.mem_map["main_ram"]  # the simulated SoC's and the boards' alike
BURST_WORDS = 255  # an Etherbone record's most


class BoardRunError(RuntimeError):
    pass


class BoardLink(ByteAccess, RemoteClient):
    """RemoteClient with every wait bounded and a silence an error: its own read returns zeros
    when the server does not answer in time, which would pass for records."""

    def __init__(self, host, port, timeout=30):
        super().__init__(host=host, port=port, csr_csv=None)
        self.timeout = timeout

    def open(self):
        try:
            super().open()
        except OSError as e:
            raise BoardRunError(f"no litex_server at {self.host}:{self.port}: {e.strerror or e}") from None
        self.socket.settimeout(self.timeout)
        # A write and the read after it in two packets: without this the read waited for
        # the write's delayed ACK (40 ms), as on the simulation's bridge (fisrig.targets.rig.bridge).
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def receive_packet(self, sock, addr_size):
        packet = super().receive_packet(sock, addr_size)
        if packet == 0:
            raise BridgeTimeout(f"litex_server at {self.host}:{self.port} did not answer in {self.timeout} s")
        return packet

    def read(self, addr, length=None, burst="incr"):
        if length is None or length <= BURST_WORDS:
            return super().read(addr, length, burst)
        words = []
        for at in range(0, length, BURST_WORDS):
            words += super().read(addr + 4 * at, min(BURST_WORDS, length - at), burst)
        return words

    def write(self, addr, datas):
        datas = datas if isinstance(datas, list) else [datas]
        for at in range(0, len(datas), BURST_WORDS):
            super().write(addr + 4 * at, datas[at:at + BURST_WORDS])


def parse_url(url):
    """HOST:PORT -> (host, port); BoardRunError naming what is wrong."""
    host, sep, port = (url or "").rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise BoardRunError(f"--url {url!r}: give HOST:PORT of a litex_server connected to the board "
                            "(litex_server's own default port is 1234)")
    return host, int(port)


def run(url, program, on_record, timeout=3600, poll_s=0.005, on_ring=None, capture_out=None):
    """Runs a compiled program on the board behind the litex_server at `url`; on_record(bytes)
    gets each record as it is drained; returns the firmware's outcome (the JSON fisrig-model
    prints). on_ring(entries), before the program goes: the records the board's ring holds
    for it in main RAM (soc_run.ring_entries), which a run can outgrow only by that many
    records more than the host has drained before the rig waits. capture_out: where the
    analyzer's capture windows go (capture.bin), each read as the ring holds it, at the
    capture's CSRs' fixed addresses (rig_capture.csr_addresses)."""
    host, port = parse_url(url)
    link = BoardLink(host, port)
    link.open()
    try:
        if link.read(MAILBOX + _MB["magic"]) != contract.FISRIG_MAILBOX_MAGIC:
            raise BoardRunError(f"{url}: no resident fisrig firmware answers (its mailbox at 0x{MAILBOX:08x} "
                                "is empty): boot the firmware with no program first (docs/boards.md)")
        state = link.read(MAILBOX + _MB["state"])
        if state not in (contract.FISRIG_MAILBOX_IDLE, contract.FISRIG_MAILBOX_DONE):
            raise BoardRunError(f"{url}: the firmware is busy (mailbox state {state}): another host is running "
                                "a plan on it, or one was stopped half-way (reset the board)")
        ring = link.read(MAILBOX + _MB["ring_at"])
        runs = link.read(MAILBOX + _MB["runs"])
        room = link.read(MAILBOX + _MB["program_room"])
        if len(program) > room:
            raise BoardRunError(f"{url}: the program is {len(program):,} bytes and the board's main RAM holds "
                                f"{room:,} after its boot header: a shorter plan, or a board with more RAM")
        windows = None
        if capture_out is not None:
            from fisrig.capture import ring as capture_ring
            from fisrig_hw.soc.rig_capture import csr_addresses
            regs = csr_addresses()
            if not link.read(regs["wire_capture_depth"]):
                raise BoardRunError(f"{url}: the board's bitstream has no analyzer capture (its capture registers "
                                    "read 0): build it again from this fisrig (docs/boards.md), or run without one")
            windows = capture_ring.Drain(link, regs, capture_out)
        entries = ring_entries(len(program), room)
        if on_ring:
            on_ring(entries)
        link.write_bytes(MAIN_RAM_BASE + contract.FISRIG_BOOT_PROGRAM_OFFSET, soc_build.boot_block(program))
        link.write(MAILBOX + _MB["program_bytes"], len(program))
        link.write(MAILBOX + _MB["state"], contract.FISRIG_MAILBOX_GO)
        deadline = time.monotonic() + timeout
        while link.read(MAILBOX + _MB["state"]) == contract.FISRIG_MAILBOX_GO:
            if time.monotonic() > deadline:
                raise BoardRunError(f"{url}: the firmware did not take the program")
            time.sleep(poll_s)

        def outcome_now():
            if link.read(MAILBOX + _MB["state"]) != contract.FISRIG_MAILBOX_DONE or \
                    link.read(MAILBOX + _MB["runs"]) != runs + 1:
                return None
            text = link.read_bytes(MAILBOX + _MB["outcome"], contract.FISRIG_OUTCOME_BYTES)
            line = text.split(b"\0", 1)[0].decode(errors="replace")
            try:
                return json.loads(line)
            except ValueError:
                raise BoardRunError(f"{url}: the firmware's outcome is not the line it writes: {line[:200]!r}") \
                    from None
        drain = RingDrain(link, ring, on_record)
        if drain.entries != entries:
            raise BoardRunError(f"{url}: the firmware placed {drain.entries:,} records in its ring where this host "
                                f"expects {entries:,} (baremetal_if.h): a firmware of another version")
        outcome = drain_to_outcome(drain, outcome_now, deadline, lambda taken: BoardRunError(
            f"{url}: the run took longer than {timeout} s; {taken} records taken"), poll_s,
            also=windows.once if windows else None)
        if windows:
            windows.finish()
        return outcome
    finally:
        link.close()
