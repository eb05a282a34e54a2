"""LitePCIe's PHY interface with nothing behind it but its streams: what the root port drives in
simulation, where the simulated NVMe controller (sim/) or a test stands at the link. Its
beats are beats.py's; the link's timing is the far side's to keep."""
from migen import Signal

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from litepcie.common import phy_layout


class SimPCIePHY(LiteXModule):
    """sink: the TLPs the rig sends; source: those it receives. `id` is the root port's own
    requester ID (bus 0, device 0, function 0 by default); bar0_mask 0, since a root port
    decodes no BAR of its own: a device's request keeps its whole address."""

    def __init__(self, data_width: int = 64, requester_id: int = 0x0000,
                 max_request_size: int = 256, max_payload_size: int = 256):
        if data_width != 64:
            raise ValueError("the simulated PHY has 64-bit beats (beats.py), as the 7-series x4 Gen2 block")
        self.data_width = data_width
        self.sink = stream.Endpoint(phy_layout(data_width))
        self.source = stream.Endpoint(phy_layout(data_width))
        self.id = Signal(16, reset=requester_id, reset_less=True)
        self.bar0_mask = 0
        self.max_request_size = Signal(16, reset=max_request_size, reset_less=True)
        self.max_payload_size = Signal(16, reset=max_payload_size, reset_less=True)
