"""The host's side of the rig's bridge: LiteX's UARTBone protocol (litex.tools.remote's
CommUART) over a TCP stream (in simulation our litex_sim module serial2loopback, on
127.0.0.1 only; a serial port on a board), with every read bounded in time, so a dead
simulation or board is an error and never a hang."""
import socket
import time

from litex.tools.remote.comm_uart import CMD_READ_BURST_FIXED, CMD_READ_BURST_INCR, CommUART


class BridgeTimeout(Exception):
    pass


class ByteAccess:
    """Bytes over a bridge that reads and writes 32-bit words (little-endian in memory):
    for Bridge and for fisrig.targets.rig.board_run's BoardLink alike."""

    def write_bytes(self, addr, data):
        data = data.ljust((len(data) + 3) & ~3, b"\0")
        self.write(addr, [int.from_bytes(data[i:i + 4], "little") for i in range(0, len(data), 4)])

    def read_bytes(self, addr, length):
        words = self.read(addr, (length + 3) // 4)
        return b"".join(w.to_bytes(4, "little") for w in words)[:length]


class Bridge(ByteAccess, CommUART):
    def __init__(self, url, timeout=30, **kwargs):
        super().__init__(url, **kwargs)
        self.timeout = timeout
        self.port.timeout = 1
        # CommUART sends a request in pieces (command and length, then the address): with
        # Nagle's algorithm the second piece waited for the first's delayed ACK, and every
        # bridge read took 40 ms, whatever its length (rtl.bridge_records_per_s was 102).
        sock = getattr(self.port, "_socket", None)
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _read(self, length):
        deadline = time.monotonic() + self.timeout
        r = b""
        while len(r) < length:
            if time.monotonic() > deadline:
                raise BridgeTimeout("the bridge answered {} of {} bytes".format(len(r), length))
            r += self.port.read(length - len(r))
        return r

    def read(self, addr, length=None, burst="incr"):
        """CommUART's read, its request in one piece and its answer taken whole (CommUART
        takes it a word a call)."""
        self._flush()
        n = 1 if length is None else length
        cmd = {"incr": CMD_READ_BURST_INCR, "fixed": CMD_READ_BURST_FIXED}[burst]
        self._write(bytes([cmd, n]) + (addr // 4).to_bytes(self.addr_bytes, "big"))
        raw = self._read(4 * n)
        words = [int.from_bytes(raw[i:i + 4], "big") for i in range(0, 4 * n, 4)]
        return words[0] if length is None else words


def connect(port, timeout=30, host="127.0.0.1"):
    """A bridge to the simulation's serial2loopback on this machine (it may take a moment to listen)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return Bridge("socket://{}:{}".format(host, port), timeout=timeout)
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
