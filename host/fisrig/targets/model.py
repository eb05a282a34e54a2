"""The model target: the firmware core's VM, the engine model and the simulated drive in one
native process (fisrig-model), at millions of commands a second."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from fisrig.targets.base import RunOutcome, RunSinks, Target
from fisrig.targets.native_tools import TargetUnavailable, _tool, failed_text


class ModelTarget(Target):
    """The firmware core's VM, the engine model and the simulated drive, in one native process."""

    name = "model"
    captures_data_in = True

    POLL_S = 0.25  # how often records.bin is looked at for new records

    def __init__(self, profile: str, faults: list[str] | None = None, link_gen: int | None = None):
        if link_gen not in (None, 3):
            raise TargetUnavailable(f"target '{self.name}' runs its link at Gen3 only; "
                                    f"--link-gen {link_gen} needs --target rtl")
        super().__init__(profile, faults)

    def run(self, program: Path, records: Path, sinks: RunSinks, quiet: bool = False) -> RunOutcome:
        cmd = [str(_tool("fisrig-model")), "--program", str(program), "--records", str(records),
               "--profile", self.profile]
        for f in self.faults:
            cmd += ["--fault", f]
        cmd.append("--quiet")  # the host prints progress (sinks.progress), from the records
        if sinks.data_in is not None:
            cmd += ["--data-in", str(sinks.data_in)]
        if sinks.read_back:
            cmd.append("--read-back")
        if self.protocol != "sata":
            cmd += ["--protocol", self.protocol]
        if sinks.capture is not None:
            cmd += ["--capture", str(sinks.capture)]
        stdout, stderr, code = self._follow(cmd, records, sinks)
        lines = [l for l in stdout.splitlines() if l.startswith("{")]
        if not lines:
            raise RuntimeError(failed_text("fisrig-model", code, stderr,
                                           [records] + ([sinks.data_in] if sinks.data_in is not None else [])))
        o = json.loads(lines[-1])
        return RunOutcome(o["status"], o["records"], o["commands"], o["errors"], o["sim_ns"],
                          o["wall_s"], o["error"], o["error_offset"])

    def _follow(self, cmd: list[str], records: Path, sinks: RunSinks) -> tuple[str, str, int]:
        return follow(cmd, records, sinks, self.POLL_S)


def follow(cmd: list[str], records: Path, sinks: RunSinks, poll_s: float = 0.25) -> tuple[str, str, int]:
    """Runs a native run (fisrig-model, the NVMe rig's Verilator runner) to its end, feeding
    the sinks' progress and records the records it writes (records.bin, written as it
    goes); its stdout, stderr and exit code."""
    from fisrig.progress import RecordsFollower
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    follower = RecordsFollower(records)
    progress = sinks.progress
    takers = [t for t in (progress, sinks.records) if t]

    def feed():
        raw = follower.new()
        for t in takers:
            t.take(raw)
    try:
        while True:
            try:
                out, err = proc.communicate(timeout=poll_s if takers else None)
                break
            except subprocess.TimeoutExpired:
                feed()
    except BaseException:
        if progress:
            progress.stop()
        # Ctrl-C reached the model too: it stops at its next record and closes its
        # file; only one that does not is killed.
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise
    feed()
    if progress:
        progress.finish()
    return out, err, proc.returncode
