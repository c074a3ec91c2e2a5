#!/usr/bin/env python3
"""The two ranks' fused 2-GPU steps side by side (trace.c's CSVs, one
clock): python3 ranks.py DIR BATCH. For each step, each rank's times from
rank 0's step start (its gather kernel): the mirrored dW0 GEMM's start and
end and the fused kernel's start and end; medians over the steps."""
import csv, glob, statistics, sys
sys.path.insert(0, __file__.rsplit("/", 1)[0])

def fused_steps(path, batch):
    rows = sorted(csv.DictReader(open(path)), key=lambda r: int(r["start_ns"]))
    out, cur = [], []
    for r in rows:
        cur.append(r)
        if "mlp_sgd_kept" in r["name"] or "dp_reduce_sgd" in r["name"]:
            if "dp_reduce_sgd" in r["name"] and cur[0]["grid_x"] == batch and "mlp_gather" in cur[0]["name"]:
                out.append(cur)
            cur = []
    return out

def marks(step):
    t = lambda r, k: int(r[k]) / 1e3
    gemm = [r for r in step if "ipc_mirror" in r["name"]][0]
    return [t(step[0], "start_ns"), t(gemm, "start_ns"), t(gemm, "end_ns"), t(step[-1], "start_ns"), t(step[-1], "end_ns")]

d, batch = sys.argv[1], sys.argv[2]
ranks = [fused_steps(p, batch) for p in sorted(glob.glob(d + "/kernels.*.csv"))]
n = min(len(r) for r in ranks)
print("%s batch %s: %d fused steps a rank" % (d, batch, n))
names = ["step start", "dW0 GEMM start", "dW0 GEMM end", "fused start", "fused end"]
rows = [[marks(r[i]) for r in ranks] for i in range(n)]
for k, name in enumerate(names):
    vals = ["%8.2f" % statistics.median(row[rank][k] - row[0][0] for row in rows) for rank in range(len(ranks))]
    print("  %-16s " % name + "  ".join(vals))
period = statistics.median(rows[i + 1][0][0] - rows[i][0][0] for i in range(n - 1))
print("  step period (rank 0) %.2f us" % period)
