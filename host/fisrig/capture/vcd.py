"""A capture as a VCD file (`fisrig capture export RUN --vcd`) for GTKWave and Surfer: the
link's state, and in each direction the FIS type on the wire and its command's tag, as
signals on a 1 ns timescale; the trigger as a pulse. Written with pyvcd; beside it a GTKWave
save file that opens the first window at its trigger with the signals shown."""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from fisrig.capture import show
from fisrig.capture.format import ticks_to_ns, window_ticks
from fisrig.capture.perfetto import DWORDS_PER_S
from fisrig.records import run_state

# link_state's values: what the wire carries.
LINK_STATES = {"idle": 0, "host_sends": 1, "device_sends": 2, "down": 3}
DIR_STATE = {"to_device": LINK_STATES["host_sends"], "to_host": LINK_STATES["device_sends"]}
NO_TAG = 0xFF


# GTKWave's save-file zoom z shows about 5.4 * 2**-z ns across its default wave pane (1,150
# pixels): measured on GTKWave 3.3 at -7 and -10.
GTKW_NS_AT_ZOOM_0 = 5.4
GTKW_SPAN_NS = 1000  # what the save file shows from a little before the trigger: a few FISes
SIGNALS = [("trigger", 1, "@28"), ("link_state", 2, "@24"), ("to_device_fis", 8, "@22"),
           ("to_device_tag", 8, "@24"), ("to_host_fis", 8, "@22"), ("to_host_tag", 8, "@24")]


def gtkw_path(out: Path) -> Path:
    return Path(out).with_suffix(".gtkw")


def write_gtkw(out: Path, vcd_name: str, first_ns: int, trigger_ns: int) -> Path:
    """A GTKWave save file for the VCD at `vcd_name` beside `out`: every signal in its
    radix (FIS types in hex, tags and the link state in decimal), the marker on the trigger
    and the view from a little before it (`gtkwave RUN/capture.gtkw`)."""
    import math
    start = max(first_ns, trigger_ns - GTKW_SPAN_NS // 8)
    zoom = -math.log2(GTKW_SPAN_NS / GTKW_NS_AT_ZOOM_0)
    lines = [f'[dumpfile] "{vcd_name}"', f"[timestart] {start}", "[size] 1400 330",
             f"*{zoom:.6f} {trigger_ns} {trigger_ns}", "[sst_width] 1", "[signals_width] 190",
             "[sst_expanded] 0"]
    for name, width, radix in SIGNALS:
        lines += [radix, f"fisrig.{name}" + (f"[{width - 1}:0]" if width > 2 else "")]
    path = gtkw_path(out)
    path.write_text("\n".join(lines) + "\n")
    return path


def write(run_dir: Path, out: Path) -> Path:
    """The VCD into `out`, and its GTKWave save file beside it (gtkw_path)."""
    from vcd import VCDWriter
    run_dir, out = Path(run_dir), Path(out)
    d = show.read(run_dir).sort_values("t_ns", kind="stable")
    meta = run_state.read_meta(run_dir)
    ns_per_dword = 1e9 / DWORDS_PER_S.get(meta.get("link_gen") or 3, DWORDS_PER_S[3])
    # Every change, as (time, signal, value), then written in time order: a FIS raises its
    # direction's signals at its first dword and drops them after its last.
    changes: list[tuple[int, int, str, int]] = []
    order = 0
    for row in d.to_dict("records"):
        t = int(row["t_ns"])
        if row["kind"] in ("fis", "primitive") and row["direction"] in DIR_STATE:
            end = t + max(1, int(np.ceil(row["count"] * ns_per_dword)))
            side = row["direction"]
            code = int(row["dwords"][0] & 0xFF) if row["kind"] == "fis" else 0
            tag = show.num(row["tag"])
            changes += [(t, order, f"{side}_fis", code), (t, order, f"{side}_tag", NO_TAG if tag is None else tag),
                        (t, order, "link_state", DIR_STATE[side]),
                        (end, order + 1, f"{side}_fis", 0), (end, order + 1, f"{side}_tag", NO_TAG),
                        (end, order + 1, "link_state", LINK_STATES["idle"])]
        elif row["kind"] == "trigger":
            changes += [(t, order, "trigger", 1), (t + 1, order + 1, "trigger", 0)]
        elif row["kind"] == "event" and row["name"] in ("link_down", "power_cut", "comreset"):
            changes.append((t, order, "link_state", LINK_STATES["down"]))
        elif row["kind"] == "event" and row["name"] == "link_up":
            changes.append((t, order, "link_state", LINK_STATES["idle"]))
        order += 2
    changes.sort(key=lambda c: (c[0], c[1]))
    tmp = out.with_name(out.name + ".tmp")
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(meta.get("started") or 0))  # the run's, not now
    with tmp.open("w") as f, VCDWriter(f, timescale="1 ns", date=started,
                                       comment=f"fisrig capture of {run_dir.name}: link_state "
                                               + ", ".join(f"{v} {k}" for k, v in LINK_STATES.items())) as w:
        sig = {"link_state": w.register_var("fisrig", "link_state", "integer", size=2, init=0),
               "trigger": w.register_var("fisrig", "trigger", "wire", size=1, init=0)}
        for side in DIR_STATE:
            sig[f"{side}_fis"] = w.register_var("fisrig", f"{side}_fis", "wire", size=8, init=0)
            sig[f"{side}_tag"] = w.register_var("fisrig", f"{side}_tag", "wire", size=8, init=NO_TAG)
        for t, _, name, value in changes:
            w.change(sig[name], t, value)
    tmp.replace(out)
    triggers = d[d["kind"] == "trigger"]
    if len(triggers):
        t = triggers.iloc[0]
        first = int(ticks_to_ns(np.array([window_ticks(t["dwords"])[0]]))[0])
        write_gtkw(out, str(out.resolve()), first, int(t["t_ns"]))
    return out
