/*
 * The engine's counter at the firmware's first instruction (the BIOS's jump), for
 * zephyr.boot_ms_sim: latched and read here, before Zephyr's own reset code, and kept in
 * fisrig_first_tick (runner.c, not cleared with the BSS). first_tick.ld links this first in
 * the image. Nothing is set up yet: temporaries only.
 */
#include <zephyr/devicetree.h>

#define ENGINE DT_INST(0, fisrig_engine)

	.section .reset.0_fisrig_first_tick, "ax"
	.globl fisrig_first_tick_latch
fisrig_first_tick_latch:
	li t0, DT_REG_ADDR_BY_NAME(ENGINE, rig_ts_latch)
	li t1, 1
	sw t1, 0(t0)
	li t0, DT_REG_ADDR_BY_NAME(ENGINE, rig_ts)
	lw t1, 0(t0)          /* the high word first: LiteX's CSR ordering */
	lw t2, 4(t0)
	la t0, fisrig_first_tick
	sw t2, 0(t0)
	sw t1, 4(t0)
	j __start
