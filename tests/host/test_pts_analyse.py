"""pts.analyse against the rule it states: a command belongs to the round whose LOOP_PASS
record follows it, and a cell's IOPS in a round is its commands over its first submit to its
last status, whatever record cuts its run and wherever the table's chunks break. The
reference here masks every row, as pts.analyse did before it counted runs where they lie."""
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from fisrig.analysis import pts
from fisrig.report import pts_figure
from fisrig.plan import pts_matrix

BASE = "IOPS"
STEP = {"do": "pts_iops", "label": BASE, "block_sizes_kib": [8, 4], "read_pcts": [0], "window": 2}
META = {"plan": {"steps": [{"do": "secure_erase", "label": "purge"}, STEP]}}
CELL8, CELL4 = pts_matrix.cell_label(BASE, 8, 0), pts_matrix.cell_label(BASE, 4, 0)


def records(chunk_rows: int) -> pa.Table:
    """Three rounds of the two cells (4 KiB cut by a link record in round 2), a purge
    before them, and a cell's commands after the last LOOP_PASS (a round cut short)."""
    rng = np.random.default_rng(5)
    rows = [("command", "purge", 0, 0, 10, 0, 0)]
    t = 100
    for rnd in (1, 2, 3):
        first = t
        for cell, n in ((CELL8, 3 + rnd), (CELL4, 5 + rnd)):
            for i in range(n):
                if cell == CELL4 and rnd == 2 and i == 2:
                    rows.append(("link", cell, 0, t, t, 0, 0))
                d = int(rng.integers(5, 50))
                rows.append(("command", cell, 0, t, t + d, 0, 8))
                t += int(rng.integers(1, 20))
        t += 60
        # LOOP_PASS: the tracked cell's commands (lba), its span, the round (lbas), the verdict.
        rows.append(("loop_pass", CELL4, int(rnd == 3), first, t, 5 + rnd, rnd))
        t += 10
    rows += [("command", CELL8, 0, t, t + 7, 0, 8)]
    cols = list(zip(*rows))
    table = pa.table({"kind": pa.array(cols[0]).dictionary_encode(), "marker": pa.array(cols[1]).dictionary_encode(),
                      "status": pa.array(cols[2], pa.uint8()), "t_submit_ns": pa.array(cols[3], pa.int64()),
                      "t_status_ns": pa.array(cols[4], pa.int64()), "lba": pa.array(cols[5], pa.uint64()),
                      "lbas": pa.array(cols[6], pa.uint32())})
    return pa.Table.from_batches(table.to_batches(max_chunksize=chunk_rows))


def by_mask(table: pa.Table) -> list[dict]:
    """Each round's cells' IOPS by masking every row of each round."""
    kind = np.array(table.column("kind").to_pylist())
    marker = np.array(table.column("marker").to_pylist())
    t0, t1 = table.column("t_submit_ns").to_numpy(), table.column("t_status_ns").to_numpy()
    out, prev = [], 0
    for at in np.flatnonzero(kind == "loop_pass"):
        cells = {}
        for cell in (CELL8, CELL4):
            r = np.arange(prev, at)
            r = r[(kind[r] == "command") & (marker[r] == cell)]
            cells[cell] = len(r) / ((t1[r].max() - t0[r].min()) / 1e9)
        out.append(cells)
        prev = at + 1
    return out


def test_each_cell_counts_in_the_round_its_loop_pass_closes():
    for chunk_rows in (4, 7, 1000):  # chunks breaking runs of a cell, and one chunk
        table = records(chunk_rows)
        (res,) = pts.analyse(table, META)
        want = by_mask(table)
        assert [r["round"] for r in res.rounds] == [1, 2, 3]
        assert res.steady_round == 3 and res.window == [2, 3]  # the window ends at the steady round
        for got, exp in zip(res.rounds, want):
            assert got["cells"].keys() == exp.keys()
            for cell in exp:
                assert np.isclose(got["cells"][cell], exp[cell]), (chunk_rows, cell)
        assert np.isclose(res.table["4 KiB"]["0/100"], np.mean([w[CELL4] for w in want[1:]]))


def test_report_reads_only_the_columns_the_table_lacks(tmp_path):
    """pts_figure.report with the report's table (no status column) says what it says from the file."""
    table = records(5)
    pq.write_table(table, tmp_path / "records.parquet")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for d in ("a", "b"):
        (tmp_path / d / "records.parquet").symlink_to(tmp_path / "records.parquet")
    pts_figure.report(tmp_path / "a", META, "caption")
    pts_figure.report(tmp_path / "b", META, "caption", table.drop_columns(["status", "lbas"]))
    a, b = (json.loads((tmp_path / d / pts.JSON).read_text()) for d in ("a", "b"))
    assert a == b and a[0]["steady_state_reached"]
