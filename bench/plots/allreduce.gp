# Allreduce charts from allreduce_all.csv (bench/allreduce): bus bandwidth and
# time per call against message size, one line per algorithm.
# gnuplot -e "dir='bench/results/<gpu>'" bench/plots/allreduce.gp
if (!exists("dir")) dir = "."
csv = dir . "/allreduce_all.csv"
variants = "hpdl_mpi hpdl_ring hpdl_nccl nccl_direct mpi_host hpdl_ipc_oneshot hpdl_ipc_twoshot hpdl_auto"
rows(v) = sprintf("< grep '^%s,' '%s'", v, csv)

set datafile separator ","
set terminal pngcairo size 900,600 noenhanced
set key top left
set grid
set logscale x 2
set logscale y 10
set format x "%.0b%B"
set xlabel "message size (bytes, f32 sum in place)"

set output dir . "/allreduce_busbw.png"
set title "Allreduce bus bandwidth (busbw = algbw * 2(p-1)/p)"
set ylabel "busbw (GB/s)"
plot for [v in variants] rows(v) using 2:8 with linespoints title v

set output dir . "/allreduce_time.png"
set title "Allreduce time per call"
set ylabel "time (us)"
plot for [v in variants] rows(v) using 2:6 with linespoints title v
