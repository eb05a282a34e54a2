"""The rig's PCIe root port: LitePCIe 2024.12's TLP layer wired for the root complex's side of
the link, with configuration requests beside it (config_requester.py).

- The depacketizer decodes what the device sends: its memory requests (the SSD reading SQEs,
  PRP lists and write data from the rig's memory, writing read data, CQEs and MSI-X
  messages into it) go to the crossbar's slave side, whose ports (get_slave_port) serve
  them; its completions go to the crossbar's master side, but for those carrying the config
  requester's tag, which go to it.
- The packetizer sends the rig's memory requests (the CPU's and the NVMe engine's reads and
  writes of the device's BAR: registers, doorbells; get_master_port) and the completions of
  the device's reads; the config requester's TLPs are arbitrated with its output, a TLP at a
  time.
- No BAR of the root port's own: the PHY's bar0_mask is 0, so a device's request keeps its
  whole address (the idea of LitePCIe 2026's core/rootport.py, `address_mask=0`).

A LitePCIe frontend built for an endpoint (LitePCIeWishboneSlave, LitePCIeWishboneMaster)
takes this as its `endpoint`: it has the `phy` and `crossbar` they use.

What LitePCIe 2024.12's layer leaves out or gets wrong, and what the rig does about it
(tests/hw/test_pcie_root_port.py holds the first three):
- a device's request with a 64-bit address (MRd64, MWr64) is discarded by its
  depacketizer, as is any TLP it does not decode (a message): the rig places every buffer
  it hands the device below 4 GB, where PCIe has the device use 32-bit addresses
  (rig_memory.py refuses a base above), and counts what was discarded (`discarded`);
- its 64-bit depacketizer drops the last dword of a 3-dword-header TLP whose payload ends
  on a full beat (3, 5, ... dwords): odd_payload_pad.py, in front of it, appends an empty
  beat to such a TLP;
- its packetizer's completions carry a byte count of their own length, give a 2-dword
  completion in one beat 1 dword and pad a 3-dword one with a fourth: rig_memory.py builds
  its completions itself (add_tx_source), one per read, and the rig sets the device's
  Max_Read_Request_Size no larger than its Max_Payload_Size;
- its packetizer pads a memory write of an odd number of dwords past one with an extra
  dword: the rig's own writes to the device are registers and doorbells, 1 or 2 dwords.
"""
from migen import If, Signal

from litex.gen import LiteXModule
from litex.soc.interconnect import packet

from litepcie.core.crossbar import LitePCIeCrossbar
from litepcie.tlp.depacketizer import LitePCIeTLPDepacketizer
from litepcie.tlp.packetizer import LitePCIeTLPPacketizer

from fisrig_hw.pcie.config_requester import CFG_TAG, ConfigRequester
from fisrig_hw.pcie.odd_payload_pad import OddPayloadPad


class RootPort(LiteXModule):
    def __init__(self, phy, max_pending_requests: int = 4, cfg_timeout_cycles: int = 1 << 16):
        if max_pending_requests > CFG_TAG:
            raise ValueError(f"max_pending_requests {max_pending_requests}: the crossbar's tags would reach the "
                             f"config requester's ({CFG_TAG})")
        self.phy = phy
        w = phy.data_width
        self.depacketizer = dep = LitePCIeTLPDepacketizer(w, "big", address_mask=phy.bar0_mask,
                                                          capabilities=["REQUEST", "COMPLETION"])
        self.packetizer = pkt = LitePCIeTLPPacketizer(w, "big", address_width=64,
                                                      capabilities=["REQUEST", "COMPLETION"])
        self.crossbar = xbar = LitePCIeCrossbar(w, 64, max_pending_requests, cmp_bufs_buffered=True)
        self.config = cfg = ConfigRequester(phy.id, w, cfg_timeout_cycles)
        self.discarded = Signal(16)  # TLPs from the device the depacketizer dropped undecoded

        # Transmit: the packetizer's TLPs, the config requester's and those of each source
        # added (add_tx_source), a whole TLP at a time.
        self._tx_sources = [pkt.source, cfg.source]

        # Receive (through the pad the depacketizer needs: odd_payload_pad.py).
        self.rx_pad = pad = OddPayloadPad(w)
        self.comb += [
            phy.source.connect(pad.sink),
            pad.source.connect(dep.sink),
            # The device's requests, and the completions the rig's ports answer them with.
            dep.req_source.connect(xbar.phy_slave.sink),
            xbar.phy_slave.source.connect(pkt.cmp_sink),
            # The rig's requests.
            xbar.phy_master.source.connect(pkt.req_sink),
            cfg.cpl_status.eq(dep.tlp_cmp.status),
        ]
        d = dep.dispatch_sink
        self.sync += If(d.valid & d.ready & d.first & (dep.dispatcher.sel == 0),  # its DISCARD source
                        self.discarded.eq(self.discarded + 1))
        # Completions: the config requester's by its tag (decided at a completion's first
        # beat, kept to its last), the rest the crossbar's.
        cmp = dep.cmp_source
        to_cfg = Signal()
        to_cfg_held = Signal()
        self.comb += [
            to_cfg.eq((cmp.first & (cmp.tag == CFG_TAG)) | (~cmp.first & to_cfg_held)),
        ]
        self.sync += If(cmp.valid & cmp.ready & cmp.first, to_cfg_held.eq(cmp.tag == CFG_TAG))
        self.comb += If(to_cfg,
            cmp.connect(cfg.sink),
        ).Else(
            cmp.connect(xbar.phy_master.sink),
        )

    def add_tx_source(self, source) -> None:
        """A stream of whole TLPs in beats.py's form (phy_layout) for the link, beside the
        packetizer's: what builds its TLPs itself (rig_memory.py's completions)."""
        self._tx_sources.append(source)

    def do_finalize(self):
        self.tx_arbiter = packet.Arbiter(self._tx_sources, self.phy.sink)

    def get_slave_port(self, address_decoder):
        """A port the device's requests whose address `address_decoder` takes come to."""
        return self.crossbar.get_slave_port(address_decoder)

    def get_master_port(self, write_only: bool = False, read_only: bool = False):
        """A port for the rig's own requests to the device."""
        return self.crossbar.get_master_port(write_only=write_only, read_only=read_only)
