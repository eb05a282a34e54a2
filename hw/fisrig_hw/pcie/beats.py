"""How a TLP's bytes ride LitePCIe's PHY stream (phy_layout: `dat` beats of 64 bits with a byte
enable a byte, `first` and `last`), as LitePCIe's packetizer (endianness "big") hands them to
its 7-series PHY and takes them from it: dword k of the TLP is bits 32k+31..32k of the
stream, the TLP's first byte of each dword in bits 31..24 (the dword as a header field's
value: fmt and type in DW0's bits 31..24). A payload's bytes ride the same way, so a value a
register holds little-endian is byte-swapped in its dword. The simulated device (sim/) and
the tests read and write TLPs through these two functions alone."""
from __future__ import annotations

DW_PER_BEAT = 2  # 64-bit beats: the 7-series x4 Gen2 hard block's AXI stream at 250 MHz


def beats_to_tlp(beats: list[tuple[int, int]]) -> bytes:
    """(dat, be) beats of one TLP, first to last -> its bytes on the wire (header, payload)."""
    out = bytearray()
    for dat, be in beats:
        for i in range(DW_PER_BEAT):
            lanes = (be >> (4 * i)) & 0xF
            if lanes == 0:
                continue
            if lanes != 0xF:
                raise ValueError(f"a beat's dword {i} has byte enables {lanes:#x}: a TLP moves whole dwords")
            out += ((dat >> (32 * i)) & 0xFFFFFFFF).to_bytes(4, "big")
    return bytes(out)


def tlp_to_beats(tlp: bytes) -> list[tuple[int, int]]:
    """A TLP's bytes (whole dwords) -> (dat, be) beats, the last one's unused dword disabled."""
    if len(tlp) % 4:
        raise ValueError(f"a TLP of {len(tlp)} bytes: not whole dwords")
    dwords = [int.from_bytes(tlp[k:k + 4], "big") for k in range(0, len(tlp), 4)]
    beats = []
    for k in range(0, len(dwords), DW_PER_BEAT):
        part = dwords[k:k + DW_PER_BEAT]
        beats.append((sum(d << (32 * i) for i, d in enumerate(part)), (1 << (4 * len(part))) - 1))
    return beats
