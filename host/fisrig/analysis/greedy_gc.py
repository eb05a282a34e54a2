"""The analytic write amplification of greedy garbage collection under uniform random
writes, the curve a sweep of write amplification against over-provisioning is held to
(docs/sweeps.md, "Write amplification against over-provisioning").

With spare factor rho (spare over user capacity, as `capacity.op_pct` / 100) and many
pages a block, the block greedy GC picks holds a valid fraction u with 1 - u = x, where
x solves 1 - x = exp(-(1 + rho) x); the write amplification is 1 / x. In closed form,
A = (1 + rho) / (1 + rho + W0(-(1 + rho) exp(-(1 + rho)))) (L. Xiang and B. M. Kurkoski,
"An improved analytic expression for write amplification in NAND flash", ICNC 2012,
arXiv:1110.4245: 2.36 at rho = 0.3, where their simulation gives 2.35). Agarwal and
Marrow's earlier (1 + rho) / (2 rho) is 2.17 there. Uniform writes only: a skewed
workload (JESD219's) moves less on a greedy drive that separates hot from cold data, and
as much or more on one that does not.
"""
from __future__ import annotations

import math


def write_amplification(op_pct: float) -> float:
    """Greedy GC's write amplification at `op_pct` percent spare, uniform random writes."""
    if op_pct <= 0:
        raise ValueError(f"op_pct = {op_pct}: a drive without spare has no steady state")
    alpha = 1 + op_pct / 100
    # 1 - x = exp(-alpha x) has the root x = 0 and one in (0, 1): Newton from x = 1 falls
    # on the second, monotonically (the function is convex).
    x = 1.0
    for _ in range(100):
        f = 1 - x - math.exp(-alpha * x)
        step = f / (-1 + alpha * math.exp(-alpha * x))
        x -= step
        if abs(step) < 1e-14:
            break
    return 1 / x


def agarwal(op_pct: float) -> float:
    """Agarwal and Marrow's (1 + rho) / (2 rho): the cruder bound, for comparison."""
    rho = op_pct / 100
    return (1 + rho) / (2 * rho)
