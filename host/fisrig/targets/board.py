"""The board target: a rig board (or anything standing in for one) behind LiteX's
litex_server, its firmware booted resident."""
from __future__ import annotations

from pathlib import Path

from fisrig.targets.base import RunOutcome, RunSinks, Target
from fisrig.targets.native_tools import TargetUnavailable
from fisrig.targets.rtl import rtl_notes


class BoardTarget(Target):
    """A rig board (or anything standing in for one) behind LiteX's litex_server at `url`
    (HOST:PORT), its firmware booted resident (fisrig.targets.rig.board_run). IDENTIFY data is still
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
        from fisrig.targets.rig.board_run import BoardRunError, parse_url
        try:
            parse_url(url)
        except BoardRunError as e:
            raise TargetUnavailable(str(e)) from None
        super().__init__(profile)
        self.url, self.link_gen = url, None  # the bitstream's, which the host is not told

    def run(self, program: Path, records: Path, sinks: RunSinks, quiet: bool = False) -> RunOutcome:
        import time

        from fisrig.targets.rig import board_run
        t0 = time.monotonic()
        ring = []

        def on_ring(entries: int) -> None:
            """The pre-run check of the records against the board's main RAM (issue 17 §3)."""
            ring.append(entries)
            expected = sinks.records_expected
            if expected and expected > entries and not quiet:
                print(f"fisrig: the run makes up to {expected:,} records and the board's main RAM holds "
                      f"{entries:,} of them after the program: if the bridge drains slower than the drive "
                      f"runs, the rig waits once it is {entries:,} behind (the run will say so)", flush=True)
        try:
            with self.records_file(records, sinks) as keep:
                o = board_run.run(self.url, program.read_bytes(), keep, on_ring=on_ring, capture_out=sinks.capture)
        except (board_run.BoardRunError, board_run.BridgeTimeout) as e:
            raise RuntimeError(f"board target: {e}") from None
        notes = rtl_notes(o)
        if o.get("ring_waits") and ring:
            notes.append(f"the board's main RAM held {ring[0]:,} records of this run after its program: "
                         "a run that outgrows them waits for the bridge")
        return RunOutcome(o["status"], o["records"], o["commands"], o["errors"], o["sim_ns"],
                          round(time.monotonic() - t0, 3), o["error"], o["error_offset"], notes)
