"""fisrig's test and bench harnesses of the gateware, apart from the product (fisrig_hw):
the rig core's Verilator runner (rig_sim), the engine's cocotb top (bench_top), and stock
LiteSATA as an independent host (litesata_host, litesata_host_sim)."""
