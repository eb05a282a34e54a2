"""The rtl target: the rig SoC in Verilator (litex_sim) with the simulated drive on its
transceiver pins, the firmware (bare-metal or Zephyr) running the program."""
from __future__ import annotations

from pathlib import Path

from fisrig.targets.base import RunOutcome, RunSinks, Target
from fisrig.targets.native_tools import TargetUnavailable, build_dir

# The rig firmware builds the rtl target boots: the host's side of either is the same
# (fisrig/baremetal_if.h), so a run does not depend on which one ran but through its timing.
FIRMWARES = ("baremetal", "zephyr")


class RtlTarget(Target):
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

    def run(self, program: Path, records: Path, sinks: RunSinks, quiet: bool = False) -> RunOutcome:
        if self.protocol == "nvme":
            return self.run_nvme(program, records, sinks)
        import tempfile
        import time

        from fisrig_hw.soc import soc_build

        from fisrig.targets.rig import soc_run
        soc_dir = Path(soc_build.default_build_dir(self.link_gen, str(build_dir())))
        progress = sinks.progress
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
        with self.records_file(records, sinks) as keep, open(records.parent / "console.log", "w") as log, \
                tempfile.TemporaryDirectory(prefix="fisrig-rtl-") as tmp:
            try:
                o = soc_run.run(str(soc_dir), tmp, firmware, program.read_bytes(), keep,
                                profile=self.profile, faults=faults,
                                on_console=lambda line: print(line, file=log, flush=True),
                                host_lag_ticks=self.host_lag_ticks, capture_out=sinks.capture)
            except soc_run.SocRunError as e:
                raise RuntimeError(f"rtl target: {e}") from None
        return RunOutcome(o["status"], o["records"], o["commands"], o["errors"], o["sim_ns"],
                          round(time.monotonic() - t0, 3), o["error"], o["error_offset"],
                          rtl_notes(o))

    def run_nvme(self, program: Path, records: Path, sinks: RunSinks) -> RunOutcome:
        """An NVMe plan: the NVMe rig core (the root port and the NVMe queue engine's gateware,
        fisrig_hw/nvme) in Verilator against the simulated controller on a Gen2 x4 link, the
        firmware core's VM running the program natively beside it (sim/rtl/nvme_rig_runner.cpp:
        the rig SoC with its CPU is to come, docs/nvme-rig.md)."""
        import json
        import time

        from fisrig_bench import nvme_sim

        from fisrig.targets.model import follow
        from fisrig.targets.native_tools import failed_text
        if sinks.progress:
            sinks.progress.note("rtl: building the NVMe rig core (again only if its sources changed)...")
        try:
            exe = nvme_sim.build(program=True)
        except nvme_sim.NvmeSimError as e:
            raise RuntimeError(f"rtl target: {e}") from None
        cmd = [exe, "--program", str(program), "--records", str(records), "--profile", self.profile, "--quiet"]
        for f in self.faults:
            cmd += ["--fault", f]
        t0 = time.monotonic()
        stdout, stderr, code = follow(cmd, records, sinks)
        lines = [l for l in stdout.splitlines() if l.startswith("{")]
        if not lines:
            raise RuntimeError(failed_text("the NVMe rig (rtl)", code, stderr, [records]))
        o = json.loads(lines[-1])
        return RunOutcome(o["status"], o["records"], o["commands"], o["errors"], o["sim_ns"],
                          round(time.monotonic() - t0, 3), o["error"], o["error_offset"],
                          ["the NVMe rig: the engine's gateware on the link's TLPs, the VM natively beside it "
                           "(the CPU's own time between descriptors is not simulated); PCIe Gen2 x4"])

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
