"""The rig's PCIe root port (NVMe, part 2: docs/nvme-rig.md), on LitePCIe 2024.12's TLP layer.

LitePCIe 2024.12, the pinned release, is an endpoint core: its packetizer, depacketizer and
crossbar are role-agnostic, but it has no root-port mode, no configuration requests to send
and no simulation PHY. LitePCIe's development tree added a root port in January 2026 (its
core/rootport.py: the endpoint with no BAR address mask, and a packetizer that sends
configuration requests); the same two ideas are built here, small, on 2024.12's classes:
root_port.py (the layer's pieces wired for the root port's role, config_requester.py beside
them) and sim_phy.py (the PHY's stream interface, for simulation).
"""
