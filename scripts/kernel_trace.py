#!/usr/bin/env python3
"""Sums the records scripts/kernel_trace.c wrote (one trace.<pid>.csv a process):

    scripts/kernel_trace.py DIR [--csv PREFIX] [--top N] [--skip RANGE]...

Prints two tables, over every process and GPU of the run:
  - kernels: each kernel (by function name, template instances together):
    launches, GPU time, mean, share of all kernel time;
  - phases: the GPU time of the kernels launched inside each NVTX range (the
    innermost range open on the launching thread when the launch call
    started; kernels of a replayed CUDA graph count where the graph was
    launched), and of those launched outside any range.
--skip leaves out the kernels launched inside a range of that name, at any
depth (hpdl's "roofline rates": the probes mlp_train_dp runs before
training). With --csv, also PREFIX_kernels.csv and PREFIX_phases.csv.
Python 3 standard library only."""
import argparse
import collections
import glob
import os
import re
import sys


def base_name(mangled):
    """The function's name from an Itanium-mangled one (_Z25name... or
    _ZN2ns4nameE...), namespaces joined with ::; other names unchanged."""
    if not mangled.startswith("_Z"):
        return mangled
    parts, rest = [], mangled[3:] if mangled.startswith("_ZN") else mangled[2:]
    while True:
        m = re.match(r"(\d+)", rest)
        if not m:
            break
        n = int(m.group(1))
        parts.append(rest[len(m.group(1)):len(m.group(1)) + n])
        rest = rest[len(m.group(1)) + n:]
        if not mangled.startswith("_ZN"):
            break
    return "::".join(parts) if parts else mangled


def read_trace(path):
    """One process's kernels [(start, end, correlation, name)], launch calls
    {correlation: (thread, start)} and NVTX ranges [(thread, start, end, name)]."""
    kernels, calls, opened, ranges = [], {}, {}, []
    with open(path) as f:
        for line in f:
            kind, _, rest = line.rstrip("\n").partition(",")
            if kind == "kernel":
                device, stream, start, end, corr, name = rest.split(",", 5)
                kernels.append((int(start), int(end), int(corr), name))
            elif kind == "call":
                thread, start, _end, corr = rest.split(",")
                calls[int(corr)] = (int(thread), int(start))
            elif kind == "mark":
                thread, time, edge, ident, name = rest.split(",", 4)
                if edge == "start":
                    opened[ident] = (int(thread), int(time), name)
                elif ident in opened:
                    thread0, start, name0 = opened.pop(ident)
                    ranges.append((thread0, start, int(time), name0))
    return kernels, calls, ranges


def ranges_at(launch, ranges_by_thread):
    """The NVTX ranges open on the launching thread at the launch, outermost
    first (None: the launch was not traced)."""
    if launch is None:
        return None
    thread, t = launch
    return [r[2] for r in sorted(r for r in ranges_by_thread.get(thread, ()) if r[0] <= t < r[1])]


def summarize(paths, skip):
    """Tables {name: [kernels, ns]} by kernel and by innermost range, the
    kernels and ns left out by skip, and how many processes ran kernels."""
    by_kernel = collections.defaultdict(lambda: [0, 0])
    by_phase = collections.defaultdict(lambda: [0, 0])
    left_out, processes = [0, 0], 0
    for path in paths:
        kernels, calls, ranges = read_trace(path)
        processes += bool(kernels)
        ranges_by_thread = collections.defaultdict(list)
        for thread, start, end, name in ranges:
            ranges_by_thread[thread].append((start, end, name))
        for start, end, corr, name in kernels:
            open_ranges = ranges_at(calls.get(corr), ranges_by_thread)
            if open_ranges and skip.intersection(open_ranges):
                sums = [left_out]
            else:
                phase = "(launch not traced)" if open_ranges is None else open_ranges[-1] if open_ranges else "(no range)"
                sums = [by_kernel[base_name(name)], by_phase[phase]]
            for counts in sums:
                counts[0] += 1
                counts[1] += end - start
    return by_kernel, by_phase, left_out, processes


def rows(table):
    total = sum(ns for _, ns in table.values()) or 1
    for key, (count, ns) in sorted(table.items(), key=lambda kv: -kv[1][1]):
        yield key, count, ns / 1e6, ns / 1e3 / count, ns / total


def show(title, table, top):
    print("%-52s %9s %10s %10s %7s" % (title, "kernels", "GPU ms", "mean us", "share"))
    for i, (key, count, ms, mean, share) in enumerate(rows(table)):
        if i < top:
            print("%-52s %9d %10.3f %10.2f %6.1f%%" % (key[:52], count, ms, mean, 100 * share))


def write_csv(path, first, table):
    with open(path, "w") as f:
        f.write("%s,kernels,gpu_ms,mean_us,share\n" % first)
        for key, count, ms, mean, share in rows(table):
            f.write('"%s",%d,%.4f,%.3f,%.4f\n' % (key.replace('"', "'"), count, ms, mean, share))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--csv", metavar="PREFIX")
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--skip", action="append", default=[], metavar="RANGE")
    args = ap.parse_args()
    paths = sorted(glob.glob(os.path.join(args.dir, "trace.*.csv")))
    if not paths:
        sys.exit("kernel_trace.py: no trace.*.csv in %s" % args.dir)
    by_kernel, by_phase, left_out, processes = summarize(paths, set(args.skip))
    if not by_kernel:
        sys.exit("kernel_trace.py: no kernels in %d trace files (was the program run on a GPU?)" % len(paths))
    print("%d processes ran kernels: %d kernels" % (processes, sum(c for c, _ in by_kernel.values())))
    if args.skip:
        print("left out: %d kernels, %.3f GPU ms, launched inside %s" % (left_out[0], left_out[1] / 1e6, ", ".join(args.skip)))
    show("kernel", by_kernel, args.top)
    print()
    show("NVTX range at launch", by_phase, args.top)
    if args.csv:
        write_csv(args.csv + "_kernels.csv", "kernel", by_kernel)
        write_csv(args.csv + "_phases.csv", "phase", by_phase)


if __name__ == "__main__":
    main()
