"""fisrig's gateware: the raw command engine on LiteSATA, its rings, the power controller,
the simulated transceiver and the SoC (LiteX/Migen, pinned litex/litesata 2024.12)."""
