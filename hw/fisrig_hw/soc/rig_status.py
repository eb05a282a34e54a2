"""CSRs that let the rig's CPU (and the host, through the bridge) see the SATA core: the
timestamp counter (latched, so that a 64-bit read is never torn), the link state, the
drive's rails (switching them, or arming a cut at a protocol event) and the engine's error
counters."""

from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect.csr import CSR, CSRField, CSRStatus, CSRStorage


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
        # A cut at a protocol event, armed from here as a POWER OFF_AT_EVENT descriptor arms
        # it (engine_if.h): the host can cut the rails mid-command without the firmware.
        self.power_trigger = CSRStorage(fields=[
            CSRField("event", size=3, description="The FIS kind that counts: 1 H2D, 2 D2H, "
                     "3 SDB, 4 Data, 5 DMA Setup (descriptor.py EVENT_*)."),
            CSRField("count", size=16, offset=8, description="Cut after the count-th such FIS "
                     "(0 is 1)."),
        ])
        self.power_delay = CSRStorage(32, description="Ticks from that FIS to the cut (at "
                                      "least 1).")
        self.power_arm = CSR()
        self.power_arm.description = "Write: arm the cut that power_trigger and power_delay " \
            "describe (replacing one armed before). The cut ends every command in flight " \
            "LINK_LOST and leaves a POWER_CUT event record, stamped."
        self.power_armed = CSRStatus(description="1 from arming until the cut.")
        self.comb += [
            core.power_arm_csr.eq(self.power_arm.re),
            core.power_arm_event_csr.eq(self.power_trigger.fields.event),
            core.power_arm_count_csr.eq(self.power_trigger.fields.count),
            core.power_arm_delay_csr.eq(self.power_delay.storage),
            self.power_armed.status.eq(core.power.armed),
        ]
        e = core.engine
        counters = [("rx_crc_errors", e.stat_rx_crc_errors, "Data FISes received with a bad CRC."),
                    ("tx_r_errs", e.stat_tx_r_errs, "Frames the drive answered with R_ERR."),
                    ("timeouts", e.stat_timeouts, "Slots that ended TIMEOUT."),
                    ("ncq_errors", e.stat_ncq_errors, "Set Device Bits FISes with ERR."),
                    ("events_lost", e.stat_events_lost, "Engine events (power cut, link down or "
                     "up) that found the event queue full while records were held."),
                    ("current_lost", e.stat_current_lost, "Current samples dropped: the record "
                     "ring stayed full while the sampler had two records waiting.")]
        for name, signal, what in counters:
            csr = CSRStatus(32, name=name, description=what)
            setattr(self, name, csr)
            self.comb += csr.status.eq(signal)
        self.sync += If(self.ts_latch.re, self.ts.status.eq(core.now))
        self.comb += self.link_ready.status.eq(core.link_ready)
