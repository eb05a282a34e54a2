"""The Register H2D FISes the engine sends, dword by dword (Serial ATA 3.x 10.5.5): a
descriptor's command as it is, with the slot as the NCQ tag in the count field of an
FPDMA command, or READ LOG EXT of log 10h, which a host sends after an NCQ error."""

from migen import *

from fisrig_hw import contract as _c
from fisrig_hw.engine import fis
from fisrig_hw.descriptor import Protocol, desc_field

H2D_DWORDS = 5
READ_LOG_EXT, LOG_NCQ_ERROR = _c.FISRIG_ATA_READ_LOG_EXT, _c.FISRIG_LOG_NCQ_ERROR


def h2d_dword(out, idx, recovery, desc, tag):
    """Statements putting dword `idx` of the H2D on `out`: READ LOG EXT 10h when `recovery`,
    else the descriptor's command (`tag`: its slot). Statements, not always-on logic, so a
    simulator evaluates them only in the state that sends."""
    count = desc_field(desc, "count")
    features = desc_field(desc, "features")
    lba = desc_field(desc, "lba")
    protocol = desc_field(desc, "protocol")
    fpdma = (protocol == Protocol.FPDMA_IN) | (protocol == Protocol.FPDMA_OUT)
    count_tagged = Signal(16)
    return If(recovery,
        Case(idx, {
            0: out.eq(fis.REG_H2D | 1 << 15 | READ_LOG_EXT << 16),
            1: out.eq(LOG_NCQ_ERROR | 0x40 << 24),
            3: out.eq(1),
        })
    ).Else(
        count_tagged.eq(Mux(fpdma, Cat(count[:3], tag, count[8:]), count)),
        Case(idx, {
            0: out.eq(Cat(C(fis.REG_H2D, 8), C(0, 7), C(1, 1), desc_field(desc, "command"), features[:8])),
            1: out.eq(Cat(lba[:24], desc_field(desc, "device"))),
            2: out.eq(Cat(lba[24:48], features[8:])),
            3: out.eq(Cat(count_tagged, desc_field(desc, "icc"), desc_field(desc, "control"))),
            4: out.eq(desc_field(desc, "aux")),
        })
    )
