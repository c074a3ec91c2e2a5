#!/usr/bin/env python3
"""Kernel times by step kind from trace.c's CSVs: python3 analyze.py DIR...
A step is the kernels up to and including its update (the SGD kernel or the
fused reduce-and-update kernel), on one device of one process. Kinds:
1gpu (no IPC kernel in the step), 2gpu-fused, 2gpu-separate; rows by the
step's gather grid (its batch). For each kind and batch: steps, median
step span (first start to last end), median of each kernel's duration and
of the gap before it, by position in the step."""
import csv, glob, statistics, sys, collections

SHORT = [("dp_reduce_sgd", "fused"), ("mlp_sgd_kept", "sgd"), ("mlp_gather", "gather"), ("bias_act", "bias_act"),
         ("narrow_mn", "narrow"), ("xent", "xent"), ("shortk", "shortk"), ("splitk_add", "splitk_add"),
         ("gemm_splitk", "splitk"), ("add_slices", "add_slices"), ("ipc_kernel", "ipc"), ("padded_mma", "mma")]

def short(name, grid):
    for key, s in SHORT:
        if key in name:
            if s == "mma":
                s += "-mirror" if "ipc_mirror" in name else "-staged" if "staged_stores" in name else ""
            return "%s%s" % (s, grid)
    return name[:20] + grid

def steps(path):
    rows = sorted(csv.DictReader(open(path)), key=lambda r: (int(r["device"]), int(r["start_ns"])))
    cur, out = [], []
    for r in rows:
        cur.append(r)
        if "mlp_sgd_kept" in r["name"] or "dp_reduce_sgd" in r["name"]:
            out.append(cur)
            cur = []
    return out

def kind(step):
    names = " ".join(r["name"] for r in step)
    gather = [r for r in step if "mlp_gather" in r["name"]]
    batch = gather[0]["grid_x"] if gather else "?"
    k = "2gpu-fused" if "dp_reduce_sgd" in names else "2gpu-separate" if "ipc_kernel" in names else "1gpu"
    return k, batch, tuple(short(r["name"], "(%s,%s,%s)" % (r["grid_x"], r["grid_y"], r["grid_z"])) for r in step)

def main():
    groups = collections.defaultdict(list)
    for d in sys.argv[1:]:
        for path in glob.glob(d + "/kernels.*.csv"):
            for s in steps(path):
                k, batch, names = kind(s)
                if batch in ("512", "3000"):
                    groups[(d, k, batch, names)].append(s)
    for (d, k, batch, names), ss in sorted(groups.items(), key=lambda x: (x[0][2], x[0][1], x[0][0])):
        if len(ss) < 50:
            continue
        span = statistics.median((int(s[-1]["end_ns"]) - int(s[0]["start_ns"])) / 1e3 for s in ss)
        print("\n%s %s batch %s: %d steps, median span %.2f us" % (d, k, batch, len(ss), span))
        for i, n in enumerate(names):
            dur = statistics.median((int(s[i]["end_ns"]) - int(s[i]["start_ns"])) / 1e3 for s in ss)
            gap = statistics.median((int(s[i]["start_ns"]) - int(s[i - 1]["end_ns"])) / 1e3 for s in ss) if i else 0
            print("  %-34s %8.2f us  gap before %6.2f" % (n, dur, gap))

main()
