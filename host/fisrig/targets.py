"""Where a program runs: the fast native model, the RTL simulation, or a board.

A target takes a compiled program and writes the run's records file; it knows the drive's
IDENTIFY data. `board` reaches a board through LiteX's litex_server (fisrig.rig.board_run).
"""
from __future__ import annotations

import contextlib
import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .native_tools import TargetUnavailable, _tool, build_dir, failed_text

REPO = Path(__file__).resolve().parents[2]


@dataclass
class RunOutcome:
    status: str           # the VM's status: done, expect_failed, ...
    records: int
    commands: int
    errors: int
    sim_ns: int
    wall_s: float
    error: str
    error_offset: int
    # What the target says about how the run went that the records cannot: where the rig
    # could not run the plan as it was asked (printed after the run, kept in run.json).
    notes: list[str] = field(default_factory=list)


class ModelTarget:
    """The firmware core's VM, the engine model and the simulated drive, in one native process."""

    name = "model"
    # The data data-in commands return can be kept (fisrig-model --data-in): set data_in to
    # a path before run() and it holds their bytes, in completion order (what `raw` shows).
    captures_data_in = True
    data_in: Path | None = None
    # The program reads written data back into RAM (a power_loss step's verify passes): the
    # model must remember what each write carried (fisrig-model --read-back).
    read_back = False
    # Progress lines (fisrig.progress.Progress), fed the records as the run writes them:
    # set it before run(); None prints nothing. The model's own progress lines are off.
    progress = None
    # Where the records also go as the run writes them (results.ParquetStream: records.parquet
    # made while the model runs); None: nowhere.
    records_sink = None
    # The most records the run makes (its estimate's records_max), set before run(): a board
    # checks it against the records its main RAM holds (BoardTarget.run). 0: not known.
    records_expected = 0
    POLL_S = 0.25  # how often records.bin is looked at for new records

    def __init__(self, profile: str, faults: list[str] | None = None, link_gen: int | None = None):
        if link_gen not in (None, 3):
            raise TargetUnavailable(f"target '{self.name}' runs its link at Gen3 only; "
                                    f"--link-gen {link_gen} needs --target rtl")
        self.profile, self.faults, self.link_gen = profile, faults or [], 3

    def identify(self) -> list[int]:
        """The drive's IDENTIFY words, from the drive with this profile and these faults (so the
        drive checks both first: drive_catalog.DriveRefused with its message when it says no)."""
        from .drive_catalog import ask
        args = ["identify", "--profile", self.profile]
        for f in self.faults:
            args += ["--fault", f]
        out = ask(*args)
        words = [int(w, 16) for w in out.split()]
        if len(words) != 256:
            raise RuntimeError("fisrig-drive identify did not print 256 words")
        return words

    def run(self, program: Path, records: Path, quiet: bool = False) -> RunOutcome:
        cmd = [str(_tool("fisrig-model")), "--program", str(program), "--records", str(records),
               "--profile", self.profile]
        for f in self.faults:
            cmd += ["--fault", f]
        cmd.append("--quiet")  # the host prints progress (self.progress), from the records
        if self.data_in is not None:
            cmd += ["--data-in", str(self.data_in)]
        if self.read_back:
            cmd.append("--read-back")
        stdout, stderr, code = self._follow(cmd, records)
        lines = [l for l in stdout.splitlines() if l.startswith("{")]
        if not lines:
            raise RuntimeError(failed_text("fisrig-model", code, stderr,
                                           [records] + ([self.data_in] if self.data_in is not None else [])))
        o = json.loads(lines[-1])
        return RunOutcome(o["status"], o["records"], o["commands"], o["errors"], o["sim_ns"],
                          o["wall_s"], o["error"], o["error_offset"])

    @contextlib.contextmanager
    def records_file(self, records: Path):
        """records.bin for a target whose records come to the host one by one (rtl, board):
        yields keep(raw), which appends them, flushed (a run stopped half-way keeps every
        record it took), and hands them to self.progress and self.records_sink."""
        from . import program_format as pf
        progress = self.progress
        with open(records, "wb") as out:
            out.write(pf.RECORDS_HEADER.pack(pf.RECORDS_MAGIC, pf.RECORDS_VERSION, pf.RECORD_DTYPE.itemsize, 0))

            def keep(raw: bytes) -> None:
                out.write(raw)
                out.flush()
                if progress:
                    progress.take(raw)
                if self.records_sink:
                    self.records_sink.take(raw)
            try:
                yield keep
            finally:
                if progress:
                    progress.stop()
        if progress:
            progress.finish()

    def _follow(self, cmd: list[str], records: Path) -> tuple[str, str, int]:
        """Runs fisrig-model to its end, feeding self.progress and self.records_sink the
        records it writes (the model writes records.bin as it goes); its stdout, stderr and
        exit code."""
        from .progress import RecordsFollower
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        follow = RecordsFollower(records)
        takers = [t for t in (self.progress, self.records_sink) if t]

        def feed():
            raw = follow.new()
            for t in takers:
                t.take(raw)
        try:
            while True:
                try:
                    out, err = proc.communicate(timeout=self.POLL_S if takers else None)
                    break
                except subprocess.TimeoutExpired:
                    feed()
        except BaseException:
            if self.progress:
                self.progress.stop()
            # Ctrl-C reached the model too: it stops at its next record and closes its
            # file; only one that does not is killed.
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            raise
        feed()
        if self.progress:
            self.progress.finish()
        return out, err, proc.returncode


# The rig firmware builds the rtl target boots: the host's side of either is the same
# (fisrig/baremetal_if.h), so a run does not depend on which one ran but through its timing.
FIRMWARES = ("baremetal", "zephyr")


class RtlTarget(ModelTarget):
    """The rig SoC in Verilator (litex_sim): VexRiscv running the firmware's VM, the engine's
    rings, LiteSATA and our engine, and the simulated drive on the transceiver pins.
    Cycle-accurate and slow (a few milliseconds of drive time per wall second): for short
    plans. IDENTIFY data is the profile's, as the model target gives it. link_gen: the SATA
    speed the rig's link is built for (1, 2 or 3, one SoC build each); the drive negotiates
    down to it. firmware: the bare-metal build (firmware/baremetal) or the Zephyr one
    (firmware/zephyr; needs a Zephyr tree at ZEPHYR_BASE, docs/zephyr.md)."""

    name = "rtl"
    captures_data_in = False  # the rig's RAM is not read back after a command yet
    host_lag_ticks = 0  # soc_run.run's: a host that falls behind the record ring, for tests

    def __init__(self, profile: str, faults: list[str] | None = None, link_gen: int | None = None,
                 firmware: str | None = None):
        super().__init__(profile, faults)
        # Its drive boots in 100 us unless told otherwise, not in its profile's 200 ms (30 M
        # simulated cycles a power-on): a fault knob, so that the run says so (run.json).
        if not any(f.partition("=")[0] == "boot_us" for f in self.faults):
            self.faults = ["boot_us=100"] + self.faults
        if link_gen not in (None, 1, 2, 3):
            raise TargetUnavailable(f"--link-gen {link_gen}: SATA speeds are 1, 2 and 3")
        self.link_gen = link_gen or 3
        self.firmware = firmware or "baremetal"
        if self.firmware not in FIRMWARES:
            raise TargetUnavailable(f"--firmware {firmware}: one of {', '.join(FIRMWARES)}")
        if self.firmware == "zephyr":
            from fisrig_hw.soc import zephyr_build
            if zephyr_build.zephyr_base() is None:
                raise TargetUnavailable("--firmware zephyr needs a Zephyr 4.3 tree: set ZEPHYR_BASE (docs/zephyr.md)")

    def run(self, program: Path, records: Path, quiet: bool = False) -> RunOutcome:
        import tempfile
        import time

        from fisrig_hw.soc import soc_build

        from .rig import soc_run
        soc_dir = Path(soc_build.default_build_dir(self.link_gen, str(build_dir())))
        progress = self.progress
        if progress:
            first = not (soc_dir / "gateware" / "obj_dir" / "Vsim").exists()
            progress.note(f"rtl: building the rig SoC, SATA Gen{self.link_gen} " +
                          ("(first run, about 2 minutes)..." if first else "(again only if its sources changed)..."))
        t_build = time.monotonic()
        soc_build.build_quietly(soc_dir, self.link_gen)
        firmware = self.build_firmware(soc_dir)
        if progress:
            progress.note(f"rtl: the SoC and firmware are ready ({time.monotonic() - t_build:.0f} s); booting it")
        faults = ",".join(self.faults)
        t0 = time.monotonic()
        # The firmware's console beside the records: its link state, its bus profile.
        with self.records_file(records) as keep, open(records.parent / "console.log", "w") as log, \
                tempfile.TemporaryDirectory(prefix="fisrig-rtl-") as tmp:
            try:
                o = soc_run.run(str(soc_dir), tmp, firmware, program.read_bytes(), keep,
                                profile=self.profile, faults=faults,
                                on_console=lambda line: print(line, file=log, flush=True),
                                host_lag_ticks=self.host_lag_ticks)
            except soc_run.SocRunError as e:
                raise RuntimeError(f"rtl target: {e}") from None
        return RunOutcome(o["status"], o["records"], o["commands"], o["errors"], o["sim_ns"],
                          round(time.monotonic() - t0, 3), o["error"], o["error_offset"],
                          rtl_notes(o))

    def build_firmware(self, soc_dir: Path) -> str:
        """The firmware image for the SoC built in soc_dir (built, or rebuilt if stale)."""
        from fisrig_hw.soc import soc_build
        if self.firmware == "baremetal":
            return soc_build.build_firmware(str(soc_dir))
        from fisrig_hw.soc import zephyr_build
        try:
            return zephyr_build.build(str(soc_dir))
        except zephyr_build.ZephyrBuildError as e:
            raise RuntimeError(f"rtl target: the Zephyr firmware: {e}") from None


def rtl_notes(o: dict) -> list[str]:
    """What the firmware's outcome says went otherwise than asked: a late start (the host took
    longer to boot it than FISRIG_RUN_START_TICK allows) or waits for the host to drain the
    record ring (baremetal_if.h)."""
    from fisrig_hw.contract import FISRIG_RUN_START_TICK, FISRIG_TICK_HZ
    notes = []
    if o.get("start_late_ticks"):
        notes.append(f"the program started {o['start_late_ticks'] * 1e6 / FISRIG_TICK_HZ:.1f} us after "
                     f"its start tick ({FISRIG_RUN_START_TICK * 1e3 / FISRIG_TICK_HZ:g} ms): the host was slow to "
                     "boot the firmware, so this run's times are not tick for tick those of another run")
    if o.get("ring_waits"):
        n = o["ring_waits"]
        notes.append(f"the rig's CPU waited {o['ring_wait_ticks'] * 1e6 / FISRIG_TICK_HZ:.1f} us in {n} "
                     f"wait{'s' * (n != 1)} for the host to drain the record ring: the commands after "
                     "each wait were issued at the host's pace, not the plan's")
    return notes


class BoardTarget(ModelTarget):
    """A rig board (or anything standing in for one) behind LiteX's litex_server at `url`
    (HOST:PORT), its firmware booted resident (fisrig.rig.board_run). IDENTIFY data is still
    the profile's, as on the other targets: the plan is compiled for the profile's capacity,
    not yet for the drive on the board (so give --profile the drive's size). No faults (the
    drive is real) and the link speed is the one the board's bitstream was built for."""

    name = "board"
    captures_data_in = False

    def __init__(self, profile: str, faults: list[str] | None = None, link_gen: int | None = None,
                 url: str | None = None):
        if faults:
            raise TargetUnavailable("--fault: the board's drive is a real one; fault knobs are the simulated drive's")
        if link_gen is not None:
            raise TargetUnavailable("--link-gen: a board's link speed is its bitstream's "
                                    "(python -m fisrig_boards.build BOARD --gen N)")
        if not url:
            raise TargetUnavailable("--target board needs --url HOST:PORT: a litex_server connected to the board")
        from .rig.board_run import BoardRunError, parse_url
        try:
            parse_url(url)
        except BoardRunError as e:
            raise TargetUnavailable(str(e)) from None
        super().__init__(profile)
        self.url, self.link_gen = url, None  # the bitstream's, which the host is not told

    def run(self, program: Path, records: Path, quiet: bool = False) -> RunOutcome:
        import time

        from .rig import board_run
        t0 = time.monotonic()
        ring = []

        def on_ring(entries: int) -> None:
            """The pre-run check of the records against the board's main RAM (issue 17 §3)."""
            ring.append(entries)
            expected = self.records_expected
            if expected and expected > entries and not quiet:
                print(f"fisrig: the run makes up to {expected:,} records and the board's main RAM holds "
                      f"{entries:,} of them after the program: if the bridge drains slower than the drive "
                      f"runs, the rig waits once it is {entries:,} behind (the run will say so)", flush=True)
        try:
            with self.records_file(records) as keep:
                o = board_run.run(self.url, program.read_bytes(), keep, on_ring=on_ring)
        except (board_run.BoardRunError, board_run.BridgeTimeout) as e:
            raise RuntimeError(f"board target: {e}") from None
        notes = rtl_notes(o)
        if o.get("ring_waits") and ring:
            notes.append(f"the board's main RAM held {ring[0]:,} records of this run after its program: "
                         "a run that outgrows them waits for the bridge")
        return RunOutcome(o["status"], o["records"], o["commands"], o["errors"], o["sim_ns"],
                          round(time.monotonic() - t0, 3), o["error"], o["error_offset"], notes)


TARGETS = {
    "model": ModelTarget,
    "rtl": RtlTarget,
    "board": BoardTarget,
}


def make_target(name: str, profile: str, faults: list[str] | None = None, link_gen: int | None = None,
                url: str | None = None, firmware: str | None = None):
    if name not in TARGETS:
        raise TargetUnavailable(f"unknown target '{name}': one of {', '.join(TARGETS)}")
    if url is not None and name != "board":
        raise TargetUnavailable(f"--url is the board target's (a litex_server); target '{name}' takes none")
    if firmware is not None and name != "rtl":
        raise TargetUnavailable(f"--firmware is the rtl target's (the firmware it boots); target '{name}' "
                                + ("runs whichever the board booted" if name == "board" else "runs none"))
    extra = {"url": url} if url is not None else {"firmware": firmware} if firmware is not None else {}
    return TARGETS[name](profile, faults, link_gen, **extra)


def identify_fields(words: list[int]) -> dict:
    """The IDENTIFY facts a run's metadata keeps (ATA strings are byte-swapped words)."""
    def text(first: int, n: int) -> str:
        return "".join(chr(words[i] >> 8) + chr(words[i] & 0xFF) for i in range(first, first + n)).strip()
    return {
        "model": text(27, 20), "serial": text(10, 10), "firmware": text(23, 4),
        "lba48_sectors": words[100] | words[101] << 16 | words[102] << 32 | words[103] << 48,
        "ncq_depth": (words[75] & 0x1F) + 1, "trim": bool(words[169] & 1),
        "words": [f"{w:04x}" for w in words],
    }
