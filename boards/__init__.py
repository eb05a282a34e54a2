"""fisrig on real boards (docs/boards.md): platform files of our own (platforms/), the rig
SoC on a board (board_soc), one target per board, and the build that elaborates each to
Verilog and reports its resources (build)."""
