"""Per-kernel durations (ncu, graph nodes profiled one by one) of the MLP step graphs that
probe_step replays: the kernels of each replay in order, median over the replays, for the
cuBLAS-backed step and the own-kernel one.  python3 ncu_steps.py logs/ncu_f16_2048_32.csv"""
import csv, io, statistics, sys

SETUP = ("scaler_init", "convert_kernel", "begin_kernel", "feed_kernel", "wg_probe")


def steps(path):
    lines = [l for l in open(path).read().splitlines() if l.startswith('"')]
    rows = [(r["Kernel Name"], float(r["Metric Value"].replace(",", "")) / 1000)
            for r in csv.DictReader(io.StringIO("\n".join(lines)))]
    runs, cur = [], []
    for name, us in rows:
        if any(s in name for s in SETUP):
            continue
        if "mlp_gather_kernel" in name and cur:
            runs.append(cur)
            cur = []
        cur.append((name, us))
    runs.append(cur)
    return runs


for path in sys.argv[1:]:
    runs = steps(path)
    half = len(runs) // 2  # the cuBLAS-backed variant first, then own; each: an eager step, then replays
    for label, group in (("cublas", runs[1:half]), ("own", runs[half + 1:])):
        n = len(group[0])
        med = [statistics.median(g[i][1] for g in group) for i in range(n)]
        print(f"{path} {label}: {len(group)} replays, sum of kernels {sum(med):.2f} us")
        for i in range(n):
            print(f"   {med[i]:6.2f}  {group[0][i][0][:100]}")
