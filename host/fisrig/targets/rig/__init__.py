"""The host's side of the rig at run time: the bridge to its bus, the BIOS console, and
running a program on the rig SoC in simulation (writing its RAM, draining its record ring)."""
