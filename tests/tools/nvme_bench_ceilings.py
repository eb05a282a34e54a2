#!/usr/bin/env python3
"""make bench's NVMe figures against the link's ceilings docs/nvme.md computes: each at or
under its ceiling (the link cannot be beaten) and within 5% of it (on a drive faster than
the link, a host that keeps its queues full reaches it); and the whole-drive fill of
consumer-tlc-nvme-1tb against the review its profile is fitted to (TechPowerUp's Samsung 980
Pro 1 TB: 4 GB/s until 113 GB written, then about 1.5 GB/s), each within 10%; and
enterprise-tlc-nvme-1920gb within the ranges Micron's 9200 datasheet gives its family, but
for random reads, which the model's dies (a page read at a time, no independent plane
reads) hold to 75% of its low end (docs/nvme.md). Usage:
nvme_bench_ceilings.py path/to/fisrig-nvme-bench"""
import json
import subprocess
import sys

GEN3_X4, GEN4_X4 = 8 * 4 * 128 / 130 / 8 * 1e3, 16 * 4 * 128 / 130 / 8 * 1e3  # MB/s each way
CEILINGS = {
    "nvme.randread_4k_iops_qd32x4": GEN3_X4 * 1e6 / 4576,  # bytes up the link a 4 KiB read
    "nvme.seq_read_mbps_gen3x4": 131072 / 143482 * GEN3_X4,  # data of the bytes a 128 KiB read
    "nvme.seq_read_mbps_gen4x4": 131072 / 143482 * GEN4_X4,
}

REVIEW = {"nvme.slc_cache_gb": 113, "nvme.fill_slc_mbps": 4000, "nvme.fill_native_mbps": 1500}
DATASHEET = {  # (low, high)
    "nvme.enterprise_seq_write_mbps": (1900, 2300),
    "nvme.enterprise_qd1_read_us": (92, 150),
    "nvme.enterprise_randread_4k_iops": (0.75 * 700e3, 770e3),
}

out = subprocess.run([sys.argv[1]], capture_output=True, text=True, check=True).stdout
bad, seen = 0, set()
for line in out.splitlines():
    fig = json.loads(line)
    name, value = fig["name"], fig["value"]
    if name in DATASHEET:
        low, high = DATASHEET[name]
        ok = low <= value <= high
        print(f"{'ok' if ok else 'WRONG'}: {name} {value:,.1f} in the datasheet's {low:,.0f} to {high:,.0f}")
    elif name in REVIEW:
        ok = abs(value - REVIEW[name]) <= 0.1 * REVIEW[name]
        print(f"{'ok' if ok else 'WRONG'}: {name} {value:,.1f} against the review's {REVIEW[name]:,}")
    else:
        ceiling = CEILINGS[name]
        ok = 0.95 * ceiling <= value <= ceiling
        print(f"{'ok' if ok else 'WRONG'}: {name} {value:,.1f} of a ceiling of {ceiling:,.1f}")
    seen.add(name)
    bad += not ok
sys.exit(1 if bad or seen != set(CEILINGS) | set(REVIEW) | set(DATASHEET) else 0)
