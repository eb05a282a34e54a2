"""The rig's NVMe queue engine in gateware (issue 63): engine_if.h's descriptor and completion
rings on one side, the root port (fisrig_hw/pcie) on the other. engine.py composes it; each
other file is one concern (the memory map, the engine's own requests, the completer of the
controller's reads, the controller's writes, the slots, the records)."""
