"""Frame Information Structure types and field positions (Serial ATA 3.x, chapter 10.5).

Fields are (dword, low bit, width) so that gateware slices a received FIS held as a list of
dword Signals, and the Python device models of the benches pack and unpack the same way.
"""

from fisrig_hw import contract as _c

# The types and status bits are the firmware core's fisrig/ata.h (scripts/gen_contract.py).
REG_H2D, REG_D2H = _c.FISRIG_FIS_REG_H2D, _c.FISRIG_FIS_REG_D2H
DMA_ACTIVATE, DMA_SETUP = _c.FISRIG_FIS_DMA_ACTIVATE, _c.FISRIG_FIS_DMA_SETUP
DATA, BIST = _c.FISRIG_FIS_DATA, _c.FISRIG_FIS_BIST
PIO_SETUP, SET_DEVICE_BITS = _c.FISRIG_FIS_PIO_SETUP, _c.FISRIG_FIS_SET_DEVICE_BITS

# Header length in dwords of each device-to-host FIS (Data: its first dword only).
D2H_LENGTHS = {REG_D2H: 5, DMA_ACTIVATE: 1, DMA_SETUP: 7, PIO_SETUP: 5, SET_DEVICE_BITS: 2,
               DATA: 1}
MAX_HEADER_DWORDS = 7
MAX_DATA_DWORDS = 2048  # 8 KiB payload

STATUS_BSY, STATUS_DRQ, STATUS_ERR = _c.FISRIG_ATA_STATUS_BSY, _c.FISRIG_ATA_STATUS_DRQ, _c.FISRIG_ATA_STATUS_ERR

# (dword, low bit, width)
TYPE = (0, 0, 8)
DIR_D = (0, 13, 1)        # PIO/DMA Setup: 1 = device to host
INTERRUPT = (0, 14, 1)
AUTO_ACTIVATE = (0, 15, 1)
STATUS = (0, 16, 8)       # Register D2H, PIO Setup
ERROR = (0, 24, 8)
SDB_STATUS_LO = (0, 16, 3)
SDB_STATUS_HI = (0, 20, 3)
LBA_LO = (1, 0, 24)
DEVICE = (1, 24, 8)
LBA_HI = (2, 0, 24)
COUNT = (3, 0, 16)
PIO_E_STATUS = (3, 24, 8)
PIO_TRANSFER_COUNT = (4, 0, 16)
DMA_SETUP_TAG = (1, 0, 5)
DMA_SETUP_OFFSET = (4, 0, 32)
DMA_SETUP_COUNT = (5, 0, 32)
SDB_ACTIVE = (1, 0, 32)


def field(dwords, f):
    """The field f of a FIS held as a list of dword Signals (or ints)."""
    d, lo, width = f
    v = dwords[d]
    if isinstance(v, int):
        return (v >> lo) & ((1 << width) - 1)
    return v[lo:lo + width]


def sdb_status(dwords):
    """An SDB's status register: its two 3-bit halves (bits 3 and 7 are not sent)."""
    lo, hi = field(dwords, SDB_STATUS_LO), field(dwords, SDB_STATUS_HI)
    if isinstance(lo, int):
        return lo | hi << 4
    from migen import Cat, C
    return Cat(lo, C(0, 1), hi, C(0, 1))


def h2d_dwords(command, features, lba, count, device, icc=0, control=0, aux=0, c=1):
    """A Register H2D FIS as five ints (the benches' reference for what the engine sends)."""
    return [
        REG_H2D | c << 15 | command << 16 | (features & 0xFF) << 24,
        (lba & 0xFFFFFF) | device << 24,
        (lba >> 24) & 0xFFFFFF | ((features >> 8) & 0xFF) << 24,
        count & 0xFFFF | icc << 16 | control << 24,
        aux & 0xFFFF,
    ]
