#!/usr/bin/env bash
# Kernel by kernel (ncu, caches flushed between kernels): the f16 products
# where AUTO trails cuBLAS and no Hopper tile runs.
B=build/h90
timeout 200 ncu --csv --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,dram__bytes_read.sum,lts__t_bytes.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread \
  $B/exp/probe_narrow 3 > $OUT/ncu.csv 2> $OUT/ncu.err; echo "ncu rc $?"; tail -n 3 $OUT/ncu.err
