"""The host's side of the rig's bridge: LiteX's UARTBone protocol (litex.tools.remote's
CommUART) over a TCP stream (in simulation our litex_sim module serial2loopback, on
127.0.0.1 only; a serial port on a board), with every read bounded in time, so a dead
simulation or board is an error and never a hang."""
import time

from litex.tools.remote.comm_uart import CommUART


class BridgeTimeout(Exception):
    pass


class Bridge(CommUART):
    def __init__(self, url, timeout=30, **kwargs):
        super().__init__(url, **kwargs)
        self.timeout = timeout
        self.port.timeout = 1

    def _read(self, length):
        deadline = time.monotonic() + self.timeout
        r = b""
        while len(r) < length:
            if time.monotonic() > deadline:
                raise BridgeTimeout("the bridge answered {} of {} bytes".format(len(r), length))
            r += self.port.read(length - len(r))
        return r

    def write_bytes(self, addr, data):
        data = data.ljust((len(data) + 3) & ~3, b"\0")
        self.write(addr, [int.from_bytes(data[i:i + 4], "little") for i in range(0, len(data), 4)])

    def read_bytes(self, addr, length):
        words = self.read(addr, (length + 3) // 4)
        return b"".join(w.to_bytes(4, "little") for w in words)[:length]


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
