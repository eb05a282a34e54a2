"""What the engine checks of a descriptor as it takes it, apart from its protocol states: the
power controller's operations it knows (a POWER STAGE or SAMPLE it refuses otherwise), and
RAM data that would run past the data window the CPU gave it (engine_if.h,
fisrig_desc_ram_bytes)."""

from migen import *

from fisrig_hw.descriptor import (DATA_RAM, PIN_P3, POWER_SAMPLE, POWER_STAGE, Protocol, desc_field)


def stage_ok(desc):
    """A POWER STAGE descriptor the engine takes (engine_if.h): a pin that exists, count 0
    or 1; any other is refused. (Its protocol is POWER where this is asked.)"""
    return ((desc_field(desc, "command") == POWER_STAGE) & (desc_field(desc, "features") <= PIN_P3) &
            (desc_field(desc, "count") <= 1))

def sample_ok(desc):
    """A POWER SAMPLE descriptor the engine takes: count 0 (stop) or 1 (start)."""
    return (desc_field(desc, "command") == POWER_SAMPLE) & (desc_field(desc, "count") <= 1)


def outside_window(desc, data_bytes):
    """A signal set while `desc`'s data in RAM (data_source RAM, from data_word) would run past
    `data_bytes` (0: no window given, nothing refused), and the logic that sets it. Its bytes:
    DMA 512 x COUNT, FPDMA 512 x FEATURES (0 is 65536), PIO a DRQ block a COUNT (at least
    one), as engine_if.h's fisrig_desc_ram_bytes."""
    protocol = desc_field(desc, "protocol")
    count, features = desc_field(desc, "count"), desc_field(desc, "features")
    sectors, outside = Signal(17, name="in_sectors"), Signal(name="outside_window")
    logic = [
        Case(protocol, {
            Protocol.DMA_IN: sectors.eq(Mux(count == 0, 1 << 16, count)),
            Protocol.DMA_OUT: sectors.eq(Mux(count == 0, 1 << 16, count)),
            Protocol.FPDMA_IN: sectors.eq(Mux(features == 0, 1 << 16, features)),
            Protocol.FPDMA_OUT: sectors.eq(Mux(features == 0, 1 << 16, features)),
            Protocol.PIO_IN: sectors.eq(Mux(count == 0, 1, count)),
            Protocol.PIO_OUT: sectors.eq(Mux(count == 0, 1, count)),
            "default": sectors.eq(0),
        }),
        outside.eq((desc_field(desc, "data_source") == DATA_RAM) & (data_bytes != 0) &
                   (desc_field(desc, "data_word") + Cat(C(0, 9), sectors) > data_bytes)),
    ]
    return outside, logic


def capture_ok(desc):
    """A CAPTURE descriptor the engine takes (capture.h): STOP, or ARM with a trigger it knows
    (the wire's, the power cut, a record's result) and payload dwords it can keep; any other
    is refused."""
    from fisrig_hw import contract as _c
    trigger = desc_field(desc, "features")
    payload = desc_field(desc, "lba")[16:32]
    return ((desc_field(desc, "command") == _c.FISRIG_CAPTURE_STOP) |
            ((desc_field(desc, "command") == _c.FISRIG_CAPTURE_ARM) & (trigger <= _c.FISRIG_TRIGGER_ERROR) &
             (payload <= _c.FISRIG_CAPTURE_MAX_PAYLOAD_DWORDS)))
