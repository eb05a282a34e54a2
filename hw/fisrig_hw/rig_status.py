"""CSRs that let the rig's CPU (and the host, through the bridge) see the SATA core: the
timestamp counter (latched, so that a 64-bit read is never torn), the link state, the
drive's rails (and switching them) and the engine's error counters."""

from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect.csr import CSR, CSRStatus


class RigStatus(LiteXModule):
    def __init__(self, core):
        self.ts_latch = CSR()
        self.ts_latch.description = "Write: copy the timestamp counter into ts."
        self.ts = CSRStatus(64, description="The timestamp counter (engine_if.h ticks, 150 MHz) "
                            "at the last write of ts_latch.")
        self.link_ready = CSRStatus(description="1 while LiteSATA's PHY and link are up.")
        self.power_off = CSR()
        self.power_off.description = "Write: the drive's rails off now (a POWER descriptor does " \
            "the same in the command stream, and can cut at a protocol event)."
        self.power_on = CSR()
        self.power_on.description = "Write: the drive's rails on now."
        self.rails = CSRStatus(description="1 while the drive's rails are on.")
        self.comb += [core.power_off_csr.eq(self.power_off.re), core.power_on_csr.eq(self.power_on.re),
                      self.rails.status.eq(core.power.rails)]
        e = core.engine
        counters = [("rx_crc_errors", e.stat_rx_crc_errors, "Data FISes received with a bad CRC."),
                    ("tx_r_errs", e.stat_tx_r_errs, "Frames the drive answered with R_ERR."),
                    ("timeouts", e.stat_timeouts, "Slots that ended TIMEOUT."),
                    ("ncq_errors", e.stat_ncq_errors, "Set Device Bits FISes with ERR."),
                    ("events_lost", e.stat_events_lost, "Engine events (power cut, link down or "
                     "up) that found the event queue full while records were held.")]
        for name, signal, what in counters:
            csr = CSRStatus(32, name=name, description=what)
            setattr(self, name, csr)
            self.comb += csr.status.eq(signal)
        self.sync += If(self.ts_latch.re, self.ts.status.eq(core.now))
        self.comb += self.link_ready.status.eq(core.link_ready)
