"""The host bridge is a Wishbone master over the whole rig SoC, so in simulation its TCP port
listens on 127.0.0.1 only (our litex_sim module serial2loopback): a connection to the same
port on any other address of this machine is refused, while 127.0.0.1 reaches the bus.
Only this machine's own addresses are tried; nothing is sent anywhere else. And a bridge
read through that port is one round trip, its words in order."""
import contextlib
import fcntl
import socket
import statistics
import struct
import time

import pytest

from fisrig_hw.soc.rig_soc import RING_RAM_BASE

from fisrig.targets.rig import bridge, soc_run
from fisrig.targets.rig.bios_console import BiosConsole
from test_sim_soc import soc_dir  # noqa: F401  (the SoC built once for both files)

SIOCGIFADDR = 0x8915  # Linux: an interface's IPv4 address


def own_non_loopback_addresses():
    """This machine's IPv4 addresses outside 127/8, from its own interfaces."""
    found = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _, name in socket.if_nameindex():
            try:
                req = struct.pack("256s", name.encode()[:15])
                addr = socket.inet_ntoa(fcntl.ioctl(s.fileno(), SIOCGIFADDR, req)[20:24])
            except OSError:
                continue  # no IPv4 address on this interface
            if not addr.startswith("127."):
                found.append(addr)
    return found


@contextlib.contextmanager
def soc_and_bridge(soc_dir, run_dir):
    """The SoC booted to its BIOS in run_dir, and the host's bridge to it: (console, bridge,
    the bridge's port); both closed after."""
    port = soc_run.free_port()
    soc_run.prepare(soc_dir, str(run_dir), None, b"", "tiny-1gb", "boot_us=100", port)
    console = BiosConsole(soc_dir, sim_dir=str(run_dir))
    b = None
    try:
        b = bridge.connect(port)
        b.open()
        yield console, b, port
    finally:
        if b:
            b.close()
        console.close()


def test_the_bridge_port_refuses_every_address_but_loopback(soc_dir, tmp_path):  # noqa: F811
    others = own_non_loopback_addresses()
    if not others:
        pytest.skip("this machine has no IPv4 address besides loopback to try the bridge's port on")
    with soc_and_bridge(soc_dir, tmp_path) as (console, b, port):
        assert b.read(console.regs["ctrl_scratch"]) == 0x12345678  # loopback reaches the bus
        for addr in others:
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection((addr, port), timeout=5).close()


def test_a_bridge_read_is_whole_and_never_waits_for_a_delayed_ack(soc_dir, tmp_path):  # noqa: F811
    """Bridge.read sends its request in one piece and takes the answer whole, and both ends
    send without Nagle's algorithm: a read waited 40 ms for the other side's delayed ACK
    before (docs/rtl-engine.md, "What the bridge carries"). A read of one word takes under a
    millisecond of wall time here; 20 ms leaves a loaded machine room and still catches the
    40 ms stall. The words come back in order, as written."""
    with soc_and_bridge(soc_dir, tmp_path) as (console, b, _):
        assert b.port._socket.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        words = [(0x9E3779B9 * (i + 1)) & 0xFFFFFFFF for i in range(255)]
        b.write(RING_RAM_BASE, words)
        assert b.read(RING_RAM_BASE, 255) == words
        assert b.read(RING_RAM_BASE + 4) == words[1]
        assert b.read_bytes(RING_RAM_BASE + 8, 6) == b"".join(w.to_bytes(4, "little") for w in words[2:4])[:6]
        took = []
        for _ in range(10):
            t = time.monotonic()
            b.read(console.regs["ctrl_scratch"])
            took.append(time.monotonic() - t)
        assert statistics.median(took) < 0.020, took
