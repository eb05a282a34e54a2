"""The SATA CRC and scrambler steps as byte-table lookups: the same linear maps, a fraction of
the cost in Verilator.

A CRC step over a 32-bit word (next = L(crc ^ data)) and a scrambler step (32 output bits
from a 16-bit context) are linear over GF(2). LiteSATA writes each output bit as an XOR of
input bits; Verilator evaluates every one of them on every clock, whether a frame is moving
or not, and the rig core's five of them (the link's CRC and scramblers, the pattern
generator's CRC) were over a third of the host instructions a simulated cycle took. Split
the input into bytes and the map is the XOR of one 256-entry constant table per byte:
Verilator makes each a table load. For synthesis a constant table is combinational logic
like the XOR trees it replaces; the function is the same, bit for bit
(tests/hw/test_lfsr_tables.py checks it against LiteSATA's modules).

`tabulate_link` swaps the step of LiteSATA's CRCEngine and Scrambler instances inside a
link layer module for the table form, leaving their registers, enables and resets (and the
package) untouched."""

from functools import reduce
from operator import xor

from migen import Array, Constant, Signal
from migen.fhdl.structure import _Slice

from litesata.core.link import CRCEngine, Scrambler

CRC_POLYNOMIAL = 0x04C11DB7


def crc_step_map(x):
    """The SATA CRC's next value from (previous CRC ^ data word), MSB first."""
    for _ in range(32):
        x = ((x << 1) ^ CRC_POLYNOMIAL if x & 0x80000000 else x << 1) & 0xFFFFFFFF
    return x


def scrambler_step_map(context):
    """The scrambler's 32 output bits from its 16-bit context: the sequence of
    G(x) = x^16 + x^15 + x^13 + x^4 + 1 continued 32 bits past the context's 16."""
    s = [(context >> i) & 1 for i in range(16)]
    for k in range(32):
        s.append(s[k + 15] ^ s[k + 13] ^ s[k + 4] ^ s[k])
    return sum(bit << n for n, bit in enumerate(s[16:]))


def scrambler_words(n, context=0xF0F6):
    """The scrambler's first n output words from `context` (the seed SATA restarts it at, at
    each SOF: C2D2768Dh, 1F26B368h, A508436Ch, ... as SATA 3.x's example has them)."""
    out = []
    for _ in range(n):
        s = [(context >> i) & 1 for i in range(16)]
        for k in range(32):
            s.append(s[k + 15] ^ s[k + 13] ^ s[k + 4] ^ s[k])
        out.append(sum(bit << i for i, bit in enumerate(s[16:48])))
        context = sum(bit << i for i, bit in enumerate(s[32:48]))
    return out


def linear_lookup(out, x, width, linear_map, chunk=8):
    """out = linear_map(x) for a GF(2)-linear map of a `width`-bit signal, as the XOR of one
    constant table per `chunk` bits of x."""
    statements, parts = [], []
    for k in range(0, width, chunk):
        n = min(chunk, width - k)
        # The index as a signal of its own: Verilator tabulates logic by the width of the
        # signals it reads (a slice of a wider one became a tree of branches).
        index = Signal(n)
        table = Array(Constant(linear_map(v << k), len(out)) for v in range(1 << n))
        statements += [index.eq(x[k:k + n])]
        parts.append(table[index])
    return statements + [out.eq(reduce(xor, parts))]


def _tabulate_crc(engine):
    new = Signal(32)
    engine._fragment.comb = [new.eq(engine.last ^ engine.data),
                             linear_lookup(engine.next, new, 32, crc_step_map)]


def _tabulate_scrambler(scrambler):
    # Scrambler keeps its context and next value local: find them through its one register.
    (update,) = scrambler._fragment.sync["sys"]
    if not isinstance(update.r, _Slice) or len(update.l) != 16:
        raise TypeError("lfsr_tables: LiteSATA's Scrambler is not the one this was written for")
    context, next_value = update.l, update.r.value
    scrambler._fragment.comb = [linear_lookup(next_value, context, 16, scrambler_step_map),
                                scrambler.value.eq(next_value)]


def tabulate_link(module):
    """Every CRCEngine and Scrambler below `module` (not yet finalized) steps by tables.
    Returns how many were changed."""
    changed = 0
    for _, sub in module._submodules:
        if isinstance(sub, CRCEngine):
            _tabulate_crc(sub)
            changed += 1
        elif isinstance(sub, Scrambler):
            _tabulate_scrambler(sub)
            changed += 1
        else:
            changed += tabulate_link(sub)
    return changed
