# Allreduce charts from allreduce_all.csv (bench/allreduce): bus bandwidth and
# time per call against message size, one line per algorithm. Under each, a
# panel of the same against NCCL's (column vs_nccl = busbw / NCCL's busbw), so
# lines that lie on NCCL's (hpdl_nccl, hpdl_auto) stay readable; the markers of
# each variant sit a little left or right of the true size so none hides another.
# csv: allreduce_all
# gnuplot -e "dir='bench/results/<gpu>'" bench/plots/allreduce.gp
if (!exists("dir")) dir = "."
if (!exists("tagger")) tagger = "scripts/plots.sh --tag"
csv = dir . "/allreduce_all.csv"
run = system(tagger . " " . csv)
variants = "hpdl_mpi hpdl_ring hpdl_nccl nccl_direct mpi_host hpdl_ipc_oneshot hpdl_ipc_twoshot hpdl_auto"
colors = "#9400d3 #009e73 #56b4e9 #000000 #e69f00 #0072b2 #d55e00 #cc79a7"
points = "1 2 7 6 5 8 9 4"        # NCCL's own: a hollow circle, larger (sizes below)
sizes = "0.8 0.8 0.7 1.5 0.8 0.8 0.8 1.1"
nv = words(variants)
rows(v) = sprintf("< grep '^%s,' '%s'", v, csv)
shift(i) = 2 ** ((i - (nv + 1) / 2.0) * 0.08)   # marker offset: under a third of a size step each way

set datafile separator ","
set terminal pngcairo size 1000,760 noenhanced
set grid
set logscale x 2
set format x "%.0b%B"
set key outside right top

do for [chart in "busbw time"] {
    is_bw = chart eq "busbw"
    set output dir . "/allreduce_" . chart . ".png"
    set multiplot title (is_bw ? "Allreduce bus bandwidth (busbw = algbw * 2(p-1)/p)" : "Allreduce time per call") . " - " . run
    set lmargin 12
    set rmargin 24
    set size 1, 0.57
    set origin 0, 0.38
    set logscale y 10
    set format y "%g"
    unset xlabel
    set ylabel is_bw ? "busbw (GB/s)" : "time (us)"
    set key outside right top
    plot for [i=1:nv] rows(word(variants, i)) using ($2 * shift(i)):(is_bw ? $8 : $6) with linespoints \
         lc rgb word(colors, i) pt (word(points, i) + 0) ps (word(sizes, i) + 0) title word(variants, i)
    set size 1, 0.38
    set origin 0, 0
    set ylabel (is_bw ? "busbw / NCCL's" : "NCCL's time / time")
    set xlabel "message size (bytes, f32 sum in place)"
    set yrange [0.003:30]
    unset key
    plot for [i=1:nv] rows(word(variants, i)) using ($2 * shift(i)):10 with linespoints \
         lc rgb word(colors, i) pt (word(points, i) + 0) ps (word(sizes, i) + 0) notitle, \
         1 with lines lc rgb "#000000" dt 2 notitle
    unset yrange
    unset multiplot
}
