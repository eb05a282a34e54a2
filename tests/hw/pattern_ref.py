"""pattern.h in Python, for the benches' device model (checked against the C in test_pattern)."""

KIND_ZEROS, KIND_STAMP, KIND_LFSR = 2, 3, 4
M = 0xFFFFFFFF


def xorshift32(x):
    x ^= (x << 13) & M
    x ^= x >> 17
    x ^= (x << 5) & M
    return x


def seed(lba, word):
    hi = (lba >> 32) & 0xFFFF
    s = (lba & M) ^ ((hi << 16) & M) ^ word ^ 0xA5A5A5A5
    return s or 1


def crc_step(crc, dword):
    crc ^= dword
    for _ in range(32):
        crc = ((crc << 1) ^ 0x04C11DB7) & M if crc & 0x80000000 else (crc << 1) & M
    return crc


def sector(kind, lba, word, pct):
    s = seed(lba, word)
    if kind == KIND_LFSR:
        out = []
        for _ in range(128):
            s = xorshift32(s)
            out.append(s)
        return out
    if kind != KIND_STAMP:
        return [0] * 128
    pct = min(pct, 100)
    random = (124 * pct + 99) // 100
    out = [lba & M, ((lba >> 32) & 0xFFFF) | pct << 16 | 0x5A << 24, word]
    for i in range(124):
        if i < random:
            s = xorshift32(s)
            out.append(s)
        else:
            out.append(0)
    crc = 0x52325032
    for d in out:
        crc = crc_step(crc, d)
    return out + [crc]
