"""Drives the rig SoC in litex_sim through the LiteX BIOS console (serial2console on the
simulation's stdin/stdout): memory and CSR reads and writes the way a person at the console
would, `boot` of the firmware, and the lines the firmware prints. Every wait is bounded."""
import csv
import os
import re
import select
import subprocess
import time

PROMPT = re.compile(rb"litex\x1b\[0m> |litex> ")
LINE_END = re.compile(rb"\r?\n")
DUMP_LINE = re.compile(r"0x([0-9a-f]{8})  ((?:[0-9a-f]{2} )+)")  # lines end "\n\r"


class ConsoleTimeout(Exception):
    pass


def csr_map(build_dir):
    """csr.csv: CSR register name -> address, and memory region name -> base."""
    regs, mems = {}, {}
    with open(os.path.join(build_dir, "csr.csv")) as f:
        for row in csv.reader(f):
            if row and row[0] == "csr_register":
                regs[row[1]] = int(row[2], 0)
            elif row and row[0] == "memory_region":
                mems[row[1]] = int(row[2], 0)
    return regs, mems


class BiosConsole:
    """sim_dir: where the simulation runs (its sim_config.js and *.init files); the build's
    gateware directory unless a run has its own."""
    def __init__(self, build_dir, sim_dir=None, boot_timeout=600):
        gateware = os.path.join(build_dir, "gateware")
        self.regs, self.mems = csr_map(build_dir)
        self.proc = subprocess.Popen([os.path.join(gateware, "obj_dir", "Vsim")],
                                     cwd=sim_dir or gateware,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
        self.log = b""         # not yet consumed by a command
        self.transcript = b""  # everything the simulation printed
        self.expect_prompt(boot_timeout)

    def _until(self, pattern, timeout, what):
        """Output up to the next match of pattern, and the match."""
        deadline = time.monotonic() + timeout
        start = 0
        while True:
            m = pattern.search(self.log, start)
            if m:
                out, self.log = self.log[:m.start()], self.log[m.end():]
                return out.decode(errors="replace"), m
            start = max(0, len(self.log) - 64)
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                raise ConsoleTimeout("no {}; output so far:\n{}".format(
                    what, self.log[-3000:].decode(errors="replace")))
            ready, _, _ = select.select([self.proc.stdout], [], [], min(left, 1.0))
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                self.log += chunk
                self.transcript += chunk

    def expect_prompt(self, timeout):
        """Output up to the next prompt (the BIOS is ready for a command)."""
        return self._until(PROMPT, timeout, "BIOS prompt")[0]

    def read_line(self, timeout):
        """The next line the simulation prints (without its line end)."""
        return self._until(LINE_END, timeout, "line")[0].strip("\r")

    def poll_line(self):
        """The next whole line if one has come, else None; never waits."""
        if not LINE_END.search(self.log):
            ready, _, _ = select.select([self.proc.stdout], [], [], 0)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                self.log += chunk
                self.transcript += chunk
        m = LINE_END.search(self.log)
        if not m:
            if self.proc.poll() is not None:
                raise ConsoleTimeout("the simulation ended:\n" + self.log[-3000:].decode(errors="replace"))
            return None
        out, self.log = self.log[:m.start()], self.log[m.end():]
        return out.decode(errors="replace").strip("\r")

    def send(self, line):
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def command(self, line, timeout=120):
        self.send(line)
        return self.expect_prompt(timeout)

    def write32(self, addr, value):
        self.command("mem_write 0x{:08x} 0x{:08x}".format(addr, value & 0xFFFFFFFF))

    def write_bytes(self, addr, data):
        for i in range(0, len(data), 4):
            self.write32(addr + i, int.from_bytes(data[i:i + 4].ljust(4, b"\0"), "little"))

    def read_bytes(self, addr, length):
        out = self.command("mem_read 0x{:08x} {}".format(addr, length))
        data = bytearray()
        for m in DUMP_LINE.finditer(out):
            data += bytes.fromhex(m.group(2).replace(" ", ""))
        if len(data) < length:
            raise ConsoleTimeout("short memory dump at 0x{:08x}:\n{}".format(addr, out))
        return bytes(data[:length])

    def csr_write(self, name, value):
        self.write32(self.regs[name], value)

    def csr_read(self, name):
        return int.from_bytes(self.read_bytes(self.regs[name], 4), "little")

    def close(self):
        """Ends the simulation (litex_sim runs until killed); returns all it printed."""
        self.proc.terminate()
        try:
            rest, _ = self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rest, _ = self.proc.communicate()
        return (self.transcript + rest).decode(errors="replace")
